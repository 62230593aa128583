#!/usr/bin/env python3
"""Layouts after MultiMap's Fig. 6 (issue 17; docs/layouts.md, docs/benchmarks.md).

A 3-D float32 dataset (default 1024 x 1024 x 512 = 2 GiB, chunks 64^3 = 1 MiB, unfiltered)
is stored once per side: tessera with each layout (row-major = the paper's Naive,
z-order, hilbert, multimap — MultiMap's tile and cell orders — and multimap:row-major, its
tile order with row-major cells) and native HDF5 with the same chunking, each written by
one H5Dwrite.  Then, with a cold cache before every query (`sync; echo 3 >
/proc/sys/vm/drop_caches` when run as root, else posix_fadvise(DONTNEED) on every file of
every side), the paper's queries run on every side in turn (alternating):
  - beams along each dimension (the two other coordinates random, all cells along it);
  - ranges: cubes of equal relative side at selectivities 0.01 %, 0.1 %, 1 %, 10 %, at
    random positions.
Each side runs in its own worker process that opens the file, reads the selection with
h5py, closes it, and reports the time and its /proc/self/io deltas: rchar (bytes the
process read), syscr (read calls) and read_bytes (bytes fetched from the device for it,
readahead and prefetch included).  Printed: the median over --queries random queries of
each, per query shape and side, the ratios, and whether issue 17's targets were met.
Every side must read identical bytes (a hash per query is compared).

  scripts/tessera-env run .venv/bin/python scripts/bench/bench_layouts.py [--dir D] [--queries 5]
      [--shape 1024,1024,512] [--chunks 64,64,64] [--cold drop|fadvise|none] [--keep] [--reuse]
  --reuse: keep the files and, in a later run with the same --dir, read the kept ones
  (same shape, chunks and layout) instead of writing them again.
  --smoke: a few seconds at a tiny scale (python_tests/test_bench_smoke.py).
  Side "row-major->multimap": written row-major, then converted by `tessera consolidate
  --layout multimap` (docs/layouts.md, "Converting"); WRITE prints the conversion's time.
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

# "A->B": written in layout A, then converted by `tessera consolidate --layout B`
# (docs/layouts.md, "Converting"); its queries must read what a dataset written in B reads.
LAYOUTS = ["row-major", "z-order", "hilbert", "multimap", "multimap:row-major", "row-major->multimap"]
SELECTIVITIES = [0.0001, 0.001, 0.01, 0.1]

WORKER = r"""
import hashlib, json, os, sys, time
import numpy as np
import h5py

def io():
    v = {}
    with open("/proc/self/io") as fh:
        for line in fh:
            k, x = line.split(":")
            v[k] = int(x)
    return v

def evict(path):
    paths = [path]
    if os.path.isdir(path):
        paths = [os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs]
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)

for line in sys.stdin:
    req = json.loads(line)
    op = req["op"]
    if op == "reusable":  # a kept file of the same shape and chunks (--reuse)
        ok = False
        try:
            with h5py.File(req["path"], "r") as f:
                d = f["cube"]
                ok = d.shape == tuple(req["shape"]) and d.chunks == tuple(req["chunks"])
                if ok and req["layout"] != "native":
                    import tessera
                    a = tessera.info(req["path"])["/cube"].array
                    lay = req["layout"].split("->")[-1]
                    want = lay if ":" in lay else lay + (":column-major" if lay == "multimap" else ":row-major")
                    ok = "%s:%s" % (a.tile_order, a.cell_order) == want and not a.fragment_layouts
        except Exception:
            ok = False
        out = {"ok": ok}
    elif op == "create":
        shape, chunks = tuple(req["shape"]), tuple(req["chunks"])
        t0 = time.perf_counter()
        data = np.arange(np.prod(shape), dtype=np.uint32).reshape(shape)
        data = (data % 16777213).astype(np.float32)  # exact in float32, not compressible by accident
        src, _, dst = req["layout"].partition("->")
        with h5py.File(req["path"], "w") as f:
            if req["layout"] == "native":
                f.create_dataset("cube", shape=shape, dtype="f4", chunks=chunks)[...] = data
            else:
                import tessera
                d = tessera.create_dataset(f, "cube", shape=shape, dtype="f4", chunks=chunks, layout=src)
                d[...] = data
        del data
        out = {"seconds": time.perf_counter() - t0}
        if dst:  # converted by a consolidation, timed on its own
            import tessera
            t1 = time.perf_counter()
            tessera.consolidate(req["path"], layout=dst)
            tessera.vacuum(req["path"])  # the row-major fragment goes: only the converted one is read
            out["convert_seconds"] = time.perf_counter() - t1
    elif op == "evict":
        evict(req["path"])
        out = {}
    elif op == "query":
        key = tuple(slice(lo, hi) for lo, hi in req["box"])
        a = io()
        t0 = time.perf_counter()
        with h5py.File(req["path"], "r") as f:
            v = f["cube"][key]
        t = time.perf_counter() - t0
        b = io()
        out = {"seconds": t, "rchar": b["rchar"] - a["rchar"], "syscr": b["syscr"] - a["syscr"],
               "read_bytes": b["read_bytes"] - a["read_bytes"], "hash": hashlib.blake2b(v.tobytes()).hexdigest()}
    print(json.dumps(out), flush=True)
