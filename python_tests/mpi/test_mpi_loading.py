"""Under mpirun every rank loads tessera from the environment.

Run as:  mpirun -n 4 python -m pytest -q -p no:cacheprovider python_tests/mpi
(scripts/test does, with -n 2 and -n 4).  Every rank runs the same tests; results are
exchanged with allgather *before* asserting, so a failure on one rank fails the test on
every rank instead of leaving the others blocked in a collective.
"""
from __future__ import annotations

import os
import shutil
import tempfile

import h5py

from mpi4py import MPI

COMM = MPI.COMM_WORLD


def _gather(local):
    return COMM.allgather(local)


def test_running_under_mpirun_with_several_ranks():
    sizes = _gather(COMM.Get_size())
    assert COMM.Get_size() > 1, "run under mpirun -n N with N > 1"
    assert sizes == [COMM.Get_size()] * COMM.Get_size()
    ranks = _gather(COMM.Get_rank())
    assert ranks == list(range(COMM.Get_size()))


def test_every_rank_uses_tessera(request):
    try:
        hdf5 = request.getfixturevalue("hdf5")  # inside the try: never raise before allgather
        fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
        local = hdf5.connector_name(fapl.id)
    except Exception as exc:  # report, don't raise before the collective
        local = f"error: {exc!r}"
    names = _gather((COMM.Get_rank(), local, os.environ.get("HDF5_VOL_CONNECTOR")))
    assert [n for _, n, _ in names] == ["tessera"] * COMM.Get_size(), names


def test_every_rank_writes_its_own_container():
    """Inside an MPI job, serial (non-mpio) files work on every rank."""
    import numpy as np
    tmpdir = tempfile.mkdtemp(prefix="tessera-mpi-") if COMM.Get_rank() == 0 else None
    tmpdir = COMM.bcast(tmpdir, root=0)
    rank = COMM.Get_rank()
    path = os.path.join(tmpdir, f"rank{rank}.h5")
    try:
        try:
            with h5py.File(path, "w") as f:
                f.create_dataset("x", data=np.arange(100) * (rank + 1))
            with h5py.File(path, "r") as f:
                ok = bool((f["x"][...] == np.arange(100) * (rank + 1)).all())
            local = (ok, os.path.isfile(os.path.join(path, "tessera.container")))
        except Exception as exc:
            local = (False, repr(exc))
        results = _gather(local)
    finally:
        COMM.Barrier()
        if rank == 0:
            shutil.rmtree(tmpdir, ignore_errors=True)
    assert results == [(True, True)] * COMM.Get_size(), results
