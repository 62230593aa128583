"""h5dump and h5ls print a tessera container with the same content as its native copy.

One h5py script creates the same content twice — in a native HDF5 file (child process
without HDF5_VOL_CONNECTOR) and in a tessera container (child with the test environment:
HDF5_VOL_CONNECTOR=tessera, HDF5_PLUGIN_PATH, the compat LD_PRELOAD library). Then HDF5's
own h5dump and h5ls (from the HDF5 build in HDF5_PREFIX) print both, each under the
environment of its side, and the outputs must be equal after normalizing ONLY what
legitimately differs between the two storage formats — each rule in NORMALIZATIONS says why.
Both files are named data.h5 and the tools run in each file's directory, so the file name
printed is the same on both sides without any rewriting.
"""
from __future__ import annotations

import difflib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

CREATE = r'''
import sys
import h5py
import numpy as np

with h5py.File(sys.argv[1], "w") as f:
    f.attrs["title"] = "tessera h5tools comparison"          # variable-length UTF-8 string
    f.attrs["version"] = np.int64(3)
    f.attrs["fixed"] = np.bytes_(b"fixed-len")                # fixed-length ASCII string
    f.attrs["ratios"] = np.array([0.5, 1.5, 2.5])
    f.attrs["strs"] = ["x", "yy", "zzz"]                       # array of vlen strings
    g = f.create_group("grp")
    g.attrs["purpose"] = "chunked data"
    sub = g.create_group("sub")
    ints = g.create_dataset("ints", shape=(20, 30), dtype="<i4", chunks=(5, 10), compression="gzip",
                            compression_opts=4, fillvalue=-1)
    ints[2:12, 5:25] = np.arange(200, dtype="<i4").reshape(10, 20)   # the rest shows the fill value
    ints.attrs["units"] = "counts"
    ints.attrs["scale"] = 0.25
    f.create_dataset("grp/floats", data=np.linspace(0, 1, 50))
    u8 = sub.create_dataset("u8", data=(np.arange(120) % 251).astype("u1").reshape(4, 5, 6),
                            chunks=(2, 5, 3), shuffle=True, compression="gzip")
    u8.attrs["tags"] = np.array([1, 2, 3], dtype="<i2")
    f.create_dataset("fixed_str", data=np.array([b"alpha", b"beta", b"gamma"], dtype="S8"))
    f.create_dataset("vlen_str", data=["one", "two", "three"], dtype=h5py.string_dtype())
    ct = np.dtype([("x", "<i4"), ("y", "<f8"), ("name", "S6")])
    f.create_dataset("compound", data=np.array([(1, 1.5, b"a"), (2, 2.5, b"bb"), (3, 3.5, b"ccc")], dtype=ct))
    r = f.create_dataset("resizable", shape=(10,), maxshape=(None,), chunks=(4,), dtype="<f4", fillvalue=7.0)
    r[:] = np.arange(10, dtype="<f4")
    r.resize((14,))
    f.create_dataset("scalar", data=np.float64(42.5))
    f.create_dataset("sparse", shape=(64, 64), dtype="<i8", chunks=(16, 16), fillvalue=5)[3, 4] = 9
    f.create_dataset("empty", shape=(0,), dtype="<i4")
    f["pair_t"] = np.dtype([("a", "<i2"), ("b", "<f4")])     # committed datatype
    f.create_dataset("pairs", data=np.array([(1, 0.5), (2, 1.5)], dtype=f["pair_t"].dtype))
    f["link_to_ints"] = h5py.SoftLink("/grp/ints")
    f["grp/sub/up"] = h5py.SoftLink("/grp")
    f["dangling"] = h5py.SoftLink("/nowhere")
'''

# (pattern, replacement, why). Applied to both outputs, line by line (re.MULTILINE).
NORMALIZATIONS = [
    # h5dump -p: STORAGE_LAYOUT { ... SIZE n [(r:1 COMPRESSION)] / OFFSET n }. Bytes on disk and
    # the file offset of contiguous data are properties of the storage format (tessera stores
    # fragments with headers and checksums, in a directory); the layout kind and chunk dims
    # (CONTIGUOUS / CHUNKED ( 5, 10 )) on the neighbouring lines are NOT normalized.
    (r"^(\s*)SIZE \d+( \([0-9.]+:1 COMPRESSION\))?$", r"\1SIZE <bytes stored>", "storage size"),
    # Native prints "OFFSET n" (file offset of contiguous data) after SIZE; a container has no
    # single file offset, so tessera prints no such line: drop the line.
    (r"^\s*OFFSET (\d+|HADDR_UNDEF)\n", "", "contiguous data's file offset"),
    # h5ls -v: "Location: 1:800" is the object's address (native) or token (tessera).
    (r"^(\s*Location:\s+)\S+$", r"\1<object token>", "object addresses/tokens"),
    # h5ls -v prints a dataset whose type is a committed datatype as "shared-<fileno>:<address
    # or token of the committed type>".
    (r"\bshared-(\d+):\w+", r"shared-\1:<object token>", "committed type's address/token"),
    # h5ls -v: "Storage: N logical bytes, M allocated bytes, P% utilization": logical bytes
    # are kept; allocated bytes and their ratio are storage-format facts like SIZE above.
    (r"^(\s*Storage:\s+\d+ logical bytes), \d+ allocated bytes, [0-9.]+% utilization$",
     r"\1, <allocated bytes>", "allocated bytes"),
    # h5ls -v: 'Opened "data.h5" with sec2 driver.' names the virtual file driver; a tessera
    # container is not accessed through a VFD, so the driver name legitimately differs.
    (r'^(Opened "[^"]*" with) .*driver\.$', r"\1 <driver> driver.", "file driver name"),
]