"""


class Side:
    def __init__(self, name, path, env):
        self.name, self.path = name, path
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=env, text=True)

    def call(self, **req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("worker %s died" % self.name)
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def queries(shape, n, rng):
    """(kind, label, box) per query: beams along each dimension, ranges per selectivity."""
    out = []
    for dim in range(3):
        for _ in range(n):
            box = []
            for d in range(3):
                if d == dim:
                    box.append((0, shape[d]))
                else:
                    c = rng.randrange(shape[d])
                    box.append((c, c + 1))
            out.append(("beam", "beam dim %d" % dim, box))
    for s in SELECTIVITIES:
        frac = s ** (1.0 / 3)
        for _ in range(n):
            box = []
            for d in range(3):
                side = max(1, round(shape[d] * frac))
                lo = rng.randrange(shape[d] - side + 1)
                box.append((lo, lo + side))
            out.append(("range", "range %g %%" % (s * 100), box))
    return out


def drop_caches(mode, sides):
    if mode == "drop":
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("3\n")
    elif mode == "fadvise":
        for s in sides:
            s.call(op="evict", path=s.path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=None, help="where the files go (default: a temporary directory, deleted)")
    ap.add_argument("--shape", default="1024,1024,512")
    ap.add_argument("--chunks", default="64,64,64")
    ap.add_argument("--queries", type=int, default=5, help="random queries per shape (median reported)")
    ap.add_argument("--cold", choices=["drop", "fadvise", "none"], default=None)
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--keep", action="store_true", help="keep the files")
    ap.add_argument("--reuse", action="store_true",
                    help="use files kept by an earlier --keep run when shape, chunks and layout match (implies --keep)")
    ap.add_argument("--smoke", action="store_true", help="tiny scale (CI)")
    args = ap.parse_args()
    args.keep = args.keep or args.reuse
    if args.smoke:
        args.shape, args.chunks, args.queries = "48,40,36", "8,8,8", 2
    shape = tuple(int(x) for x in args.shape.split(","))
    chunks = tuple(int(x) for x in args.chunks.split(","))
    cold = args.cold or ("drop" if os.geteuid() == 0 and os.access("/proc/sys/vm/drop_caches", os.W_OK)
                         else "fadvise")
    import random
    rng = random.Random(args.seed)
    top = args.dir or tempfile.mkdtemp(prefix="tessera_bench_layouts_")
    os.makedirs(top, exist_ok=True)
    env_native = {k: v for k, v in os.environ.items() if k != "HDF5_VOL_CONNECTOR"}
    env_tessera = dict(os.environ, HDF5_VOL_CONNECTOR="tessera")
    names = ["native"] + [x for x in args.layouts.split(",") if x]
    sides = []
    print("# bench_layouts: shape %s, chunks %s, float32 (%.2f GiB), %d queries per shape, cold cache: %s"
          % (shape, chunks, 4 * shape[0] * shape[1] * shape[2] / 2**30, args.queries, cold), flush=True)
    try:
        for name in names:
            path = os.path.join(top, name + ".h5")
            s = Side(name, path, env_native if name == "native" else env_tessera)
            if args.reuse and os.path.exists(path) and s.call(op="reusable", path=path, shape=shape, chunks=chunks,
                                                               layout=name)["ok"]:
                print("WRITE\t%s\treused %s" % (name, path), flush=True)
            else:
                r = s.call(op="create", path=path, shape=shape, chunks=chunks, layout=name)
                conv = ", converted in %.2f s (consolidate --layout + vacuum)" % r["convert_seconds"] \
                    if "convert_seconds" in r else ""
                print("WRITE\t%s\t%.2f s%s" % (name, r["seconds"], conv), flush=True)
            sides.append(s)
        qs = queries(shape, args.queries, rng)
        res = {}  # (label, side) -> list of results
        for kind, label, box in qs:
            hashes = set()
            for s in sides:  # alternating: every side runs each query, cold
                drop_caches(cold, sides)
                r = s.call(op="query", path=s.path, box=box)
                hashes.add(r["hash"])
                res.setdefault((label, s.name), []).append(r)
            if len(hashes) != 1:
                raise SystemExit("CHECK FAILED: sides read different values for %s %s" % (label, box))
        print("CHECK\tall sides read identical values in %d queries" % len(qs))
        labels = list(dict.fromkeys(label for _, label, _ in qs))
        med = {k: {m: statistics.median(x[m] for x in v) for m in ("seconds", "rchar", "syscr", "read_bytes")}
               for k, v in res.items()}
        print("\nRESULT\tquery\tside\tms\tread MiB (rchar)\tread calls\tdevice MiB\tvs native\tvs row-major")
        for label in labels:
            for s in sides:
                m = med[(label, s.name)]
                nat = med[(label, "native")]["seconds"]
                row = med.get((label, "row-major"), {}).get("seconds")
                print("RESULT\t%s\t%s\t%.1f\t%.2f\t%d\t%.2f\t%.2fx\t%s" % (
                    label, s.name, m["seconds"] * 1e3, m["rchar"] / 2**20, m["syscr"], m["read_bytes"] / 2**20,
                    m["seconds"] / nat if nat else 0, "%.2fx" % (m["seconds"] / row) if row else "-"))
        verdict(med, labels, [s.name for s in sides])
    finally:
        for s in sides:
            s.close()
        if not args.keep:  # 2 GiB per side: never left behind
            for n in names:
                p = os.path.join(top, n + ".h5")
                shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else os.path.exists(p) and os.remove(p)
            if not args.dir:
                shutil.rmtree(top, ignore_errors=True)

def verdict(med, labels, names):
    """Issue 17's targets, from the medians: printed as TARGET lines, met or not."""
    t = lambda label, side: med[(label, side)]["seconds"]
    layouts = [n for n in names if n != "native"]
    if "multimap" in layouts and "row-major" in layouts:
        for dim in (0, 1):  # the dimensions other than row-major's major (last) one
            label = "beam dim %d" % dim
            mm = t(label, "multimap")
            sfc = min([t(label, x) for x in ("z-order", "hilbert") if x in layouts] or [float("inf")])
            if "multimap:row-major" in layouts:
                print("INFO\t%s: multimap %.2fx faster than multimap:row-major (its tile order, row-major cells)"
                      % (label, t(label, "multimap:row-major") / mm))
            print("TARGET\t%s: multimap %.2fx faster than row-major (want >= 2)\t%s" % (
                label, t(label, "row-major") / mm, "met" if t(label, "row-major") / mm >= 2 else "NOT met"))
            if sfc != float("inf"):
                print("TARGET\t%s: multimap %.2fx faster than the better of z-order/hilbert (want >= 1.3)\t%s" % (
                    label, sfc / mm, "met" if sfc / mm >= 1.3 else "NOT met"))
    if "multimap" in layouts:
        for label in labels:
            if not label.startswith("range"):
                continue
            best = min(t(label, x) for x in ("row-major", "z-order", "hilbert", "multimap") if x in layouts)
            r = t(label, "multimap") / best
            print("TARGET\t%s: multimap %.2fx the best layout's time (want <= 1.10)\t%s" % (
                label, r, "met" if r <= 1.10 else "NOT met"))
    for x in layouts:
        worst = max(labels, key=lambda l: t(l, x) / t(l, "native"))
        r = t(worst, x) / t(worst, "native")
        print("TARGET\t%s: slowest shape vs native %.2fx (%s; want <= 1.5)\t%s" % (
            x, r, worst, "met" if r <= 1.5 else "NOT met"))


if __name__ == "__main__":
    main()
