"""The MPI job of scripts/stress_mpi_readers (docs/reliability.md, "Outside readers during
MPI epochs"): epoch after epoch until killed, every rank writes generation e into four
datasets, each through a different path of the connector, and the collective H5Fflush
commits the epoch.

usage: mpirun -n N python stress_mpi_writer.py PATH SEED [resume]

A cell of every dataset holds  e * K + (its flat index mod K)  (K = 2**20) once epoch e
committed: a reader derives the generation of every cell it reads and checks that the
cell sits where it should.
  c  (N*64, 256) int64, chunks (32, 64): each rank's 64-row band in one collective write.
  s  (N*32, 64)  int64, chunks (16, 64): each rank's 32 rows as 8 independent 4-row box
     writes in random order (small writes: the share logs), then 3 single elements.
  x  (N*2048,)   int64, chunks 512, gzip: each rank's part in 4 independent quarter
     writes in random order (several fragments per rank and epoch).
  g  (rows(e), 8) int64, chunks (4, 8), maxshape (None, 8): its extent changes every epoch
     (grows, and shrinks every few epochs: rows(e) = 1 + (7 e) mod 13); rank r writes the
     rows i with i mod N == r, so every rank, rank 0 included, writes into it each epoch.
     The extent changes first in an epoch.  A shrink in a parallel file is a commit point
     of its own (docs/parallel.md, "Extent changes": an epoch commit, the change, another):
     between epochs e-1 and e, readers may see the state "e-1 with g cut to rows(e)".

Rank 0 then writes the epoch number to PATH.committed (a rename: readers read it whole)
and prints "COMMITTED <e>".  Every rank writes its pid to PATH.pid<rank> first (for the
killer).  With "resume" the job opens the existing file (a writable parallel open: the
recovery after a killed rank) and goes on from the epoch it finds.
"""
import os
import sys

import h5py
import numpy as np
from mpi4py import MPI

K = 1 << 20
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
path, seed = sys.argv[1], int(sys.argv[2])
resume = len(sys.argv) > 3 and sys.argv[3] == "resume"
rng = np.random.default_rng(seed * 100 + rank)


def rows(e):
    return 1 + (7 * e) % 13


def gen(e, shape, start):
    """Generation-e values of a block of `shape` that is the cells from flat index `start` on."""
    n = int(np.prod(shape))
    return (e * K + (start + np.arange(n, dtype=np.int64)) % K).reshape(shape)


with open(f"{path}.pid{rank}", "w") as pf:
    pf.write(str(os.getpid()))
if resume:
    f = h5py.File(path, "r+", driver="mpio", comm=comm)
    c, s, x, g = f["c"], f["s"], f["x"], f["g"]
    first = comm.bcast(int(c[0, 0]) // K + 1 if rank == 0 else None)  # after the epoch recovery kept
else:
    f = h5py.File(path, "w", driver="mpio", comm=comm)
    c = f.create_dataset("c", (size * 64, 256), dtype="i8", chunks=(32, 64), fillvalue=-1)
    s = f.create_dataset("s", (size * 32, 64), dtype="i8", chunks=(16, 64), fillvalue=-1)
    x = f.create_dataset("x", (size * 2048,), dtype="i8", chunks=(512,), fillvalue=-1,
                         compression="gzip")
    g = f.create_dataset("g", (0, 8), maxshape=(None, 8), dtype="i8", chunks=(4, 8), fillvalue=-1)
    f.flush()
    first = 1
comm.Barrier()
for e in range(first, first + int(os.environ.get("STRESS_EPOCHS", "100000"))):
    n = rows(e)
    g.resize((n, 8))  # first: a shrink is a commit point of its own (see above)
    lo = rank * 64
    with c.collective:
        c[lo:lo + 64] = gen(e, (64, 256), lo * 256)
    lo = rank * 32
    boxes = list(range(8))
    rng.shuffle(boxes)
    for b in boxes:
        r0 = lo + 4 * b
        s[r0:r0 + 4] = gen(e, (4, 64), r0 * 64)
    for i in rng.integers(0, 32 * 64, 3):  # single elements over the boxes just written
        r, col = lo + int(i) // 64, int(i) % 64
        s[r, col] = e * K + (r * 64 + col) % K
    lo = rank * 2048
    quarters = list(range(4))
    rng.shuffle(quarters)
    for q in quarters:
        a = lo + q * 512
        x[a:a + 512] = gen(e, (512,), a)
    for i in range(rank, n, size):
        g[i] = gen(e, (8,), i * 8)
    f.flush()  # the epoch commit (collective)
    if rank == 0:
        with open(f"{path}.committed.tmp", "w") as m:
            m.write(str(e))
        os.replace(f"{path}.committed.tmp", f"{path}.committed")
        print("COMMITTED", e, flush=True)
f.close()
