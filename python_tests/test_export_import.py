"""`tessera export` and `tessera import` (tools/tessera/h5copy.cc, docs/tool.md).

Every comparison is made by native HDF5 itself:
- import: native files made by HDF5's C API (HDF5's own C example programs of the H5T,
  H5D and H5G folders: every datatype class, attributes of each, references old and new,
  committed types, filters, fill values, allocation times, compact/chunked/contiguous/
  external layouts, group storage and creation order) and by h5py (a zoo of types and
  links) — `h5dump` of the container under tessera must print what `h5dump` of the native
  file prints, and h5py must read the same values from both;
- export: `h5dump` of the exported native file (read without the connector) must print
  what `h5dump` of the container prints under tessera, properties (`-p`) included but
  for storage sizes and offsets, which are each format's own;
- round trip: native -> container -> native prints the same as the original.
The only differences allowed are the file names and the numbers h5dump prints for old-
style references (native addresses vs tessera object ids).
"""
from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import numpy as np
import pytest

from conftest import native_env, tool_path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "scripts" / "lib"))
import conformance_examples  # noqa: E402

REF_ADDR = re.compile(r"\b(GROUP|DATASET|DATATYPE|UNKNOWN) \d+ ")
SIZE_LINE = re.compile(r"^\s*(SIZE|OFFSET) .*$", re.M)


def hdf5_prefix() -> Path:
    return Path(os.environ["HDF5_PREFIX"]) if os.environ.get("HDF5_PREFIX") else Path(shutil.which("h5dump")).parent.parent


