"""A parallel writer killed mid-run leaves every flushed epoch intact, never a mix.

Each case runs python_tests/mpi_kill_writer.py under `mpirun -n 2` (a subprocess: this
file runs in the serial pytest stage), SIGKILLs rank 1 at some point of epoch 2, and then
opens the container — serially read-only first (the view must already be right), then in
parallel read-write (rank 0's recovery rolls committed per-rank journals forward, others
back), then serially again — and checks that dataset x holds exactly epoch 1's data or
exactly epoch 2's, and the metadata of the same epoch.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

WRITER = Path(__file__).resolve().parent / "mpi_kill_writer.py"
NP, PER = 2, 1000

# (mode, kill hook, the epoch a reader must see)
CASES = [
    ("write", None, 1),                   # killed while writing epoch 2's fragments
    ("commit", "staged:1:2", 1),            # journals staged, epoch 2 never committed
    ("commit", "committed:1:2", 2),         # epoch 2 committed, rank 1 renamed nothing
]


def _require_kill_points():
    """The kill hooks exist only in a connector built with -DTESSERA_KILL_POINTS=ON (the
    build scripts/test makes); without them no rank would die and the cases would fail
    for the wrong reason."""
    for d in filter(None, os.environ.get("HDF5_PLUGIN_PATH", "").split(":")):
        cache = Path(d).parent / "CMakeCache.txt"
        if cache.is_file():
            if "TESSERA_KILL_POINTS:BOOL=ON" in cache.read_text():
                return
            pytest.fail(f"{cache.parent} was built without the kill points: configure it with "
                        "-DTESSERA_KILL_POINTS=ON (scripts/test does)")


def _mpirun_cmd(path, mode, hook, **extra):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", **extra)
    env.pop("TESSERA_TEST_KILL_AT", None)
    if hook:
        _require_kill_points()
        env["TESSERA_TEST_KILL_AT"] = hook
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", str(NP),
           sys.executable, str(WRITER), str(path), "1", mode]
    return cmd, env


def _mpirun(path, mode, hook):
    cmd, env = _mpirun_cmd(path, mode, hook)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)


def _epoch_seen(path, mode):
    with h5py.File(path, mode) as f:
        x = f["x"][...]
        has_y = "y" in f
        y = f["y"][...].tolist() if has_y else None
    for e in (1, 2):
        if (x == e).all():
            return e, has_y, y
    vals, counts = np.unique(x, return_counts=True)
    return ("mix", dict(zip(vals.tolist(), counts.tolist()))), has_y, y


@pytest.mark.parametrize("mode,hook,want", CASES, ids=[c[1] or c[0] for c in CASES])
def test_killed_rank_leaves_a_whole_epoch(tmp_path, mode, hook, want):
    path = tmp_path / "killed.h5"
    proc = _mpirun(path, mode, hook)
    assert proc.returncode != 0, "the victim rank was not killed:\n" + proc.stdout + proc.stderr
    assert (tmp_path / "killed.h5.epoch1").exists(), "epoch 1 never completed:\n" + proc.stderr
    assert not (tmp_path / "killed.h5.epoch2").exists()
    # Read-only view first (no recovery on disk), then a parallel writable open (rank 0
    # recovers every array at open; all ranks must see the same), then serial opens.
    epoch, _, _ = _epoch_seen(path, "r")
    assert epoch == want, ("r", epoch, proc.stderr[-2000:])
    re = _mpirun(path, "reopen", None)
    assert re.returncode == 0, re.stdout + re.stderr
    assert f"SEEN [{want}]" in re.stdout, re.stdout
    for open_mode in ("r+", "r"):
        epoch, has_y, y = _epoch_seen(path, open_mode)
        assert epoch == want, (open_mode, epoch, proc.stderr[-2000:])
        # Metadata follows the same epoch: "y" exists exactly when epoch 2 committed.
        assert has_y == (want == 2), (open_mode, has_y)
        if has_y:
            assert y == list(range(10))
    # The parallel open recovered every array: no journals or temporary fragments remain.
    leftovers = [p.name for p in path.rglob("*") if p.name.endswith(".journal") or p.name.endswith(".tmp")]
    assert leftovers == []


def test_a_reader_holding_the_file_since_the_last_epoch_sees_the_next_one_whole(tmp_path):
    """A serial reader outside the job opened the file at epoch 1 and holds dataset x.
    Rank 1 is killed after epoch 2 committed and before it renamed its fragments into
    place (rank 0 may have renamed its own): the reader's refresh (H5Drefresh) must read
    epoch 2 whole, taking rank 1's files through its journal.  Before, its reloaded
    catalog recorded files it looked for under their final names only: "is missing: the
    catalog records it as published", a false loss."""
    path = tmp_path / "held.h5"
    cmd, env = _mpirun_cmd(path, "commit", "committed:1:2", TESSERA_TEST_WAIT_READER="1")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "held.h5.epoch1").exists():
            assert proc.poll() is None, "the writer ended before epoch 1: " + proc.stderr.read()[-2000:]
            assert time.monotonic() < deadline, "epoch 1 never completed"
            time.sleep(0.05)
        with h5py.File(path, "r") as f:
            x = f["x"]
            assert (x[...] == 1).all()
            (tmp_path / "held.h5.reader").touch()
            out, err = proc.communicate(timeout=180)
            assert proc.returncode != 0, "the victim rank was not killed:\n" + out + err
            journals = [p.name for p in path.rglob("*.journal")]
            assert journals, "rank 1's journal should still be there (killed before its renames)"
            x.refresh()
            v = x[...]
            vals, counts = np.unique(v, return_counts=True)
            assert (v == 2).all(), dict(zip(vals.tolist(), counts.tolist()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