# (tool, arguments). Each runs in the directory of data.h5 on both sides.
CASES = [
    ("h5dump", ["-p", "data.h5"]),                                  # everything, with properties
    ("h5dump", ["-n", "data.h5"]),                                  # contents listing
    ("h5dump", ["-A", "data.h5"]),                                  # header and attributes only
    ("h5dump", ["-g", "/grp", "data.h5"]),
    ("h5dump", ["-a", "/grp/ints/units", "data.h5"]),
    ("h5dump", ["-d", "/grp/ints", "-s", "2,5", "-c", "3,4", "data.h5"]),           # hyperslab
    ("h5dump", ["-d", "/sparse", "-s", "0,0", "-S", "16,16", "-c", "4,4", "-k", "2,2", "data.h5"]),
    ("h5dump", ["-d", "/vlen_str", "data.h5"]),
    ("h5ls", ["-r", "-v", "data.h5"]),                              # recursive, verbose
    ("h5ls", ["-r", "-d", "data.h5"]),                              # recursive, with data
    ("h5ls", ["data.h5/grp"]),                                      # an object path after the file
    ("h5ls", ["-r", "-S", "data.h5/grp/sub"]),
]
# Not compared: `h5ls -a` (--address) calls H5Ddebug, a native-only debugging entry point
# that HDF5 does not route through the VOL layer.


def _tools_bin() -> Path:
    prefix = os.environ.get("HDF5_PREFIX") or str(Path.home() / ".cache/tessera/hdf5-1.14.5-mpi")
    return Path(prefix) / "bin"


def _compat_lib(tessera_env) -> Path | None:
    build = Path(tessera_env["plugin"]).resolve().parent.parent
    for p in (build / "compat" / "libtessera_compat.so", build / "plugins" / "libtessera_compat.so"):
        if p.is_file():
            return p
    return None


def _envs(tessera_env):
    base = dict(os.environ)
    preload = [p for p in base.get("LD_PRELOAD", "").split(":") if p]
    native = {k: v for k, v in base.items() if k not in ("HDF5_VOL_CONNECTOR", "LD_PRELOAD")}
    native_preload = [p for p in preload if "tessera_compat" not in p]
    if native_preload:
        native["LD_PRELOAD"] = ":".join(native_preload)
    tessera = dict(base)
    compat = _compat_lib(tessera_env)
    if compat and not any("tessera_compat" in p for p in preload):
        tessera["LD_PRELOAD"] = ":".join([str(compat), *preload])
    return {"native": native, "tessera": tessera}


def normalize(text: str) -> str:
    for pattern, repl, _why in NORMALIZATIONS:
        text = re.sub(pattern, repl, text, flags=re.MULTILINE)
    return text


@pytest.fixture(scope="module")
def sides(tessera_env, tmp_path_factory):
    root = tmp_path_factory.mktemp("h5tools")
    envs = _envs(tessera_env)
    for side, env in envs.items():
        (root / side).mkdir()
        proc = subprocess.run([sys.executable, "-c", CREATE, "data.h5"], cwd=root / side, env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"creating the {side} file failed:\n{proc.stdout}{proc.stderr}"
    # The connector really differed: a tessera container is a directory, a native file a file
    # starting with the HDF5 signature.
    assert (root / "tessera" / "data.h5").is_dir()
    assert (root / "native" / "data.h5").read_bytes()[:8] == b"\x89HDF\r\n\x1a\n"
    return root, envs


@pytest.mark.parametrize("tool,args", CASES, ids=[f"{t} {' '.join(a)}" for t, a in CASES])
def test_tool_prints_the_same_content(sides, tool, args):
    root, envs = sides
    exe = _tools_bin() / tool
    assert exe.is_file(), f"{exe} not found (HDF5_PREFIX={os.environ.get('HDF5_PREFIX')})"
    out = {}
    for side, env in envs.items():
        proc = subprocess.run([str(exe), *args], cwd=root / side, env=env, capture_output=True, text=True,
                              timeout=120)
        out[side] = proc
        assert proc.returncode >= 0, f"{tool} {' '.join(args)} crashed on {side} (signal {-proc.returncode})"
    n, t = out["native"], out["tessera"]
    assert t.returncode == n.returncode, (
        f"exit status native {n.returncode}, tessera {t.returncode}\n--- tessera stderr:\n{t.stderr}")
    for stream in ("stdout", "stderr"):
        a, b = normalize(getattr(n, stream)), normalize(getattr(t, stream))
        diff = "".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True), "native", "tessera", n=3))
        assert a == b, f"{tool} {' '.join(args)}: {stream} differs after normalization:\n{diff}"
    assert n.stdout.strip(), "the tool printed nothing"