def h5dump(path: Path, native: bool, *opts) -> str:
    env = native_env() if native else dict(os.environ)
    p = subprocess.run(["h5dump", *opts, path.name], cwd=path.parent, env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, f"h5dump {path}: {p.stderr[-2000:]}"
    text = REF_ADDR.sub(r"\1 <addr> ", p.stdout).replace(path.name, "FILE")
    return SIZE_LINE.sub("", text) if "-p" in opts else text


def tool(*args, check=0):
    p = subprocess.run([tool_path(), *map(str, args)], capture_output=True, text=True, timeout=600)
    if check is not None:
        assert p.returncode == check, f"tessera {' '.join(map(str, args))}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


first_diff = conformance_examples._first_diff  # "line N: native `…` vs tessera `…`"


def check_roundtrip(native: Path, work: Path) -> None:
    """native -> container: same h5dump; container -> native: same again."""
    container = work / (native.stem + ".tsr")
    tool("import", native, container)
    want = h5dump(native, True)
    got = h5dump(container, False)
    assert got == want, f"import of {native.name}: {first_diff(want, got)}"
    assert h5dump(container, False, "-p") == h5dump(native, True, "-p"), f"import of {native.name} (-p)"
    back = work / (native.stem + ".back.h5")
    tool("export", container, back)
    again = h5dump(back, True)
    assert again == want, f"export of {container.name}: {first_diff(want, again)}"
    assert h5dump(back, True, "-p") == h5dump(native, True, "-p"), f"export of {container.name} (-p)"
    v = tool("verify", container, check=None)
    assert v.returncode == 0, v.stdout


# --------------------------------------------------------------------------- C examples
# Programs whose files tessera cannot hold, and why (README, "Not yet").
CANNOT_IMPORT = {
    "h5ex_t_cpxcmpd": "references inside compound",
    "h5ex_t_cpxcmpdatt": "references inside compound",
}


@pytest.fixture(scope="module")
def example_files(tmp_path_factory):
    """{program: [native files it wrote]} for HDF5's C examples of H5T, H5D and H5G."""
    prefix = hdf5_prefix()
    root = prefix / "share" / "hdf5-examples" / "C"
    assert root.is_dir(), f"no HDF5 C examples in {root} (scripts/bootstrap keeps them)"
    plugins = Path(os.environ["HDF5_PLUGIN_PATH"].split(":")[0])
    bindir = plugins.parent / "tool-test" / "examples"  # kept between runs (mtime-checked)
    saved = conformance_examples.FOLDERS
    conformance_examples.FOLDERS = ["H5T", "H5D", "H5G"]
    try:
        errors = conformance_examples.compile_all(prefix, root, bindir)
        progs = [n for _, n, _, _ in conformance_examples.example_sources(root)]
    finally:
        conformance_examples.FOLDERS = saved
    assert not errors, errors
    work = tmp_path_factory.mktemp("examples")
    out = {}
    for name in progs:
        if name in conformance_examples.EXCLUDED:
            continue
        d = work / name
        d.mkdir()
        r = subprocess.run([str(bindir / name)], cwd=d, env=native_env(), capture_output=True, timeout=120)
        files = sorted(p for p in d.glob("*.h5") if p.is_file())
        if r.returncode == 0 and files:
            out[name] = files
    assert len(out) >= 50, sorted(out)
    return out


def test_c_api_files_import_and_export_as_native_prints_them(example_files, tmp_path):
    failures = []
    for name, files in example_files.items():
        for f in files:
            # Beside the original: external raw data files are named relative to it.
            work = f.parent
            if name in CANNOT_IMPORT:
                p = tool("import", f, work / "x.tsr", check=2)
                assert CANNOT_IMPORT[name] in p.stderr and "nothing written" in p.stderr, p.stderr
                assert not (work / "x.tsr").exists()
                continue
            try:
                check_roundtrip(f, work)
            except AssertionError as e:
                failures.append(f"{name}/{f.name}: {str(e)[:400]}")
    assert not failures, "\n".join(failures)


# --------------------------------------------------------------------------- h5py files
ZOO = textwrap.dedent(r"""
    import sys, h5py, numpy as np
    path = sys.argv[1]
    rng = np.random.default_rng(5)
    with h5py.File(path, "w", track_order=True) as f:
        f.attrs["title"] = "zoo"
        f.attrs.create("utf8", "größe", dtype=h5py.string_dtype("utf-8"))
        g = f.create_group("types", track_order=True)
        g["i1"] = np.arange(-5, 5, dtype="i1")
        g["u2be"] = np.arange(10, dtype=">u2")
        g["i8"] = rng.integers(-2**62, 2**62, size=(7, 3))
        g["f2"] = np.linspace(0, 1, 9, dtype="f2")
        g["f8be"] = np.linspace(-1, 1, 11).astype(">f8")
        g["bool"] = np.array([True, False, True])
        g["c16"] = (np.arange(4) + 1j * np.arange(4)).astype("c16")
        g["fixed"] = np.array([b"ab", b"cde", b""], dtype="S3")
        g.create_dataset("vstr", data=["x", "yy", "", "zzzz"], dtype=h5py.string_dtype())
        g.create_dataset("vbytes", data=[b"a", b"bc"], dtype=h5py.string_dtype("ascii"))
        vl = g.create_dataset("vlen", (3,), dtype=h5py.vlen_dtype("i4"))
        vl[0] = [1, 2, 3]; vl[1] = []; vl[2] = np.arange(100)
        e = h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 42}, basetype="u1")
        g.create_dataset("enum", data=np.array([0, 42, 1], dtype="u1"), dtype=e)
        cdt = np.dtype([("x", "<i4"), ("y", "<f8", (2, 3)), ("name", "S5"), ("inner", [("a", "u1"), ("b", "<i2")])])
        cd = np.zeros(4, dtype=cdt); cd["x"] = [1, 2, 3, 4]; cd["y"] = 0.5; cd["name"] = b"n"; cd["inner"]["b"] = -7
        g["compound"] = cd
        g["array"] = np.arange(24, dtype="i2").reshape(4, 2, 3)
        g.create_dataset("arrtype", data=np.zeros(2, dtype=np.dtype(("<f4", (3,)))))
        g.create_dataset("opaque", data=np.array([b"\x01\x02\x03\x04"] * 3, dtype="V4"))
        g.create_dataset("scalar", data=np.float64(3.25))
        g.create_dataset("empty", shape=(0, 4), maxshape=(None, 4), dtype="f4", chunks=(8, 4))
        g.create_dataset("null", data=h5py.Empty("i4"))
        d = f.create_group("layout")
        c = d.create_dataset("chunked", shape=(100, 60), maxshape=(None, 60), chunks=(16, 16), dtype="<i4",
                             compression="gzip", compression_opts=7, shuffle=True, fletcher32=True, fillvalue=-3)
        c[:50, :30] = rng.integers(0, 1000, size=(50, 30))
        c.resize((120, 60))
        d.create_dataset("contig", data=rng.random((40, 25)))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        cid = h5py.h5d.create(d.id, b"compact", h5py.h5t.STD_I64LE, h5py.h5s.create_simple((10,)), dcpl=dcpl)
        cid.write(h5py.h5s.ALL, h5py.h5s.ALL, np.arange(10, dtype="<i8"))
        s = d.create_dataset("sparse", shape=(1000,), chunks=(100,), dtype="u8", fillvalue=9)
        s[[3, 500, 999]] = [1, 2, 3]
        d.create_dataset("scaleoff", data=np.arange(100, dtype="i4"), chunks=(50,), scaleoffset=0)
        t = f.create_group("refs")
        t["target"] = np.arange(12).reshape(3, 4)
        r = t.create_dataset("objref", (3,), dtype=h5py.ref_dtype)
        r[0] = f["types"].ref; r[1] = t["target"].ref
        rr = t.create_dataset("regref", (2,), dtype=h5py.regionref_dtype)
        rr[0] = t["target"].regionref[0:2, 1:3]; rr[1] = t["target"].regionref[2, :]
        t.attrs["aref"] = f["layout"].ref
        f["ctype"] = np.dtype([("a", "<i4"), ("b", "<f4")])
        f.create_dataset("typed", data=np.zeros(3, dtype=f["ctype"].dtype), dtype=f["ctype"])
        f["typed"].attrs.create("tattr", np.zeros(2, dtype=f["ctype"].dtype), dtype=f["ctype"])
        f["ctype"].attrs["about"] = "a committed type"
        f["alias"] = f["types/i1"]
        f["soft"] = h5py.SoftLink("/types/vstr")
        f["dangling"] = h5py.SoftLink("/nowhere")
        f["ext"] = h5py.ExternalLink("other.h5", "/x")
        for k in ["zeta", "alpha", "mid"]:  # creation order differs from name order
            f["types"].attrs[k] = len(k)
        f["types/i1"].attrs["units"] = np.array([1.5, 2.5])
""")


def _values_equal(a, b, name):
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        def visit(n, oa):
            ob = fb[n]
            assert type(oa) is type(ob), n
            if isinstance(oa, h5py.Dataset):
                assert oa.dtype == ob.dtype and oa.shape == ob.shape, n
                if oa.shape is None or h5py.check_dtype(ref=oa.dtype) is not None:
                    return
                va, vb = oa[()], ob[()]
                if oa.dtype.kind == "O":
                    assert [x.tolist() if hasattr(x, "tolist") else x for x in np.ravel(va)] == \
                           [x.tolist() if hasattr(x, "tolist") else x for x in np.ravel(vb)], n
                else:
                    np.testing.assert_array_equal(va, vb, err_msg=f"{name}: {n}")
            for k in oa.attrs:
                if h5py.check_dtype(ref=oa.attrs.get_id(k).dtype) is None:
                    np.testing.assert_array_equal(oa.attrs[k], ob.attrs[k], err_msg=f"{name}: {n}@{k}")
        fa.visititems(visit)


def test_h5py_zoo_imports_and_exports_as_native_prints_it(tessera_env, tmp_path):
    script = tmp_path / "zoo.py"
    script.write_text(ZOO)
    native = tmp_path / "zoo.h5"
    subprocess.run([sys.executable, str(script), str(native)], env=native_env(), check=True)
    check_roundtrip(native, tmp_path)
    # h5py (through the connector) reads the same values from the container.
    _values_equal(native, tmp_path / "zoo.tsr", "zoo")


def test_container_exports_as_tessera_prints_it(tessera_env, tmp_path):
    """A container written under tessera (overwrites, erases, an extent shrink, many
    fragments): the exported file prints the same, data and properties."""
    import tessera

    c = tmp_path / "c.h5"
    script = tmp_path / "zoo.py"
    script.write_text(ZOO)
    subprocess.run([sys.executable, str(script), str(c)], check=True)  # the zoo, written by tessera
    rng = np.random.default_rng(9)
    with h5py.File(c, "a") as f:
        d = f.create_dataset("frames", shape=(8, 64, 64), maxshape=(None, 64, 64), chunks=(1, 32, 32), dtype="u2",
                             compression="gzip")
        for t in range(8):
            d[t] = rng.integers(0, 4000, size=(64, 64))
            f.flush()
        d[2, 10:20, 10:20] = 7
        tessera.erase(d, (3, slice(0, 32), slice(0, 32)))
        d.resize((6, 64, 64))
    assert h5py.File(c, "r")["frames"].shape == (6, 64, 64)
    out = tmp_path / "out.h5"
    p = tool("export", c, out)
    assert "exported" in p.stdout
    want = h5dump(c, False)
    got = h5dump(out, True)
    assert got == want, first_diff(want, got)
    assert h5dump(out, True, "-p") == h5dump(c, False, "-p")
    _values_equal(c, out, "export")


def test_export_and_import_refuse_bad_input(tessera_env, tmp_path):
    c = tmp_path / "c.h5"
    with h5py.File(c, "w") as f:
        f["d"] = np.arange(5)
    native = tmp_path / "n.h5"
    subprocess.run([sys.executable, "-c", f"import h5py; h5py.File({str(native)!r}, 'w')['x'] = 1"],
                   env=native_env(), check=True)
    p = tool("export", native, tmp_path / "o.h5", check=2)
    assert "is a native HDF5 file" in p.stderr and "tessera import" in p.stderr
    p = tool("import", c, tmp_path / "o.tsr", check=2)
    assert "is a tessera container" in p.stderr and "tessera export" in p.stderr
    p = tool("import", tmp_path / "none.h5", tmp_path / "o.tsr", check=2)
    assert "no such file" in p.stderr
    (tmp_path / "o.h5").write_bytes(b"")
    p = tool("export", c, tmp_path / "o.h5", check=2)
    assert "exists" in p.stderr and "--force" in p.stderr
    tool("export", c, tmp_path / "o.h5", "--force")
    assert h5dump(tmp_path / "o.h5", True) == h5dump(c, False)
    tool("import", native, c, "--force")  # replaces the container
    assert h5dump(c, False) == h5dump(native, True)
    (tmp_path / "plain").mkdir()
    p = tool("import", native, tmp_path / "plain", "--force", check=2)
    assert "not a tessera container" in p.stderr


def test_export_streams_with_bounded_memory(tessera_env, tmp_path):
    """256 MiB of data through export and import: the tool's peak memory stays far below
    the data's size (slabs and chunks, not whole datasets)."""
    c = tmp_path / "big.h5"
    with h5py.File(c, "w") as f:
        d = f.create_dataset("d", shape=(4096, 8192), chunks=(256, 8192), dtype="<f8")
        for i in range(0, 4096, 256):
            d[i:i + 256] = np.full((256, 8192), i, dtype="<f8")
    out = tmp_path / "big_native.h5"
    code = textwrap.dedent(f"""
        import resource, subprocess, sys
        r = subprocess.run(sys.argv[1:])
        print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
        sys.exit(r.returncode)
    """)
    env = dict(os.environ)
    if "ASAN_OPTIONS" in env:  # scripts/test --sanitize: ASan's quarantine would hold freed slabs
        env["ASAN_OPTIONS"] += ":quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
    for args in (["export", c, out], ["import", out, tmp_path / "again.tsr"]):
        p = subprocess.run([sys.executable, "-c", code, tool_path(), *map(str, args)], capture_output=True, text=True,
                           env=env)
        assert p.returncode == 0, p.stderr
        peak_mib = int(p.stdout.strip().splitlines()[-1]) / 1024
        assert peak_mib < 200, f"tessera {args[0]}: peak RSS {peak_mib:.0f} MiB for 256 MiB of data"
    with h5py.File(tmp_path / "again.tsr", "r") as f:
        assert f["d"][4095, 0] == 3840 and f["d"][0, 8191] == 0
