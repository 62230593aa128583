#!/usr/bin/env python3
"""The demo's main job: one unmodified h5py program on tessera and on native HDF5.

    scripts/tessera-env run python scripts/bench/demo_h5py.py [--side N] [--points K] [--singles S] [--repeat R]

Run under the tessera environment (HDF5_VOL_CONNECTOR=tessera), it runs the workload on a
tessera container, then runs ITSELF again in a child process without HDF5_VOL_CONNECTOR
(and without the compat preload), i.e. on native HDF5, and prints both timings, the ratios
and whether both read back identical data. The workload, after TileDB §6.1 / issue 4:
  1. write a dense N x N int32 dataset (chunks N/8 x N/16) in chunk-row blocks;
  2. scattered small updates: S single-element assignments `d[i, j] = v` (one H5Dwrite
     each), then K random elements in ONE write with a point selection;
  3. close durably (tessera's close syncs; native: close, then fsync the file);
  4. reopen, read everything back, hash it.
Timings are wall-clock seconds of each step as the program sees them. With --repeat R the
workload runs R times per side, which side goes first alternating (tessera, native, native,
tessera, ...: the side running second finds the disk still writing back the first side's
data, and the first run of a process pays its imports and first-touch costs), and each
step's median is printed.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import shutil
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np


def updates(n: int, count: int, seed: int):
    """`count` distinct random cells and their values (same on both sides)."""
    rng = np.random.default_rng(seed)
    flat = rng.choice(n * n, size=count, replace=False)
    coords = np.stack([flat // n, flat % n], axis=1).astype(np.uint64)
    values = -rng.integers(1, 1_000_000_000, size=count, dtype=np.int64).astype(np.int32)
    return coords, values


def durable_close(f: h5py.File, path: Path, native: bool) -> None:
    f.close()
    if native:  # native HDF5 does not fsync on close; tessera's close already syncs
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def workload(path: Path, n: int, singles: int, points: int, native: bool) -> dict:
    t = {}
    chunk = (max(1, n // 8), max(1, n // 16))
    start = time.perf_counter()
    f = h5py.File(path, "w")
    d = f.create_dataset("data", shape=(n, n), dtype="<i4", chunks=chunk)
    row = np.arange(n, dtype=np.int64)
    for r0 in range(0, n, chunk[0]):
        r1 = min(n, r0 + chunk[0])
        block = (np.arange(r0, r1, dtype=np.int64)[:, None] * n + row[None, :]).astype(np.int32)
        d[r0:r1, :] = block
    durable_close(f, path, native)
    t["dense write (to durable)"] = time.perf_counter() - start

    f = h5py.File(path, "r+")
    d = f["data"]
    sc, sv = updates(n, singles, 1)
    start = time.perf_counter()
    for (i, j), v in zip(sc.tolist(), sv.tolist()):
        d[i, j] = v
    durable_close(f, path, native)
    t[f"{singles} single-element assignments (to durable)"] = time.perf_counter() - start

    f = h5py.File(path, "r+")
    d = f["data"]
    pc, pv = updates(n, points, 2)
    start = time.perf_counter()
    fspace = d.id.get_space()
    fspace.select_elements(pc)
    d.id.write(h5py.h5s.create_simple((points,)), fspace, pv)
    durable_close(f, path, native)
    t[f"{points} scattered elements in one write (to durable)"] = time.perf_counter() - start

    start = time.perf_counter()
    with h5py.File(path, "r") as f:
        data = f["data"][...]
    t["read everything back"] = time.perf_counter() - start
    return {"times": t, "sha256": hashlib.sha256(data.tobytes()).hexdigest(), "shape": list(data.shape),
            "is_container": path.is_dir()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--side", type=int, default=8192, help="N: the dataset is N x N int32 (default 8192)")
    ap.add_argument("--singles", type=int, default=1000, help="single-element assignments (default 1000)")
    ap.add_argument("--points", type=int, default=100000, help="elements in the point write (default 100000)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per side, the first side alternating (default 1)")
    ap.add_argument("--dir", help="working directory (default: a temporary one, removed afterwards)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    on_tessera = os.environ.get("HDF5_VOL_CONNECTOR", "").split(" ")[0] == "tessera"

    if a.child:  # the native run: print one JSON line for the parent
        r = workload(Path(a.dir) / "native.h5", a.side, a.singles, a.points, native=True)
        print("RESULT " + json.dumps(r))
        return 0
    if not on_tessera:
        print("demo_h5py: run under the tessera environment (scripts/tessera-env run ...)", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="tessera-demo-", dir=a.dir) as tmp:
        print(f"h5py {h5py.__version__} on HDF5 {h5py.version.hdf5_version}; {a.side}x{a.side} int32 "
              f"({a.side * a.side * 4 / 2**20:.0f} MiB), {a.singles} single + {a.points} scattered updates")
        env = {k: v for k, v in os.environ.items() if k != "HDF5_VOL_CONNECTOR"}
        env["LD_PRELOAD"] = ":".join(p for p in env.get("LD_PRELOAD", "").split(":") if p and "tessera" not in p)

        def run_native():
            for p in Path(tmp).glob("native.h5"):
                p.unlink()
            proc = subprocess.run([sys.executable, __file__, "--child", "--dir", tmp, "--side", str(a.side),
                                   "--singles", str(a.singles), "--points", str(a.points)],
                                  env=env, capture_output=True, text=True)
            line = next((l for l in proc.stdout.splitlines() if l.startswith("RESULT ")), None)
            if proc.returncode != 0 or line is None:
                print(f"the native run failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}", file=sys.stderr)
                sys.exit(1)
            return json.loads(line[len("RESULT "):])

        def run_tessera():
            path = Path(tmp) / "tessera.h5"
            if path.is_dir():
                shutil.rmtree(path)
            return workload(path, a.side, a.singles, a.points, native=False)

        runs = {"native": [], "tessera": []}
        for r in range(max(1, a.repeat)):
            order = ("tessera", "native") if r % 2 == 0 else ("native", "tessera")
            for side in order:
                runs[side].append(run_tessera() if side == "tessera" else run_native())
        tess, nat = runs["tessera"][-1], runs["native"][-1]
        for res in (tess, nat):  # each step's median over the runs of that side
            side = "tessera" if res is tess else "native"
            res["times"] = {k: statistics.median(x["times"][k] for x in runs[side]) for k in res["times"]}
        same_all = all(x["sha256"] == runs["native"][0]["sha256"] for x in runs["native"] + runs["tessera"])

    print(f"\n{'step':<52} {'native':>10} {'tessera':>10} {'native/tessera':>15}")
    for step, tn in nat["times"].items():
        tt = tess["times"][step]
        print(f"{step:<52} {tn:>9.3f}s {tt:>9.3f}s {tn / tt:>14.2f}x")
    same = same_all and nat["shape"] == tess["shape"]
    if a.repeat > 1:
        print(f"(median of {a.repeat} runs per side, the side going first alternating)")
    print(f"\ntessera file is a container directory: {tess['is_container']}; native file is a plain HDF5 "
          f"file: {not nat['is_container']}")
    print(f"data read back: native sha256 {nat['sha256'][:16]}…, tessera {tess['sha256'][:16]}… -> "
          + ("IDENTICAL" if same else "DIFFERENT"))
    return 0 if same and tess["is_container"] and not nat["is_container"] else 1


if __name__ == "__main__":
    sys.exit(main())
