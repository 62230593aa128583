"""The MPI writer that scripts/kill_loops SIGKILLs (docs/reliability.md, "Kill loops").

usage: mpirun -n N python kill_loops_mpi_writer.py PATH SEED

Every rank writes its pid to PATH.pid<rank> first.  Then epoch e = 1, 2, ...: each rank writes
value e into its part of dataset x (several box writes out of tile order, so several
fragments per rank, and a few scattered elements through the write buffer), the ranks
grow dataset g by one row holding e, and the collective H5Fflush commits the epoch;
rank 0 then prints "COMMITTED <e>".  The loop runs until the process is killed (or 10,000
epochs).  A reader must find x all e and g with e rows of values 1..e, for one e that is
the last COMMITTED or the one in flight.
"""
import sys
import os

import h5py
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
path, seed = sys.argv[1], int(sys.argv[2])
PER = 4096
rng = np.random.default_rng(seed * 100 + rank)

with open(f"{path}.pid{rank}", "w") as pf:  # for the killer (stdout lines of ranks may interleave)
    pf.write(str(os.getpid()))
f = h5py.File(path, "w", driver="mpio", comm=comm)
x = f.create_dataset("x", (size * PER,), dtype="i4", chunks=(512,), fillvalue=-1,
                     compression="gzip" if seed % 2 else None)
g = f.create_dataset("g", (0, 4), maxshape=(None, 4), dtype="i8", chunks=(8, 4), fillvalue=-1)
f.flush()
comm.Barrier()
for e in range(1, 10001):
    lo = rank * PER
    quarters = list(range(4))
    rng.shuffle(quarters)
    for q in quarters:
        x[lo + q * (PER // 4):lo + (q + 1) * (PER // 4)] = e
    for i in rng.integers(0, PER, 3):  # scattered elements: the write buffer
        x[lo + int(i)] = e
    g.resize((e, 4))
    if rank == 0:
        g[e - 1] = e
    f.flush()  # the epoch commit
    if rank == 0:
        print("COMMITTED", e, flush=True)
f.close()
