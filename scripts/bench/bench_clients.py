#!/usr/bin/env python3
"""The client-level features of issue 11, timed on tessera and on native HDF5.

    scripts/tessera-env run .venv/bin/python scripts/bench/bench_clients.py [--mib M] [--repeat R]

Run under the tessera environment, it runs each workload on a tessera container and then
runs ITSELF again in a child process without HDF5_VOL_CONNECTOR and the compat preload
(native HDF5), and prints both timings (best of R), the ratio native/tessera (above 1:
tessera faster) and whether both read back the same values.  Workloads, each on about M
MiB of float32 in 64x64 chunks, written whole and read back from a reopened file:
  - scaleoffset: scale-offset D-scale 2 (lossy; tessera runs HDF5's own pipeline over
    each chunk, vol/model/value_filters.h);
  - zfp: hdf5plugin's ZFP at rate 8 (lossy plugin filter, same path);
  - transform: write and read through a data transform "x*2+1" (vol/types/transform.h);
  - vlen_compound: 100,000 records {int64, vlen string, float64} written and read in
    another memory layout (conversion, vol/types/vlen_convert.h) — independent of --mib;
  - references: 20,000 object references in a dataset, written and dereferenced.
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
from pathlib import Path

import h5py
import numpy as np


def digest(a) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]


def timed(fn, repeat):
    best, out = None, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    return best, out


def workloads(dirpath: Path, mib: float, repeat: int):
    import hdf5plugin  # noqa: F401  (registers the plugin filters)

    n = max(64, int((mib * 2**20 / 4) ** 0.5) // 64 * 64)
    rng = np.random.default_rng(11)
    data = np.cumsum(rng.standard_normal((n, n)), axis=1).astype("f4")
    results = {}

    def filtered(name, **kw):
        path = dirpath / f"{name}.h5"

        def write():
            with h5py.File(path, "w") as f:
                f.create_dataset("d", data=data, chunks=(64, 64), **kw)

        def read():
            with h5py.File(path, "r") as f:
                return f["d"][...]

        tw, _ = timed(write, repeat)
        tr, back = timed(read, repeat)
        results[name] = {"write": tw, "read": tr, "check": digest(back)}

    filtered("scaleoffset", scaleoffset=2)
    filtered("zfp", **hdf5plugin.Zfp(rate=8))

    # h5py has no binding for H5Pset_data_transform: call the libhdf5 h5py uses.
    import ctypes
    libs = {line.split()[-1] for line in open("/proc/self/maps") if "/libhdf5.so" in line}
    if len(libs) != 1:
        raise RuntimeError(f"expected one libhdf5 in the process, found {sorted(libs)}")
    hdf5 = ctypes.CDLL(libs.pop())  # the one h5py loaded (already open: no second copy)
    set_xform = hdf5.H5Pset_data_transform
    set_xform.argtypes = [ctypes.c_int64, ctypes.c_char_p]

    def xform_dxpl(expr: bytes):
        dxpl = h5py.h5p.create(h5py.h5p.DATASET_XFER)
        if set_xform(dxpl.id, expr) < 0:
            raise RuntimeError("H5Pset_data_transform failed")
        return dxpl

    path = dirpath / "transform.h5"

    def xwrite():
        with h5py.File(path, "w") as f:
            d = f.create_dataset("d", shape=data.shape, dtype="f4", chunks=(64, 64))
            d.id.write(h5py.h5s.ALL, h5py.h5s.ALL, data, dxpl=xform_dxpl(b"x*2+1"))

    def xread():
        with h5py.File(path, "r") as f:
            out = np.empty(data.shape, "f4")
            f["d"].id.read(h5py.h5s.ALL, h5py.h5s.ALL, out, dxpl=xform_dxpl(b"(x-1)/2"))
            return out

    tw, _ = timed(xwrite, repeat)
    tr, back = timed(xread, repeat)
    results["transform"] = {"write": tw, "read": tr, "check": digest(back)}

    m = 100_000
    ftype = np.dtype([("id", ">i8"), ("name", h5py.string_dtype()), ("value", ">f8")])
    mtype = np.dtype([("value", "<f8"), ("id", "<i8"), ("name", h5py.string_dtype())])
    recs = np.empty(m, mtype)
    recs["value"] = np.arange(m) / 7
    recs["id"] = np.arange(m)
    recs["name"] = [f"station-{i % 997}" for i in range(m)]
    path = dirpath / "vlen.h5"

    def cwrite():
        with h5py.File(path, "w") as f:
            f.create_dataset("r", shape=(m,), dtype=ftype, chunks=(8192,))
            f["r"][...] = recs          # converted from the memory layout

    def cread():
        with h5py.File(path, "r") as f:
            out = np.empty(m, mtype)
            f["r"].read_direct(out)     # converted to the memory layout
            sample = out[:: max(1, m // 1000)]
            return np.frombuffer(json.dumps([[float(v), int(i), n.decode() if isinstance(n, bytes) else n]
                                             for v, i, n in sample.tolist()]).encode(), "u1")

    tw, _ = timed(cwrite, repeat)
    tr, back = timed(cread, repeat)
    results["vlen_compound"] = {"write": tw, "read": tr, "check": digest(back)}

    k = 20_000
    path = dirpath / "refs.h5"

    def rwrite():
        with h5py.File(path, "w") as f:
            g = [f.create_group(f"g{i}") for i in range(100)]
            refs = np.array([g[i % 100].ref for i in range(k)], dtype=h5py.ref_dtype)
            f.create_dataset("refs", data=refs)

    def rread():
        with h5py.File(path, "r") as f:
            refs = f["refs"][...]
            return np.array([f[r].name.encode() for r in refs[:: max(1, k // 2000)]])

    tw, _ = timed(rwrite, repeat)
    tr, back = timed(rread, repeat)
    results["references"] = {"write": tw, "read": tr, "check": digest(back)}
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mib", type=float, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tessera-bench-clients-") as tmp:
        mine = workloads(Path(tmp), a.mib, a.repeat)
    if a.child:
        print(json.dumps(mine))
        return 0
    # Native: no connector, no compat preload, and no plugin directory (HDF5 also looks
    # for filter plugins there and would load libtessera.so while searching).
    env = {k: v for k, v in os.environ.items() if k not in ("HDF5_VOL_CONNECTOR", "LD_PRELOAD", "HDF5_PLUGIN_PATH")}
    r = subprocess.run([sys.executable, __file__, "--mib", str(a.mib), "--repeat", str(a.repeat), "--child"],
                       env=env, capture_output=True, text=True, check=True)
    native = json.loads(r.stdout.strip().splitlines()[-1])
    tessera_side = os.environ.get("HDF5_VOL_CONNECTOR", "native")
    print(f"bench_clients: {a.mib:g} MiB per filtered dataset, best of {a.repeat}; this run: {tessera_side}")
    print(f"{'workload':15s} {'step':6s} {'native s':>10s} {'tessera s':>10s} {'native/tessera':>15s}  same values")
    ok = True
    for w, t in mine.items():
        n = native[w]
        same = n["check"] == t["check"]
        ok &= same
        for step in ("write", "read"):
            print(f"{w:15s} {step:6s} {n[step]:10.3f} {t[step]:10.3f} {n[step] / t[step]:15.2f}  {'yes' if same else 'NO'}")
    return 0 if ok and tessera_side == "tessera" else 1


if __name__ == "__main__":
    sys.exit(main())
