#!/usr/bin/env python3
"""Direct chunk I/O (H5Dwrite_chunk / H5Dread_chunk), timed on tessera and on native HDF5.

    scripts/tessera-env run .venv/bin/python scripts/bench/bench_direct_chunk.py [--mib M] [--repeat R]

A detector-style pipeline compresses frames itself and hands HDF5 the finished chunks.
M MiB (default 1024) of float32 frames of 1024 x 1024 (4 MiB each, one chunk per frame)
are compressed beforehand as HDF5's shuffle + deflate (level 1) would — 16 distinct
frames, cycled — and then, on each side:
  - write:      h5py's write_direct_chunk for every frame into a new file, and the close;
  - read_chunk: read_direct_chunk of every chunk from the reopened file;
  - read:       every frame read back as values (d[i]: the library decompresses).
Run under the tessera environment, it runs each workload on a tessera container and then
runs ITSELF again in a child process without HDF5_VOL_CONNECTOR and the compat preload
(native HDF5), and prints both timings (best of R), the ratio native/tessera (above 1:
tessera faster) and whether both returned the same bytes and values.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import h5py
import numpy as np

FRAME = (1024, 1024)


def timed(fn, repeat):
    best, out = None, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    return best, out


def frames(k=16):
    """k distinct frames (smooth, compressible) and their chunks as HDF5 encodes them."""
    rng = np.random.default_rng(5)
    raw, enc = [], []
    for _ in range(k):
        f = np.cumsum(rng.standard_normal(FRAME), axis=1).astype("<f4")
        shuffled = f.view(np.uint8).reshape(-1, 4).T.tobytes()  # HDF5's shuffle, element size 4
        raw.append(f)
        enc.append(zlib.compress(shuffled, 1))
    return raw, enc


def workloads(dirpath: Path, mib: float, repeat: int):
    n = max(1, int(mib * 2**20) // (FRAME[0] * FRAME[1] * 4))
    raw, enc = frames()
    path = dirpath / "direct.h5"
    results = {}

    def write():
        with h5py.File(path, "w") as f:
            d = f.create_dataset("frames", shape=(n,) + FRAME, maxshape=(None,) + FRAME, dtype="<f4",
                                 chunks=(1,) + FRAME, shuffle=True, compression="gzip", compression_opts=1)
            for i in range(n):
                d.id.write_direct_chunk((i, 0, 0), enc[i % len(enc)])

    def read_chunks():
        h = hashlib.sha256()
        with h5py.File(path, "r") as f:
            d = f["frames"]
            for i in range(n):
                mask, b = d.id.read_direct_chunk((i, 0, 0))
                h.update(mask.to_bytes(4, "little"))
                h.update(b)
        return h.hexdigest()[:16]

    def read_values():
        h = hashlib.sha256()
        with h5py.File(path, "r") as f:
            d = f["frames"]
            for i in range(n):
                v = d[i]
                if not np.array_equal(v, raw[i % len(raw)]):
                    return f"frame {i} differs"
                h.update(v.tobytes())
        return h.hexdigest()[:16]

    tw, _ = timed(write, repeat)
    results["direct_write"] = {"time": tw, "check": f"{n} frames"}
    tc, cc = timed(read_chunks, repeat)
    want = hashlib.sha256()
    for i in range(n):
        want.update((0).to_bytes(4, "little"))
        want.update(enc[i % len(enc)])
    # The chunks come back as the very bytes written, mask 0, on both sides.
    results["direct_read"] = {"time": tc, "check": "same bytes" if cc == want.hexdigest()[:16] else "other bytes"}
    tr, cv = timed(read_values, repeat)
    results["value_read"] = {"time": tr, "check": cv}
    results["_bytes"] = sum(len(enc[i % len(enc)]) for i in range(n))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mib", type=float, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tessera-bench-direct-") as tmp:
        mine = workloads(Path(tmp), a.mib, a.repeat)
    if a.child:
        print(json.dumps(mine))
        return 0
    # Native: no connector, no compat preload, no plugin directory.
    env = {k: v for k, v in os.environ.items() if k not in ("HDF5_VOL_CONNECTOR", "LD_PRELOAD", "HDF5_PLUGIN_PATH")}
    r = subprocess.run([sys.executable, __file__, "--mib", str(a.mib), "--repeat", str(a.repeat), "--child"],
                       env=env, capture_output=True, text=True, check=True)
    native = json.loads(r.stdout.strip().splitlines()[-1])
    side = os.environ.get("HDF5_VOL_CONNECTOR", "native")
    nbytes = mine.pop("_bytes")
    native.pop("_bytes")
    print(f"bench_direct_chunk: {a.mib:g} MiB of float32 frames as {nbytes / 2**20:.0f} MiB of pre-compressed "
          f"chunks (shuffle+deflate 1), best of {a.repeat}; this run: {side}")
    print(f"{'workload':13s} {'native s':>10s} {'tessera s':>10s} {'native/tessera':>15s}  same result")
    ok = True
    for w, t in mine.items():
        n = native[w]
        same = n["check"] == t["check"] and "differs" not in t["check"] and t["check"] != "other bytes"
        ok &= same
        print(f"{w:13s} {n['time']:10.3f} {t['time']:10.3f} {n['time'] / t['time']:15.2f}  {'yes' if same else 'NO'}")
    return 0 if ok and side == "tessera" else 1


if __name__ == "__main__":
    sys.exit(main())
