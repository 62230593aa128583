"""Every committed piece is accounted for (docs/reliability.md), end to end through HDF5.

A container written and closed by h5py is damaged the ways a disk or a careless copy
damages it; then h5py reads it as a user would.  Each case is compared with what was
written (a numpy model), never with tessera's own output:
- a fragment file deleted or truncated: the dataset's open or read fails with an HDF5
  error whose message names the file — never the fill value in place of the data;
- a damaged publish journal: the open of the dataset fails, naming the journal;
- another dataset's fragment copied into the dataset's directory: not read (no commit
  recorded it), the data reads back as written, and `tessera.verify` notes the file;
- `tessera.verify` (the Python call) reports the damaged file in every damage case.
The same for a file written in parallel (h5py with driver="mpio" under `mpirun -n 2`, a
subprocess as in test_mpi_kill.py): every rank's fragment files, committed by the epochs
of H5Fflush/H5Fclose or published by a rank's H5Dclose, are named by the catalog.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

import tessera


def _frag_files(container: Path, dataset_dir: Path | None = None) -> list[Path]:
    root = dataset_dir if dataset_dir else container / "arrays"
    return sorted(p for p in root.rglob("*.tfr") if not p.name.startswith("."))


@pytest.fixture
def written(tessera_env, tmp_path):
    """Two datasets of fragment files (too large to be inline records), closed."""
    path = tmp_path / "orig.h5"
    rng = np.random.default_rng(19)
    a = rng.random((256, 256))
    b = rng.random((256, 256))
    with h5py.File(path, "w") as f:
        f.create_dataset("a", data=a, chunks=(64, 64))
        f.create_dataset("b", data=b, chunks=(64, 64))
    return path, a, b


def _array_dir(path: Path, name: str) -> Path:
    """The directory of dataset `name`'s fragments.  Fragment ids start with their
    timestamp and the fixture wrote a before b: the oldest fragment is a's."""
    files = sorted(_frag_files(path), key=lambda p: p.name)
    assert len({p.parent for p in files}) == 2, files
    return files[0].parent if name == "a" else files[-1].parent


def _copy(path: Path, dst: Path) -> Path:
    shutil.copytree(path, dst)
    return dst


def _hdf5_error_text(excinfo) -> str:
    return str(excinfo.value)


@pytest.mark.parametrize("damage", ["deleted", "truncated"])
def test_a_lost_fragment_file_is_an_hdf5_error_naming_it(written, tmp_path, damage):
    orig, a, b = written
    c = _copy(orig, tmp_path / f"{damage}.h5")
    frag = _frag_files(c, _array_dir(c, "a"))[0]
    if damage == "deleted":
        frag.unlink()
    else:
        with open(frag, "r+b") as fh:
            fh.truncate(frag.stat().st_size - 100)
    with h5py.File(c, "r") as f:
        # h5py raises the HDF5 error of the dataset's open as KeyError, of a read as OSError.
        with pytest.raises((OSError, KeyError)) as e:
            f["a"][...]
        msg = _hdf5_error_text(e)
        assert frag.name in msg, msg
        # The other dataset is untouched and reads back exactly.
        np.testing.assert_array_equal(f["b"][...], b)
    r = tessera.verify(c)
    assert not r.ok
    assert any(frag.name in p for p in r.problems), r.problems


def test_a_damaged_publish_journal_is_an_hdf5_error_naming_it(written, tmp_path):
    orig, a, b = written
    c = _copy(orig, tmp_path / "journal.h5")
    d = _array_dir(c, "a")
    journal = d / "publish.journal"
    journal.write_bytes(b"TSRAJRNL" + bytes(range(1, 60)))  # not a journal, not empty
    with h5py.File(c, "r") as f:
        with pytest.raises((OSError, KeyError)) as e:
            f["a"][...]
        assert "publish.journal" in str(e.value), str(e.value)
        np.testing.assert_array_equal(f["b"][...], b)
    r = tessera.verify(c)
    assert not r.ok and any("publish.journal" in p for p in r.problems), r.problems


