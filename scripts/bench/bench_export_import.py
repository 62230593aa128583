#!/usr/bin/env python3
"""`tessera export` / `tessera import` of a large dataset against the disk's own
sequential bandwidth, measured in the same run on the same file system.

    scripts/tessera-env run .venv/bin/python scripts/bench/bench_export_import.py \
        [--gib 1] [--repeat 2] [--filter none|gzip] [--dir DIR] [--json FILE]

1. The disk, dd-style, with a file of the same size in the same directory:
   - write: 16 MiB blocks, then fdatasync (the write's time includes the sync);
   - cold read: the page cache dropped (/proc/sys/vm/drop_caches when allowed, else
     POSIX_FADV_DONTNEED on the file), 16 MiB blocks;
   - copy: `dd if=THAT of=NEW bs=16M conv=fdatasync` from a cold cache (what copying the
     same bytes on this disk achieves: the ceiling for a program that reads and writes it).
2. A tessera container with one float64 dataset of that size (chunks of 64 x 8192 =
   4 MiB, incompressible values), written through h5py and closed.
3. export: caches dropped, `tessera export CONTAINER OUT.h5` timed to its end (it
   fdatasyncs the output); import: caches dropped, `tessera import OUT.h5 NEW` timed to
   its end (its close commits the container durably).

The disk measurements and the tool runs alternate, --repeat rounds of all five, so that
each ratio compares runs made under the same conditions (a shared machine's disk varies
by 2-3x from minute to minute); medians and best runs are reported, and the ratios are
of medians.  Throughput is the dataset's bytes over the time.  Prints a table and, with
--json, one JSON record (scripts/bench/report reads it).
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
from pathlib import Path

import numpy as np

MiB = 1 << 20
BLOCK = 16 * MiB


def tool() -> str:
    for d in filter(None, os.environ.get("HDF5_PLUGIN_PATH", "").split(":")):
        t = Path(d).parent / "tools" / "tessera"
        if t.is_file():
            return str(t)
    t = shutil.which("tessera")
    if not t:
        sys.exit("bench_export_import: no tessera tool (run under scripts/tessera-env after building)")
    return t


def drop_caches(paths) -> str:
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return "drop_caches"
    except OSError:
        pass
    for root in paths:
        root = Path(root)
        for p in [root] if root.is_file() else [q for q in root.rglob("*") if q.is_file()]:
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fdatasync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    return "fadvise"


def disk_round(dirpath: Path, size: int, buf: bytes):
    """One round: (write MiB/s, cold read MiB/s, copy MiB/s, cache method)."""
    a, b = dirpath / "dd.a", dirpath / "dd.b"
    t = time.perf_counter()
    fd = os.open(a, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    left = size
    while left > 0:
        left -= os.write(fd, buf[:min(BLOCK, left)])
    os.fdatasync(fd)
    os.close(fd)
    w = size / MiB / (time.perf_counter() - t)
    method = drop_caches([a])
    t = time.perf_counter()
    with open(a, "rb", buffering=0) as f:
        while f.read(BLOCK):
            pass
    r = size / MiB / (time.perf_counter() - t)
    drop_caches([a])
    t = time.perf_counter()
    subprocess.run(["dd", f"if={a}", f"of={b}", f"bs={BLOCK}", "conv=fdatasync", "status=none"], check=True)
    c = size / MiB / (time.perf_counter() - t)
    a.unlink()
    b.unlink()
    return w, r, c, method


def make_container(path: Path, size: int, filt: str):
    import h5py

    cols = 8192
    rows = size // (8 * cols)
    rng = np.random.default_rng(2)
    with h5py.File(path, "w") as f:
        kw = {"compression": "gzip", "compression_opts": 1} if filt == "gzip" else {}
        d = f.create_dataset("d", shape=(rows, cols), chunks=(64, cols), dtype="<f8", **kw)
        step = 512
        for i in range(0, rows, step):
            n = min(step, rows - i)
            if filt == "gzip":  # compressible: a smooth signal plus noise
                v = np.cumsum(rng.standard_normal((n, cols)), axis=1).round(2)
            else:
                v = rng.random((n, cols))
            d[i:i + n] = v
    return rows * cols * 8


def timed_tool(args, drop):
    drop_caches(drop)
    t = time.perf_counter()
    p = subprocess.run([tool(), "-q", *map(str, args)], capture_output=True, text=True)
    dt = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"tessera {' '.join(map(str, args))} failed: {p.stderr}")
    return dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gib", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--filter", choices=["none", "gzip"], default="none")
    ap.add_argument("--dir", type=Path, default=None, help="where the files go (default: a temporary directory)")
    build = Path(os.environ.get("TESSERA_BUILD_DIR", Path(__file__).resolve().parent.parent.parent / "build"))
    ap.add_argument("--json", type=Path, default=build / "bench-logs" / time.strftime("export-import-%Y%m%d-%H%M%S.jsonl"),
                    help="append one JSON record to this file (default: <build>/bench-logs/, where "
                         "scripts/bench/report reads it)")
    a = ap.parse_args()
    if os.environ.get("HDF5_VOL_CONNECTOR", "").split(" ")[0] != "tessera":
        sys.exit("bench_export_import: run under scripts/tessera-env (HDF5_VOL_CONNECTOR=tessera)")
    size = int(a.gib * (1 << 30))
    work = Path(tempfile.mkdtemp(prefix="tessera_bench_ei_", dir=a.dir))
    try:
        buf = np.random.default_rng(1).integers(0, 256, size=BLOCK, dtype=np.uint8).tobytes()
        container = work / "src.h5"
        nbytes = make_container(container, size, a.filter)
        stored = sum(p.stat().st_size for p in container.rglob("*") if p.is_file())
        native, back = work / "out.h5", work / "back.h5"
        W, R, C, EX, IM = [], [], [], [], []
        method = ""
        for _ in range(a.repeat):
            w, r, c, method = disk_round(work, size, buf)
            W.append(w), R.append(r), C.append(c)
            for p in (native, back):
                if p.is_dir():
                    shutil.rmtree(p)
                elif p.exists():
                    p.unlink()
            EX.append(nbytes / MiB / timed_tool(["export", container, native], [container]))
            IM.append(nbytes / MiB / timed_tool(["import", native, back], [native]))
        native_bytes = native.stat().st_size
        med = statistics.median
        rnd = lambda v: [round(x, 1) for x in v]  # noqa: E731
        rec = {
            "bench": "export_import", "gib": a.gib, "filter": a.filter, "data_bytes": nbytes, "rounds": a.repeat,
            "container_bytes": stored, "native_bytes": native_bytes, "cache_drop": method,
            "disk_write_mibs": rnd(W), "disk_cold_read_mibs": rnd(R), "disk_copy_mibs": rnd(C),
            "export_mibs": rnd(EX), "import_mibs": rnd(IM),
        }
        for k, v in (("write", W), ("read", R), ("copy", C), ("export", EX), ("import", IM)):
            rec[f"{k}_median"] = round(med(v), 1)
            rec[f"{k}_best"] = round(max(v), 1)
        for op in ("export", "import"):
            for ref in ("write", "copy"):
                rec[f"{op}_vs_{ref}"] = round(rec[f"{op}_median"] / rec[f"{ref}_median"], 2)
        print(f"{a.gib:g} GiB float64, filter {a.filter}: container {stored / MiB:.0f} MiB, native {native_bytes / MiB:.0f} MiB, "
              f"{a.repeat} rounds (caches: {method}); MiB/s median (best)")
        for k, label in (("write", "disk write+fdatasync"), ("read", "disk cold read"),
                         ("copy", "disk copy (cold read, write, fdatasync)"), ("export", "tessera export"),
                         ("import", "tessera import")):
            line = f"  {label:42s} {rec[k + '_median']:8.1f} ({rec[k + '_best']:.1f})"
            if k in ("export", "import"):
                line += f"   = {rec[k + '_vs_write']:.2f} x write, {rec[k + '_vs_copy']:.2f} x copy"
            print(line)
        if a.json:
            a.json.parent.mkdir(parents=True, exist_ok=True)
            with open(a.json, "a") as f:
                f.write(json.dumps(rec) + "\n")
        print("JSON " + json.dumps(rec))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
