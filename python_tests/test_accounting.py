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
"""
from __future__ import annotations

import shutil
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
