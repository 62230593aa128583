"""Writer for test_mpi_kill.py, run under mpirun: epoch 1 flushed, then epoch 2 written
and one rank SIGKILLed — while writing (KILL_MODE=write) or inside the epoch commit
(TESSERA_TEST_KILL_AT=staged:<rank>:2 / committed:<rank>:2, hooks in a connector built with
-DTESSERA_KILL_POINTS=ON).

usage: mpirun -n N python mpi_kill_writer.py PATH VICTIM_RANK KILL_MODE
(KILL_MODE "reopen": no kill; open the container r+ in parallel and print what x holds;
 "none": no kill, both epochs complete.)  TESSERA_TEST_WAIT_READER=1: after epoch 1, wait
until PATH.reader exists (a serial reader holding the file open since epoch 1).
Epoch e writes value e into every element; epoch 2 also creates dataset "y".
"""
import os
import signal
import sys
import time

import h5py
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
path, victim, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
PER = 1000

if mode == "reopen":  # after the crash: a parallel writable open recovers; ranks agree
    with h5py.File(path, "r+", driver="mpio", comm=comm) as f:
        seen = comm.allgather(sorted(set(f["x"][...].tolist())))
    if rank == 0:
        print("SEEN", seen[0] if all(s == seen[0] for s in seen) else seen)
    sys.exit(0)

f = h5py.File(path, "w", driver="mpio", comm=comm)
x = f.create_dataset("x", (size * PER,), dtype="i4", chunks=(250,), fillvalue=-1, compression="gzip")
x[rank * PER:(rank + 1) * PER] = 1
f.flush()  # epoch 1
comm.Barrier()
if rank == 0:
    open(path + ".epoch1", "w").close()
if os.environ.get("TESSERA_TEST_WAIT_READER"):
    # A serial reader opens the file at epoch 1 and says so (PATH.reader) before epoch 2.
    if rank == 0:
        for _ in range(1200):
            if os.path.exists(path + ".reader"):
                break
            time.sleep(0.05)
    comm.Barrier()
# Several fragments per rank in epoch 2: in descending order (writes in tile order
# would be appended to one fragment, Array::write_dense).
for k in reversed(range(4)):
    lo = rank * PER + k * (PER // 4)
    x[lo:lo + PER // 4] = 2
f.create_dataset("y", data=np.arange(10))
if mode == "write" and rank == victim:
    os.kill(os.getpid(), signal.SIGKILL)
f.flush()  # epoch 2 (the kill hooks fire in here)
f.close()
if rank == 0:
    open(path + ".epoch2", "w").close()
