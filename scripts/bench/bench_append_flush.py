#!/usr/bin/env python3
"""Append and flush: issue 43's acquisition loop, tessera vs native HDF5 in the same run
(docs/benchmarks.md, "Append and flush").

h5py appends one record of 64 float64 values to a chunked, resizable dataset (chunks of
256 records) and calls f.flush() after each, N times; then the file is closed.  For each
N, in this order, each in a process of its own:
  - native HDF5, then tessera: microseconds per append+flush (the loop's time / N);
  - a bare loop of one 512-byte write + fdatasync per record on the same file system
    (what a durable flush costs at least; native's flush is not durable);
  - what is left: native's one file; tessera's live fragments, files in the container, and
    its automatic merges with their write amplification, (flushed + merged) / flushed bytes,
    where flushed = live + merges' input - merges' output (`tessera info --json`);
  - a fresh process opening the file and reading the whole dataset, the median of three
    (page cache warm), checked against the values written.

Defaults: N = 1,000 and 10,000 (and N = 1, the fixed part of a fresh process's open: tessera
loads its plugin then), three rounds each, times the medians; --full adds 100,000 (tens of
minutes: every tessera flush is durable).  --settings passes extra connector settings to
tessera (e.g. "auto_consolidate=0": every flush's fragment kept).

  scripts/tessera-env run .venv/bin/python scripts/bench/bench_append_flush.py [--full]
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

WRITER = r"""
import json, sys, time
import numpy as np
import h5py
path, n = sys.argv[1], int(sys.argv[2])
rec = np.arange(64, dtype="<f8")
f = h5py.File(path, "w")
d = f.create_dataset("d", shape=(0, 64), maxshape=(None, 64), chunks=(256, 64), dtype="<f8")
t0 = time.perf_counter()
for i in range(n):
    d.resize((i + 1, 64))
    d[i] = rec + i * 64
    f.flush()
t1 = time.perf_counter()
f.close()
print(json.dumps({"loop_s": t1 - t0, "close_s": time.perf_counter() - t1}))
"""

READER = r"""
import json, sys, time
import numpy as np
t0 = time.perf_counter()
import h5py
t1 = time.perf_counter()
with h5py.File(sys.argv[1], "r") as f:
    v = f["d"][...]
t2 = time.perf_counter()
n = int(sys.argv[2])
ok = v.shape == (n, 64) and bool((v == np.arange(n * 64, dtype="<f8").reshape(n, 64)).all())
print(json.dumps({"read_s": t2 - t1, "ok": ok}))
"""

FSYNC = r"""
import json, os, sys, time
path, n = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
buf = bytes(512)
t0 = time.perf_counter()
for i in range(n):
    os.pwrite(fd, buf, i * 512)
    os.fdatasync(fd)