def test_a_foreign_fragment_file_is_not_read(written, tmp_path):
    orig, a, b = written
    c = _copy(orig, tmp_path / "foreign.h5")
    da, db = _array_dir(c, "a"), _array_dir(c, "b")
    foreign = _frag_files(c, db)[0]
    # b's fragment is newer than a's: if a read it, b's values would win in a.
    copy = da / foreign.name
    shutil.copy(foreign, copy)
    r = tessera.verify(c)
    assert r.ok, r.problems
    assert any(foreign.name in n and "not read" in n for n in r.notes), r.notes
    with h5py.File(c, "r") as f:
        np.testing.assert_array_equal(f["a"][...], a)
    with h5py.File(c, "a") as f:  # a writer neither reads nor records it: it removes it
        np.testing.assert_array_equal(f["a"][...], a)
        f["a"][0, 0] = -1.0
    a[0, 0] = -1.0
    assert not copy.exists()
    with h5py.File(c, "r") as f:
        np.testing.assert_array_equal(f["a"][...], a)


def test_a_copied_dataset_reads_its_fragment_files(written, tmp_path):
    """H5Ocopy links the source's fragment files into the copy's array and records them
    (before: unrecorded, so the copy read the fill value, with no error); a deleted
    copied file is an error naming it, the source still reads back."""
    orig, a, b = written
    c = _copy(orig, tmp_path / "copied.h5")
    with h5py.File(c, "a") as f:
        f.copy("a", "a2")
    with h5py.File(c, "r") as f:
        np.testing.assert_array_equal(f["a2"][...], a)
    assert tessera.verify(c).ok
    ids = {_array_dir(orig, n).parent.name for n in "ab"}  # arrays/<id>/frag
    fresh = [p for p in _frag_files(c) if p.parent.parent.name not in ids]  # the copy's
    assert fresh, _frag_files(c)
    fresh[0].unlink()
    with h5py.File(c, "r") as f:
        with pytest.raises((OSError, KeyError)) as e:
            f["a2"][...]
        assert fresh[0].name in str(e.value), str(e.value)
        np.testing.assert_array_equal(f["a"][...], a)


# ---------------------------------------------------------------- written in parallel

MPI_WRITER = Path(__file__).resolve().parent / "mpi_accounting_writer.py"
NP, N = 2, 256


