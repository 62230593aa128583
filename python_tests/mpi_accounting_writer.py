"""Writer for test_accounting.py's parallel cases, run under mpirun: a parallel file
whose datasets every rank writes a part of, committed by the epochs of H5Fflush and
H5Fclose (and, for "c", published by each rank's H5Dclose between them).

usage: mpirun -n N python mpi_accounting_writer.py PATH [copy]
With "copy", the file is then opened in parallel again and "a" is copied to "d" (H5Ocopy,
collective), which hard-links a's fragment files into d's array.
The data is model(name, N) of test_accounting.py: rank r writes rows [r*R, (r+1)*R) of
each dataset (R = 256 / N) in two halves, so every rank leaves several fragment files.
"""
import sys

import h5py
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
path = sys.argv[1]
N = 256


def model(name: str) -> np.ndarray:
    return np.random.default_rng(sum(map(ord, name))).random((N, N))


rows = N // size
lo, hi = rank * rows, (rank + 1) * rows
mid = (lo + hi) // 2
with h5py.File(path, "w", driver="mpio", comm=comm) as f:
    for name in ("a", "b", "c"):
        f.create_dataset(name, (N, N), "f8", chunks=(32, 64))
    m = {name: model(name) for name in ("a", "b", "c")}
    for name in ("a", "b"):
        f[name][mid:hi, :] = m[name][mid:hi, :]  # out of tile order: two fragments
        f[name][lo:mid, :] = m[name][lo:mid, :]
    f.flush()  # epoch 1
    c = f["c"]
    c[mid:hi, :] = m["c"][mid:hi, :]
    c[lo:mid, :] = m["c"][lo:mid, :]
    c.id.close()  # H5Dclose: this rank's writes published on their own
    del c
    comm.Barrier()
    f["b"][lo:lo + 8, :] = -m["b"][lo:lo + 8, :]  # epoch 2 (the close)
if len(sys.argv) > 2 and sys.argv[2] == "copy":
    with h5py.File(path, "a", driver="mpio", comm=comm) as f:
        f.copy("a", "d")
if rank == 0:
    print("WRITTEN")