t1 = time.perf_counter()
os.close(fd)
os.remove(path)
print(json.dumps({"loop_s": t1 - t0}))
"""


def child(code: str, args: list, env: dict) -> dict:
    p = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"a benchmark process failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def files_in(path: str) -> tuple[int, int]:
    """Files, and their bytes, of a native file or a container."""
    if os.path.isfile(path):
        return 1, os.path.getsize(path)
    sizes = [os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(path) for f in fs]
    return len(sizes), sum(sizes)


def tessera_state(path: str, env: dict) -> dict:
    tool = shutil.which("tessera", path=env.get("PATH"))
    if not tool:
        sys.exit("the `tessera` tool is not on the PATH (run under scripts/tessera-env)")
    p = subprocess.run([tool, "info", path, "/d", "--json"], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"tessera info failed:\n{p.stderr}")
    info = json.loads(p.stdout)
    arr = next(o for o in info["objects"] if o["path"] == "/d")["array"]
    fr, m = arr["fragments"], arr["consolidation"]
    flushed = fr["bytes"] + m["bytes_read"] - m["bytes_written"]
    return {"fragments": fr["count"], "replaced": fr["replaced"], "merges": m["merges"],
            "wa": (flushed + m["bytes_written"]) / flushed if flushed else float("nan")}


def run(n: int, where: str, tessera_env: dict, native_env: dict, repeat: int) -> dict:
    """Medians of `repeat` rounds of native, tessera and the fdatasync loop, one after the
    other (this machine's disk changes speed by 10x within minutes: each round's three
    are measured together)."""
    rounds = [run_once(n, where, tessera_env, native_env) for _ in range(repeat)]
    out = rounds[-1]
    for side in ("native", "tessera"):
        for key in ("us", "read_ms", "close_s"):
            out[side][key] = statistics.median(r[side][key] for r in rounds)
    out["fsync_us"] = statistics.median(r["fsync_us"] for r in rounds)
    return out


def run_once(n: int, where: str, tessera_env: dict, native_env: dict) -> dict:
    out = {}
    for side, env in (("native", native_env), ("tessera", tessera_env)):
        path = os.path.join(where, f"{side}-{n}.h5")
        w = child(WRITER, [path, n], env)
        reads = [child(READER, [path, n], env) for _ in range(3)]
        if not all(r["ok"] for r in reads):
            sys.exit(f"{side}: the dataset read back differs from what was written (N = {n})")
        files, size = files_in(path)
        r = {"us": w["loop_s"] / n * 1e6, "close_s": w["close_s"], "files": files, "mib": size / 2**20,
             "read_ms": statistics.median(x["read_s"] for x in reads) * 1e3}
        if side == "tessera":
            r.update(tessera_state(path, env))
        out[side] = r
        shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
    out["fsync_us"] = child(FSYNC, [os.path.join(where, "fsync.bin"), n], native_env)["loop_s"] / n * 1e6
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", default="1000,10000", help="record counts, comma-separated (default 1000,10000)")
    ap.add_argument("--full", action="store_true", help="also N = 100,000")
    ap.add_argument("--settings", default="", help="extra tessera connector settings, e.g. auto_consolidate=0")
    ap.add_argument("--dir", default=None, help="where the files go (default: a temporary directory)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds per N; times are medians (default 3)")
    a = ap.parse_args()
    conn = os.environ.get("HDF5_VOL_CONNECTOR", "")
    if conn.split(" ")[0] != "tessera":
        sys.exit("run under scripts/tessera-env (HDF5_VOL_CONNECTOR=tessera)")
    tessera_env = dict(os.environ, HDF5_VOL_CONNECTOR=(conn + " " + a.settings).strip())
    native_env = dict(os.environ)
    native_env.pop("HDF5_VOL_CONNECTOR", None)
    # N = 1 first: what a fresh process pays whatever was written (tessera: loading the
    # plugin at the first open), for reading the other rows.
    ns = [1] + [int(x) for x in a.n.split(",") if x] + ([100_000] if a.full else [])
    where = tempfile.mkdtemp(prefix="tessera_append_", dir=a.dir)
    results = {}
    try:
        for n in ns:
            t0 = time.perf_counter()
            results[n] = run(n, where, tessera_env, native_env, a.repeat)
            print(f"# N = {n:,} done in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    finally:
        shutil.rmtree(where, ignore_errors=True)
    print(f"# append one 64 x float64 record + f.flush(), chunks (256, 64); tessera: {tessera_env['HDF5_VOL_CONNECTOR']}; "
          f"medians of {a.repeat}")
    print(f"# disk: {where}")
    print(f"{'':36}{'native':>12}{'tessera':>12}{'tessera/native':>16}")
    for n, r in results.items():
        nat, tes = r["native"], r["tessera"]
        print(f"N = {n:,}")
        print(f"  {'µs per append+flush':34}{nat['us']:12.0f}{tes['us']:12.0f}{tes['us'] / nat['us']:16.2f}")
        print(f"  {'bare write+fdatasync loop, µs':34}{'':12}{r['fsync_us']:12.0f}"
              f"{'':16}   tessera / fdatasync {tes['us'] / r['fsync_us']:.2f}")
        print(f"  {'fresh open + full read, ms':34}{nat['read_ms']:12.1f}{tes['read_ms']:12.1f}"
              f"{tes['read_ms'] / nat['read_ms']:16.2f}")
        print(f"  {'files left':34}{nat['files']:12}{tes['files']:12}")
        print(f"  {'bytes on disk, MiB':34}{nat['mib']:12.2f}{tes['mib']:12.2f}{tes['mib'] / nat['mib']:16.2f}")
        print(f"  {'live fragments':34}{'':12}{tes['fragments']:12}   ({tes['replaced']} replaced, kept for reads of "
              f"the past)")
        print(f"  {'automatic merges':34}{'':12}{tes['merges']:12}   write amplification {tes['wa']:.2f}")
        print(f"  {'close, s':34}{nat['close_s']:12.3f}{tes['close_s']:12.3f}")


if __name__ == "__main__":
    main()
