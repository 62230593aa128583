"""Consolidating a container written by several MPI ranks: in parallel (ranks merge
disjoint tile ranges, published as one epoch) and serially (`tessera consolidate`), each
followed by `tessera vacuum` (consolidation keeps the merged fragments until then).

The container comes from python_tests/mpi_kill_writer.py run to completion under
`mpirun -n 2` (no kill): dataset x ends as all 2s across 2 epochs × 2 ranks × several
fragments, dataset y holds 0..9.  After each consolidation the data must still be
exactly that, with fewer fragments, and no journal or temporary file left.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np

from conftest import tool_path

HERE = Path(__file__).resolve().parent
WRITER = HERE / "mpi_kill_writer.py"
# blob_kb=0: the writer's out-of-order writes to its deflate dataset would otherwise be
# buffered as blobs and merged into one fragment per rank (docs/engine.md "Blobs"); these
# tests need several fragments per rank to consolidate.
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               HDF5_VOL_CONNECTOR="tessera blob_kb=0")
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "2"]


def _tool():
    return tool_path()


def _fragments(path):
    frag = path / "arrays" / "0000000000000001" / "frag"
    return sorted(p.name for p in frag.iterdir() if p.name.endswith(".tfr") and not p.name.startswith("."))


def _check_data(path):
    with h5py.File(path, "r") as f:
        assert (f["x"][...] == 2).all() and f["x"].shape == (2000,)
        assert f["y"][...].tolist() == list(range(10))
    leftovers = [p.name for p in path.rglob("*") if p.name.endswith(".journal") or p.name.endswith(".tmp")]
    assert leftovers == []


def test_parallel_then_serial_consolidation_keeps_the_data(tmp_path):
    path = tmp_path / "many.h5"
    w = subprocess.run(MPIRUN + [sys.executable, str(WRITER), str(path), "1", "none"], env=MPI_ENV,
                       capture_output=True, text=True, timeout=180)
    assert w.returncode == 0, w.stdout + w.stderr
    _check_data(path)
    before = _fragments(path)
    ranks = {name.split("-")[1] for name in before}
    assert len(before) >= 8 and ranks == {"00000000", "00000001"}, before

    p = subprocess.run(MPIRUN + [_tool(), "consolidate", str(path)], env=MPI_ENV, capture_output=True, text=True,
                       timeout=180)
    assert p.returncode == 0, p.stdout + p.stderr
    assert len(_fragments(path)) > len(before)  # the merged fragments are kept until a vacuum
    _check_data(path)
    v = subprocess.run([_tool(), "vacuum", str(path)], env=MPI_ENV, capture_output=True, text=True, timeout=180)
    assert v.returncode == 0, v.stdout + v.stderr
    after = _fragments(path)
    assert 1 <= len(after) <= 2, after  # one merged part per rank (a rank may get no tiles)
    _check_data(path)

    for cmd in ("consolidate", "vacuum"):
        s = subprocess.run([_tool(), cmd, str(path)], env=MPI_ENV, capture_output=True, text=True, timeout=180)
        assert s.returncode == 0, s.stdout + s.stderr
    assert len(_fragments(path)) == 1
    _check_data(path)
