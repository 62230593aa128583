#!/usr/bin/env python3
"""The h5py demo's dense write alone, CPU and wall time, tessera and native alternating.

    scripts/tessera-env run .venv/bin/python scripts/bench/dense_write_cpu.py [--side N] [--rounds R]

Each round writes an N x N int32 dataset (chunks N/8 x N/16) in chunk-row blocks, as
demo_h5py.py's step 1 does, and closes it (tessera's close syncs; native: close + fsync),
once on tessera (this process, HDF5_VOL_CONNECTOR=tessera) and once on native HDF5 (a
child process without the connector), the side going first alternating.  Printed per
round and as medians: wall seconds and CPU seconds of the process (time.process_time:
every thread) from H5Fcreate to the durable close, the blocks built before the timer.
On a shared machine the wall time follows the load; the CPU time is the library's own
work.  Every side's file is read back and compared with the model.
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

import h5py
import numpy as np


def blocks(n: int):
    c0 = max(1, n // 8)
    row = np.arange(n, dtype=np.int64)
    return [(r0, (np.arange(r0, min(n, r0 + c0), dtype=np.int64)[:, None] * n + row[None, :]).astype(np.int32))
            for r0 in range(0, n, c0)]


def write(path: Path, n: int, native: bool) -> dict:
    bl = blocks(n)  # built before the timer: numpy's work, the same on both sides
    chunk = (max(1, n // 8), max(1, n // 16))
    w0, c0 = time.perf_counter(), time.process_time()
    f = h5py.File(path, "w")
    d = f.create_dataset("data", shape=(n, n), dtype="<i4", chunks=chunk)
    for r0, b in bl:
        d[r0:r0 + b.shape[0], :] = b
    f.close()
    if native:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    with h5py.File(path, "r") as f:
        got = f["data"][...]
    ok = bool(np.array_equal(got, np.arange(n * n, dtype=np.int64).reshape(n, n).astype(np.int32)))
    return {"wall": wall, "cpu": cpu, "ok": ok}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--side", type=int, default=8192)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--dir")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print("RESULT " + json.dumps(write(Path(a.dir) / "native.h5", a.side, True)))
        return 0
    if os.environ.get("HDF5_VOL_CONNECTOR", "").split(" ")[0] != "tessera":
        print("dense_write_cpu: run under the tessera environment (scripts/tessera-env run ...)", file=sys.stderr)
        return 2
    env = {k: v for k, v in os.environ.items() if k != "HDF5_VOL_CONNECTOR"}
    env["LD_PRELOAD"] = ":".join(p for p in env.get("LD_PRELOAD", "").split(":") if p and "tessera" not in p)
    res = {"tessera": [], "native": []}
    with tempfile.TemporaryDirectory(prefix="tessera-dwc-", dir=a.dir) as tmp:
        for r in range(a.rounds):
            for side in (("tessera", "native") if r % 2 == 0 else ("native", "tessera")):
                if side == "native":
                    Path(tmp, "native.h5").unlink(missing_ok=True)
                    p = subprocess.run([sys.executable, __file__, "--child", "--dir", tmp, "--side", str(a.side)],
                                       env=env, capture_output=True, text=True)
                    line = next((l for l in p.stdout.splitlines() if l.startswith("RESULT ")), None)
                    if p.returncode != 0 or line is None:
                        print(f"native run failed:\n{p.stdout}{p.stderr}", file=sys.stderr)
                        return 1
                    x = json.loads(line[7:])
                else:
                    shutil.rmtree(Path(tmp, "tessera.h5"), ignore_errors=True)
                    x = write(Path(tmp, "tessera.h5"), a.side, False)
                res[side].append(x)
                print(f"round {r} {side:<8} wall {x['wall']:.3f} s  cpu {x['cpu']:.3f} s  data {'ok' if x['ok'] else 'WRONG'}")
    med = {s: {k: statistics.median(x[k] for x in v) for k in ("wall", "cpu")} for s, v in res.items()}
    print(f"median of {a.rounds}: native wall {med['native']['wall']:.3f} s cpu {med['native']['cpu']:.3f} s; "
          f"tessera wall {med['tessera']['wall']:.3f} s cpu {med['tessera']['cpu']:.3f} s; native/tessera wall "
          f"{med['native']['wall'] / med['tessera']['wall']:.2f} cpu {med['native']['cpu'] / med['tessera']['cpu']:.2f}")
    return 0 if all(x["ok"] for v in res.values() for x in v) else 1


if __name__ == "__main__":
    sys.exit(main())
