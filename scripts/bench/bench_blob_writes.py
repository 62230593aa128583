#!/usr/bin/env python3
"""Random blob writes (NDBlaze, Fig. 7/8): perceived and sustained write throughput and
peak RSS, tessera vs native HDF5 in the same run (issue 15; docs/benchmarks.md).

Each writer process opens its own file and writes rectangular blobs of 64 KiB to 16 MiB
(int32, random sizes and unaligned positions) into one S x S dataset chunked C x C, until
it has written `--gib` GiB; then closes the file (native: plus an fsync; tessera's close
is durable).  Perceived throughput = bytes / time spent inside H5Dwrite; sustained =
bytes / time from the first write to the durable close.  1, 2 and 4 writers run at once
(separate files; with --mpi, MPI ranks writing one file through mpio, independently);
each connector runs in its own child processes.  --gzip N gives the dataset shuffle +
deflate level N, as NDBlaze's store compresses its cuboids.

  scripts/tessera-env run .venv/bin/python scripts/bench/bench_blob_writes.py [--quick] [--gzip N] [--mpi] [--repeat N]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import json, os, resource, sys, time
import numpy as np
path, S, C, total, seed, gz, mpi = sys.argv[1], *map(int, sys.argv[2:8])
comm = None
if mpi:  # one file, every rank its own random blobs, independent writes
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    seed += comm.rank
import h5py
rng = np.random.default_rng(seed)
sides = [128, 256, 512, 1024, 2048]  # int32 squares: 64 KiB, 256 KiB, 1 MiB, 4 MiB, 16 MiB
# Under MPI each rank writes within its own band of rows (so its last blob's newest value
# is known), at random columns and rows inside it.
band = S // comm.size if comm else S
r_lo = band * comm.rank if comm else 0
sides = [s for s in sides if s <= band]
f = h5py.File(path, "w", driver="mpio", comm=comm) if mpi else h5py.File(path, "w")
filt = dict(compression="gzip", compression_opts=gz, shuffle=True) if gz else {}
d = f.create_dataset("x", shape=(S, S), dtype="i4", chunks=(C, C), **filt)
blob = {s: np.arange(s * s, dtype=np.int32).reshape(s, s) for s in sides}
out = {s: np.empty((s, s), np.int32) for s in sides}  # reused: no page faults in the loop
written = inside = 0
if comm:
    comm.Barrier()
t0 = time.perf_counter()
last = None
while written < total:
    s = int(rng.choice(sides))
    r, c = r_lo + int(rng.integers(0, band - s + 1)), int(rng.integers(0, S - s + 1))
    v = np.add(blob[s], written // 4096, out=out[s])
    t = time.perf_counter()
    d[r:r + s, c:c + s] = v
    inside += time.perf_counter() - t
    written += v.nbytes
    last = (r, c, s, int(v[s // 2, s // 3]))
f.close()
if os.path.isfile(path) and (not comm or comm.rank == 0):
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
if comm:
    comm.Barrier()
t1 = time.perf_counter()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
# The last blob's middle, after reopening: the newest value won.
with (h5py.File(path, "r", driver="mpio", comm=comm) if comm else h5py.File(path, "r")) as g:
    r, c, s, want = last
    ok = int(g["x"][r + s // 2, c + s // 3]) == want
res = {"bytes": written, "inside": inside, "total": t1 - t0, "rss": rss, "ok": ok}
if comm:
    all_ = comm.gather(res)
    if comm.rank == 0:
        print(json.dumps(all_))
else:
    print(json.dumps([res]))
"""