def _parallel_model(name: str) -> np.ndarray:
    """What mpi_accounting_writer.py leaves in dataset `name` (computed here again)."""
    m = np.random.default_rng(sum(map(ord, name))).random((N, N))
    if name == "b":  # epoch 2: each rank negated its first 8 rows
        for r in range(NP):
            lo = r * (N // NP)
            m[lo:lo + 8, :] = -m[lo:lo + 8, :]
    return m


@pytest.fixture(scope="module")
def written_in_parallel(tmp_path_factory):
    path = tmp_path_factory.mktemp("par") / "par.h5"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", str(NP),
           sys.executable, str(MPI_WRITER), str(path)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "WRITTEN" in proc.stdout, proc.stdout + proc.stderr
    return path


def _dataset_dirs(path: Path) -> dict:
    """Dataset name -> its fragment directory: the writer created a, b, c in that order,
    and array ids (the directory names, hex) are handed out in creation order."""
    dirs = sorted(p for p in (path / "arrays").iterdir() if (p / "frag").is_dir())
    assert len(dirs) == 3, dirs
    return {name: d / "frag" for name, d in zip("abc", dirs)}


def _rank_of(frag: Path) -> int:
    return int(frag.name.split("-")[1], 16)  # <ts>-<rank>-<seq>-<gen>.tfr


def test_a_parallel_written_file_reads_back_and_verifies(tessera_env, written_in_parallel):
    with h5py.File(written_in_parallel, "r") as f:
        for name in "abc":
            np.testing.assert_array_equal(f[name][...], _parallel_model(name))
    r = tessera.verify(written_in_parallel)
    assert r.ok, r.problems
    frags = [p for d in _dataset_dirs(written_in_parallel).values() for p in _frag_files(written_in_parallel, d)]
    assert {_rank_of(p) for p in frags} == set(range(NP)), frags


@pytest.mark.parametrize("name,rank,damage", [
    ("a", 1, "deleted"),    # committed by epoch 1 (H5Fflush), written by rank 1
    ("a", 0, "truncated"),
    ("b", 1, "truncated"),  # epoch 2 (H5Fclose) wrote more of b
    ("c", 1, "deleted"),    # published by rank 1's H5Dclose, recorded by the next epoch
    ("c", 0, "truncated"),
])
def test_a_lost_fragment_file_of_a_parallel_written_file_is_an_hdf5_error(
        tessera_env, written_in_parallel, tmp_path, name, rank, damage):
    c = _copy(written_in_parallel, tmp_path / f"{name}{rank}{damage}.h5")
    d = _dataset_dirs(c)[name]
    frag = next(p for p in _frag_files(c, d) if _rank_of(p) == rank)
    if damage == "deleted":
        frag.unlink()
    else:
        with open(frag, "r+b") as fh:
            fh.truncate(frag.stat().st_size - 100)
    with h5py.File(c, "r") as f:
        with pytest.raises((OSError, KeyError)) as e:
            f[name][...]
        assert frag.name in str(e.value), str(e.value)
        for other in "abc":
            if other != name:
                np.testing.assert_array_equal(f[other][...], _parallel_model(other))
    r = tessera.verify(c)
    assert not r.ok
    assert any(frag.name in p for p in r.problems), r.problems


def test_a_foreign_fragment_in_a_parallel_written_file_is_an_hdf5_error_naming_it(
        tessera_env, written_in_parallel, tmp_path):
    """A fragment no commit of this file published (c's, same shape, copied into a's
    directory): reading a fails naming it and verify reports it (before the publish logs,
    a parallel file's array read it: c's values in a, no error)."""
    c = _copy(written_in_parallel, tmp_path / "foreign.h5")
    dirs = _dataset_dirs(c)
    foreign = _frag_files(c, dirs["c"])[0]
    copy = dirs["a"] / foreign.name
    shutil.copy(foreign, copy)
    assert not list(dirs["a"].glob("*.log")), "the epochs recorded every file: no publish log is left"
    with h5py.File(c, "r") as f:
        with pytest.raises((OSError, KeyError)) as e:
            f["a"][...]
        assert foreign.name in str(e.value), str(e.value)
        np.testing.assert_array_equal(f["b"][...], _parallel_model("b"))
    r = tessera.verify(c)
    assert not r.ok and any(foreign.name in p for p in r.problems), r.problems
    copy.unlink()  # moved away: a reads back as committed
    with h5py.File(c, "r") as f:
        np.testing.assert_array_equal(f["a"][...], _parallel_model("a"))
    assert tessera.verify(c).ok


def test_a_copied_fragment_in_a_parallel_file_is_accounted_for(tessera_env, tmp_path):
    """H5Ocopy inside a parallel file (mpirun -n 2) hard-links the source's fragment
    files into the copy's array: the copy records them, so it reads back as the source,
    verifies, and a deleted copied file is an HDF5 error naming it (before: the linked
    files had no record and the copy of a parallel file's dataset was refused as foreign;
    in a serial file it read the fill value)."""
    path = tmp_path / "copy.h5"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", str(NP),
           sys.executable, str(MPI_WRITER), str(path), "copy"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "WRITTEN" in proc.stdout, proc.stdout + proc.stderr
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["d"][...], _parallel_model("a"))
    r = tessera.verify(path)
    assert r.ok, r.problems
    dirs = sorted(p for p in (path / "arrays").iterdir() if (p / "frag").is_dir())
    assert len(dirs) == 4, dirs
    copied = _frag_files(path, dirs[3] / "frag")
    assert copied, "the copy holds no fragment file"
    copied[0].unlink()
    with h5py.File(path, "r") as f:
        with pytest.raises((OSError, KeyError)) as e:
            f["d"][...]
        assert copied[0].name in str(e.value), str(e.value)
        np.testing.assert_array_equal(f["a"][...], _parallel_model("a"))
    r = tessera.verify(path)
    assert not r.ok and any(copied[0].name in p for p in r.problems), r.problems
