"""h5py attributes on tessera, compared with numpy and with native HDF5.

The pytest process runs with HDF5_VOL_CONNECTOR=tessera (scripts/test sets it), so every
file created here is a tessera container (a directory, which the tests assert).  The
native reference runs the same scenario (SCENARIO below) in a child process without
HDF5_VOL_CONNECTOR; both dump what h5py sees — names in iteration order, values, dtypes,
shapes — and the dumps must be equal.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import numpy as np
import pytest

# Runs in a child process (native or tessera): writes a file, modifies attributes,
# reopens it and prints a JSON description of every attribute h5py sees.
SCENARIO = textwrap.dedent(r'''
    import json, sys
    import h5py, numpy as np

    def describe(attrs):
        out = []
        for name, value in attrs.items():          # H5Aiterate2 underneath
            if isinstance(value, h5py.Empty):
                out.append([name, "Empty", value.dtype.str, attrs.get_id(name).dtype.str])
                continue
            v = np.asarray(value)
            if v.dtype.kind == "O":
                payload = [x.decode() if isinstance(x, bytes) else
                           x.tolist() if isinstance(x, np.ndarray) else x for x in v.ravel().tolist()]
            elif v.dtype.names:
                payload = [list(map(lambda y: y.decode() if isinstance(y, bytes) else y, r.tolist()))
                           for r in v.ravel()]
            elif v.dtype.kind == "S":
                payload = [x.decode("latin-1") for x in v.ravel().tolist()]
            else:
                payload = v.ravel().tolist()
            out.append([name, type(value).__name__, v.dtype.str, list(v.shape), payload,
                        attrs.get_id(name).dtype.str])
        return out

    path = sys.argv[1]
    with h5py.File(path, "w", track_order=False) as f:
        f.attrs["int"] = 1
        f.attrs["float"] = 2.5
        f.attrs["str"] = "hello"
        f.attrs["unicode"] = "h\u00e9llo w\u00f6rld"
        f.attrs["bytes"] = b"raw bytes"
        f.attrs["strlist"] = ["a", "bb", "ccc"]
        f.attrs["array"] = np.arange(12, dtype="f4").reshape(3, 4)
        f.attrs["bool"] = np.bool_(True)
        f.attrs.create("i2", data=[1, 2, 3], dtype="i2")
        f.attrs.create("fixed", data=np.array([b"ab", b"cde"], dtype="S5"))
        f.attrs.create("cmpd", data=np.array([(1, 2.5), (3, 4.5)], dtype=[("a", "<i4"), ("b", "<f8")]))
        f.attrs["empty"] = h5py.Empty("f8")
        f.attrs.create("vlen_seq", data=np.array([np.arange(3), np.arange(1)], dtype=object),
                       dtype=h5py.vlen_dtype(np.dtype("i4")))
        f.attrs["zeta"] = 0
        f.attrs["alpha"] = 0
        g = f.create_group("g", track_order=True)
        for k in ["z", "a", "m", "b"]:
            g.attrs[k] = k * 2
        d = f.create_dataset("d", data=np.arange(5))
        d.attrs["units"] = "m/s"
        d.attrs["scale"] = np.float32(0.5)
        # modify / delete / overwrite with another type
        f.attrs["int"] = 2
        f.attrs.modify("float", 3.5)
        f.attrs["zeta"] = "now a string"
        del f.attrs["alpha"]
        del g.attrs["m"]
        g.attrs["m"] = "again"
        # Creation orders are never handed out twice, not even after the attribute that
        # holds the largest one is deleted and the file reopened (native: max_crt_idx).
        h = f.create_group("h", track_order=True)
        for k in ["x", "y", "z"]:
            h.attrs[k] = 1
        del h.attrs["z"]
    with h5py.File(path, "r+") as f:
        del f["h"].attrs["y"]
        f["h"].attrs["w"] = 2
    with h5py.File(path, "r") as f:
        result = {
            "root": describe(f.attrs),
            "root_len": len(f.attrs),
            "root_in": ["int" in f.attrs, "alpha" in f.attrs],
            "g": describe(f["g"].attrs),
            "g_keys": list(f["g"].attrs),
            "d": describe(f["d"].attrs),
            "h_corder": [[k, h5py.h5a.get_info(f["h"].id, k.encode()).corder] for k in f["h"].attrs],
        }
    print(json.dumps(result, sort_keys=True))
''')


def run_scenario(path: Path, native: bool) -> dict:
    env = dict(os.environ)
    if native:
        env.pop("HDF5_VOL_CONNECTOR", None)
    proc = subprocess.run([sys.executable, "-c", SCENARIO, str(path)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, f"scenario failed ({'native' if native else 'tessera'}):\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_same_as_native(tmp_path, tessera_env):
    native = run_scenario(tmp_path / "native.h5", native=True)
    tess = run_scenario(tmp_path / "tessera.h5", native=False)
    assert (tmp_path / "native.h5").is_file(), "the native run must make an HDF5 file"
    assert (tmp_path / "tessera.h5").is_dir(), "the tessera run must make a tessera container"
    for key in native:
        assert tess[key] == native[key], f"{key}: tessera {tess[key]!r} != native {native[key]!r}"
    # Iteration order: name order at the root, creation order in the tracking group.
    assert native["g_keys"] == ["z", "a", "b", "m"]


@pytest.fixture
def tfile(tmp_path, tessera_env):
    path = tmp_path / "t.h5"
    with h5py.File(path, "w") as f:
        yield f, path
    assert path.is_dir(), "not a tessera container: HDF5 fell back to native"


def test_scalars_and_arrays(tfile):
    f, path = tfile
    f.attrs["x"] = 1
    f.attrs["y"] = np.float64(2.5)
    arr = np.random.default_rng(1).normal(size=(4, 5))
    f.attrs["arr"] = arr
    f.attrs["u8"] = np.arange(10, dtype=np.uint8)
    assert f.attrs["x"] == 1 and f.attrs["x"].dtype == np.int64
    assert f.attrs["y"] == 2.5
    np.testing.assert_array_equal(f.attrs["arr"], arr)
    np.testing.assert_array_equal(f.attrs["u8"], np.arange(10, dtype=np.uint8))
    assert f.attrs["u8"].dtype == np.uint8


def test_strings(tfile):
    f, path = tfile
    f.attrs["s"] = "hello"
    f.attrs["u"] = "\u00fcnic\u00f6de \u2603"
    f.attrs["b"] = b"bytes"
    f.attrs["ls"] = ["one", "two", "three"]
    f.attrs.create("fixed", np.array([b"abc", b"de"], dtype="S4"))
    f.attrs["long"] = "x" * 100000
    assert f.attrs["s"] == "hello"
    assert f.attrs["u"] == "\u00fcnic\u00f6de \u2603"
    assert f.attrs.get_id("s").dtype == h5py.string_dtype("utf-8")
    assert f.attrs["b"] in (b"bytes", "bytes")
    assert list(f.attrs["ls"]) == ["one", "two", "three"]
    np.testing.assert_array_equal(f.attrs["fixed"], np.array([b"abc", b"de"], dtype="S4"))
    assert f.attrs["long"] == "x" * 100000


def test_compound_vlen_empty(tfile):
    f, path = tfile
    dt = np.dtype([("a", "<i4"), ("b", "<f8"), ("c", "S3")])
    data = np.array([(1, 1.5, b"x"), (2, 2.5, b"yz")], dtype=dt)
    f.attrs["c"] = data
    np.testing.assert_array_equal(f.attrs["c"], data)
    vdt = h5py.vlen_dtype(np.dtype("f8"))
    f.attrs.create("v", data=np.array([np.arange(3.0), np.array([]), np.arange(5.0)], dtype=object), dtype=vdt)
    v = f.attrs["v"]
    assert [list(x) for x in v] == [[0, 1, 2], [], [0, 1, 2, 3, 4]]
    f.attrs["e"] = h5py.Empty("i4")
    assert isinstance(f.attrs["e"], h5py.Empty)
    # created but never written (low-level API): reads as zeros, like native
    h5py.h5a.create(f.id, b"z", h5py.h5t.STD_I32LE, h5py.h5s.create_simple((3,))).close()
    np.testing.assert_array_equal(f.attrs["z"], np.zeros(3, dtype="i4"))


def test_dict_ops_and_persistence(tfile):
    f, path = tfile
    g = f.create_group("grp")
    d = g.create_dataset("ds", data=np.arange(3))
    for obj in (f, g, d):
        obj.attrs["k1"] = 1
        obj.attrs["k2"] = "two"
        obj.attrs["k3"] = [3.0, 3.5]
        assert "k1" in obj.attrs and "nope" not in obj.attrs
        assert len(obj.attrs) == 3
        assert sorted(obj.attrs.keys()) == ["k1", "k2", "k3"]
        del obj.attrs["k1"]
        assert "k1" not in obj.attrs and len(obj.attrs) == 2
        with pytest.raises(KeyError):
            del obj.attrs["k1"]
        with pytest.raises(KeyError):
            obj.attrs["k1"]
        obj.attrs["k2"] = 22  # overwrite with another type
        obj.attrs.modify("k3", [9.0, 9.5])
    f.close()
    with h5py.File(path, "r") as f2:
        for name in ("/", "/grp", "/grp/ds"):
            a = dict(f2[name].attrs)
            assert set(a) == {"k2", "k3"}
            assert a["k2"] == 22
            np.testing.assert_array_equal(a["k3"], [9.0, 9.5])
            assert [k for k, _ in f2[name].attrs.items()] == sorted(a)
        with pytest.raises((OSError, RuntimeError, KeyError)):
            f2.attrs["new"] = 1  # read-only file


def test_creation_order(tfile):
    f, path = tfile
    g = f.create_group("ordered", track_order=True)
    names = ["zz", "aa", "mm", "bb"]
    for n in names:
        g.attrs[n] = n
    assert list(g.attrs) == names
    assert list(f.create_group("plain").attrs) == []
    f["plain"].attrs["b"] = 1
    f["plain"].attrs["a"] = 1
    assert list(f["plain"].attrs) == ["a", "b"]


def test_committed_type_attrs(tfile):
    f, path = tfile
    f["mytype"] = np.dtype([("x", "<i8"), ("y", "<f4")])
    t = f["mytype"]
    assert isinstance(t, h5py.Datatype)
    t.attrs["doc"] = "a committed compound"
    assert t.attrs["doc"] == "a committed compound"
    ds = f.create_dataset("uses_type", shape=(2,), dtype=t)
    assert ds.dtype == np.dtype([("x", "<i8"), ("y", "<f4")])
    f.close()
    with h5py.File(path, "r") as f2:
        assert f2["mytype"].dtype == np.dtype([("x", "<i8"), ("y", "<f4")])
        assert dict(f2["mytype"].attrs) == {"doc": "a committed compound"}
