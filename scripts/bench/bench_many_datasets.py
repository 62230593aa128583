#!/usr/bin/env python3
"""Many datasets, scattered writes, one process: time to a durable close and peak RSS,
tessera vs native HDF5 in the same run (issue 15's workload; docs/benchmarks.md).

One h5py file with D datasets of S x S int32; P scattered single-cell writes to each,
W per H5Dwrite (a point selection), round-robin over the datasets; closed at the end
(native: plus an fsync of the file, tessera's close is durable).  Each connector runs in
its own child process, so its peak RSS (ru_maxrss) is its own.  Defaults are the issue's
full size (D=40, S=4096, P=4M, W=100,000); --quick is a smoke run.

  scripts/tessera-env run .venv/bin/python scripts/bench/bench_many_datasets.py [--quick]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import json, os, resource, sys, time
import numpy as np
import h5py
path, D, S, P, W, seed = sys.argv[1], *map(int, sys.argv[2:7])
rng = np.random.default_rng(seed)
t0 = time.perf_counter()
f = h5py.File(path, "w")
ds = [f.create_dataset("d%02d" % i, shape=(S, S), dtype="i4") for i in range(D)]
last = {}  # d00: cell -> last value written (a sample of cells is read back at the end)
for r in range(P // W):
    for i, d in enumerate(ds):
        flat = rng.choice(S * S, size=W, replace=False)  # distinct cells: the last value is unambiguous
        coords = np.stack([flat // S, flat % S], axis=1).astype(np.uint64)
        vals = (flat % 1000003 + r * 7 + i).astype(np.int32)
        fs = d.id.get_space()
        fs.select_elements(coords)
        ms = h5py.h5s.create_simple((W,))
        d.id.write(ms, fs, vals)
        if i == 0:
            written = set(flat.tolist())
            for c in [c for c in last if c in written]:
                del last[c]  # overwritten by this write (re-added below if sampled)
            for c, v in zip(flat[:200].tolist(), vals[:200].tolist()):
                last[c] = v
write_done = time.perf_counter()
f.close()
if os.path.isfile(path):  # native: H5Fclose leaves the data in the page cache
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
t1 = time.perf_counter()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
# Spot check after reopening: the last value written to sampled cells of d00.
with h5py.File(path, "r") as g:
    d = g["d00"]
    bad = sum(int(d[c // S, c % S]) != int(v) for c, v in list(last.items())[-500:])
print(json.dumps({"write_s": write_done - t0, "durable_s": t1 - t0, "rss": rss, "bad": bad}))
"""


def run(native: bool, args, where: str) -> dict:
    env = dict(os.environ)
    if native:
        env.pop("HDF5_VOL_CONNECTOR", None)
    path = os.path.join(where, "native.h5" if native else "tessera.h5")
    out = subprocess.run([sys.executable, "-c", CHILD, path, str(args.datasets), str(args.side), str(args.points),
                          str(args.per_write), "7"], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{'native' if native else 'tessera'} run failed:\n{out.stderr[-3000:]}")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    if os.path.isdir(path):
        r["bytes"] = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(path) for f in fs)
        shutil.rmtree(path)
    else:
        r["bytes"] = os.path.getsize(path)
        os.remove(path)
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", type=int, default=40)
    ap.add_argument("--side", type=int, default=4096)
    ap.add_argument("--points", type=int, default=4_000_000)
    ap.add_argument("--per-write", type=int, default=100_000)
    ap.add_argument("--quick", action="store_true", help="D=8, S=1024, P=400k, W=50k")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--skip-native", action="store_true", help="tessera only (native point writes are slow)")
    a = ap.parse_args()
    if a.quick:
        a.datasets, a.side, a.points, a.per_write = 8, 1024, 400_000, 50_000
    if os.environ.get("HDF5_VOL_CONNECTOR", "").split(" ")[0] != "tessera":
        sys.exit("run under scripts/tessera-env (HDF5_VOL_CONNECTOR=tessera)")
    where = tempfile.mkdtemp(prefix="tessera_many_", dir=a.dir)
    try:
        t = run(False, a, where)
        n = {k: float("nan") for k in t} if a.skip_native else run(True, a, where)
        if a.skip_native:
            n["bad"] = 0
    finally:
        shutil.rmtree(where, ignore_errors=True)
    print(f"# {a.datasets} datasets of {a.side}x{a.side} int32, {a.points} scattered writes each, "
          f"{a.per_write} per H5Dwrite; connector settings: {os.environ.get('HDF5_VOL_CONNECTOR')}")
    print(f"{'':28}{'native':>12}{'tessera':>12}{'native/tessera':>16}")
    for key, label, unit in (("write_s", "last H5Dwrite returned", "s"), ("durable_s", "durable close", "s"),
                             ("rss", "peak RSS", "MiB"), ("bytes", "stored", "MiB")):
        nv, tv = n[key], t[key]
        if unit == "MiB":
            nv, tv = nv / 2**20, tv / 2**20
        print(f"{label:28}{nv:12.2f}{tv:12.2f}{(nv / tv if tv else float('inf')):16.2f}   {unit}")
    bad = n["bad"] + t["bad"]
    print(f"CHECK spot-read of d00 after reopening: {'ok' if bad == 0 else f'{bad} wrong cells'}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