def run(native: bool, writers: int, a, where: str) -> dict:
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = "1"  # numpy's idle BLAS threads spin on the cores we measure
    if native:
        env.pop("HDF5_VOL_CONNECTOR", None)
    procs = []
    total = str(int(a.gib * 2**30))
    if a.mpi:
        path = os.path.join(where, f"{'n' if native else 't'}{writers}.h5")
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", str(writers),
               sys.executable, "-c", CHILD, path, str(a.side), str(a.chunk), total, "100", str(a.gzip), "1"]
        procs.append((path, subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    else:
        for w in range(writers):
            path = os.path.join(where, f"{'n' if native else 't'}{writers}_{w}.h5")
            cmd = [sys.executable, "-c", CHILD, path, str(a.side), str(a.chunk), total, str(100 + w), str(a.gzip), "0"]
            procs.append((path, subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    out = []
    for path, p in procs:
        so, se = p.communicate()
        if p.returncode != 0:
            sys.exit(f"{'native' if native else 'tessera'} writer failed:\n{se[-3000:]}")
        out += json.loads(so.strip().splitlines()[-1])
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)
    b = sum(x["bytes"] for x in out)
    return {"perceived": b / max(x["inside"] for x in out) / 2**20,
            "sustained": b / max(x["total"] for x in out) / 2**20,
            "rss": max(x["rss"] for x in out) / 2**20, "ok": all(x["ok"] for x in out)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--side", type=int, default=8192)
    ap.add_argument("--chunk", type=int, default=512)
    ap.add_argument("--gib", type=float, default=1.0, help="GiB written by each writer")
    ap.add_argument("--writers", default="1,2,4")
    ap.add_argument("--quick", action="store_true", help="S=4096, 0.125 GiB, 1 and 2 writers")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--mpi", action="store_true", help="the writers are MPI ranks writing one file (mpio)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs per side and writer count, alternating which side goes first; medians reported")
    ap.add_argument("--gzip", type=int, default=0, help="deflate level of the dataset (with shuffle); 0: no filter")
    a = ap.parse_args()
    if a.quick:
        a.side, a.gib, a.writers = 4096, 0.125, "1,2"
    if a.mpi and a.gzip:
        sys.exit("--mpi with --gzip: PHDF5 writes filtered datasets only collectively (not random blobs)")
    if os.environ.get("HDF5_VOL_CONNECTOR", "").split(" ")[0] != "tessera":
        sys.exit("run under scripts/tessera-env (HDF5_VOL_CONNECTOR=tessera)")
    where = tempfile.mkdtemp(prefix="tessera_blobs_", dir=a.dir)
    bad = 0
    print(f"# int32 {a.side}x{a.side} chunked {a.chunk}x{a.chunk}; blobs of 64 KiB-16 MiB at random places; "
          f"{a.gib} GiB per writer; {f'shuffle+gzip {a.gzip}' if a.gzip else 'no filter'}; {'one file under MPI' if a.mpi else 'a file per writer'}; settings: {os.environ.get('HDF5_VOL_CONNECTOR')}")
    print(f"{'writers':>8}{'':2}{'perceived MiB/s':>34}{'sustained MiB/s':>34}{'peak RSS MiB (per writer)':>34}")
    print(f"{'':10}" + "".join(f"{'native':>11}{'tessera':>11}{'ratio':>12}" for _ in range(3)))
    try:
        for k in [int(x) for x in a.writers.split(",")]:
            ns, ts = [], []
            for i in range(a.repeat):  # the machine's load drifts: alternate, take medians
                for native in ((True, False) if i % 2 == 0 else (False, True)):
                    (ns if native else ts).append(run(native, k, a, where))
            bad += sum(not x["ok"] for x in ns + ts)
            n = {key: statistics.median(x[key] for x in ns) for key in ("perceived", "sustained", "rss")}
            t = {key: statistics.median(x[key] for x in ts) for key in ("perceived", "sustained", "rss")}
            row = f"{k:>8}{'':2}"
            for key in ("perceived", "sustained", "rss"):
                row += f"{n[key]:11.1f}{t[key]:11.1f}{n[key] / t[key] if key == 'rss' else t[key] / n[key]:12.2f}"
            print(row)
    finally:
        shutil.rmtree(where, ignore_errors=True)
    print("(ratio: tessera/native for throughput, native/tessera for RSS)")
    print(f"CHECK newest value of the last blob after reopening: {'ok' if bad == 0 else f'{bad} wrong'}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
