"""h5py datasets on tessera, compared with numpy models and with native HDF5.

The pytest process runs with HDF5_VOL_CONNECTOR=tessera (scripts/test sets it), so every
file created here is a tessera container (a directory — asserted).  The native reference
runs the same scenario (SCENARIO below) in a child process without HDF5_VOL_CONNECTOR;
both pickle everything h5py observes (every array read, shapes, dtypes, dcpl-derived
properties) and the two results must be equal.
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import numpy as np
import pytest

SCENARIO = textwrap.dedent(r'''
    import pickle, sys
    import h5py, numpy as np

    path, out_path = sys.argv[1], sys.argv[2]
    out = {}
    rng = np.random.default_rng(7)
    with h5py.File(path, "w") as f:
        d = f.create_dataset("c", shape=(100, 80), dtype="i4", chunks=(16, 16), compression="gzip",
                             shuffle=True, fillvalue=-1, maxshape=(None, 80))
        out["fill_before"] = d[...]
        d[10:20, 5:15] = np.arange(100).reshape(10, 10)
        d[::7, ::3] = 5
        d[3, :] = np.arange(80)
        out["slices"] = d[...]
        out["strided_read"] = d[1:90:4, 2:70:9]
        out["fancy_rows"] = d[[1, 5, 9, 40], :]
        out["fancy_cols"] = d[10:30, [0, 3, 4, 50]]
        d[[2, 3, 50], 10:20] = np.full((3, 10), 77)
        mask = rng.random((100, 80)) > 0.9
        out["mask_read"] = d[mask]
        vals = np.arange(mask.sum(), dtype="i4") * -3
        d[mask] = vals
        out["after_mask"] = d[...]
        out["props"] = (d.shape, d.dtype.str, d.chunks, d.compression, d.compression_opts, d.shuffle,
                        d.fillvalue, d.maxshape, d.fletcher32)
        d.resize((150, 80))
        out["grown"] = d[...]
        d.resize((30, 80))
        d.resize((60, 80))
        out["regrown"] = d[...]
        out["astype_f8"] = d.astype("f8")[5:25]
        out["astype_i2"] = d.astype("i2")[...]
        out["tail"] = d[-5:, -3:]

        e = f.create_dataset("contig_be", data=(np.arange(1000).reshape(10, 100) * 1.5).astype(">f8"))
        out["be"] = (e[...], e.dtype.str, e.chunks, e[2:5, 90:], e.astype("<f4")[...])
        u = f.create_dataset("u8", data=np.arange(256, dtype="u1"))
        out["u8"] = (u[...], u.astype("i8")[100:110])

        ct = np.dtype([("x", "<i4"), ("y", "<f8"), ("s", "S5")])
        c = f.create_dataset("cmp", shape=(20,), dtype=ct, chunks=(8,))
        rec = np.zeros(20, ct)
        rec["x"] = np.arange(20)
        rec["y"] = np.arange(20) / 8
        rec["s"] = [b"r%d" % i for i in range(20)]
        c[...] = rec
        out["cmp_all"] = c[...]
        out["cmp_y"] = c["y"]
        out["cmp_xs"] = c.fields(["x", "s"])[2:9]
        c[5:10, "y"] = np.full(5, -2.5)
        out["cmp_after_field_write"] = c[...]

        s = f.create_dataset("fixed", data=np.array([b"alpha", b"be", b"", b"gamma-delta"], dtype="S12"))
        out["fixed"] = (s[...], s.dtype.str, s[1:3])
        f["scalar"] = 42
        out["scalar"] = (f["scalar"][()], f["scalar"].shape)
        f.create_dataset("g1/g2/deep", data=np.arange(6).reshape(2, 3))

        vs = f.create_dataset("vstr", data=["alpha", "b\u00e9ta", "", "gamma delta"])
        out["vstr"] = (vs[...].tolist(), vs.asstr()[...].tolist(), str(vs.dtype),
                       tuple(h5py.check_string_dtype(vs.dtype)))
        v2 = f.create_dataset("vstr2", shape=(6,), dtype=h5py.string_dtype(), maxshape=(None,), chunks=(2,))
        out["vstr_unwritten"] = v2[...].tolist()
        v2[1:4] = ["x", "yy", "zzz"]
        v2[[0, 5]] = ["first", "last"]
        v2.resize((8,))
        out["vstr2"] = (v2[...].tolist(), v2[[1, 3, 7]].tolist())
        vg = f.create_dataset("vgrid", shape=(3, 4), dtype=h5py.string_dtype("ascii"))
        vg[1, :] = [b"a", b"b", b"c", b"d"]
        vg[:, 2] = [b"p", b"q", b"r"]
        out["vgrid"] = vg[...].tolist()
        vl = f.create_dataset("vlen_i4", shape=(4,), dtype=h5py.vlen_dtype("i4"))
        vl[0] = np.arange(3)
        vl[2] = np.arange(10) * 2
        out["vlen_i4"] = [x.tolist() for x in vl[...]]

        sp = f.create_dataset("sparse", shape=(1000, 1000), dtype="i4", chunks=(100, 100))
        sp[np.array([3, 500, 999]), 7] = np.array([1, 2, 3])
        for i in range(10):
            sp[i * 97, i * 31] = i
        f.flush()
        out["sparse_vals"] = sp[::97, ::31]
        storage = sp.id.get_storage_size()
    with h5py.File(path, "r") as f:
        out["reopen_vlen"] = (f["vstr2"][...].tolist(), [x.tolist() for x in f["vlen_i4"][...]])
        out["reopen"] = (f["c"][...], f["g1/g2/deep"][...], f["cmp"][...], f["c"].shape,
                         f["c"].maxshape, f["c"].chunks, f["c"].fillvalue)
    with open(out_path, "wb") as fh:
        pickle.dump({"out": out, "storage": storage}, fh)
''')


def run_scenario(tmp_path: Path, native: bool, scenario: str = SCENARIO, suffix: str = ".h5",
                 extra_env: dict | None = None) -> dict:
    """Runs a scenario script in a fresh process on native HDF5 or on tessera."""
    env = dict(os.environ)
    env.update(extra_env or {})
    if native:
        env.pop("HDF5_VOL_CONNECTOR", None)
    tag = "native" if native else "tessera"
    script = tmp_path / "scenario.py"
    script.write_text(scenario)
    path, out = tmp_path / f"{tag}{suffix}", tmp_path / f"{tag}.pkl"
    r = subprocess.run([sys.executable, str(script), str(path), str(out)], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{tag} scenario failed:\n{r.stdout}\n{r.stderr}"
    assert path.is_dir() != native, f"{path} is {'a directory' if path.is_dir() else 'a file'}"
    with open(out, "rb") as fh:
        return pickle.load(fh)


def assert_same(a, b, where="out"):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), where
        assert a.dtype == b.dtype and a.shape == b.shape, f"{where}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        assert a.tobytes() == b.tobytes(), f"{where}: values differ"
    else:
        assert type(a) == type(b) and a == b, f"{where}: {a!r} vs {b!r}"


def test_same_as_native(tessera_env, tmp_path):
    native = run_scenario(tmp_path, native=True)
    tess = run_scenario(tmp_path, native=False)
    assert_same(native["out"], tess["out"])
    # Only written cells take space in tessera's files, native allocates whole chunks, and
    # H5Dget_storage_size says so (docs/sparse.md): 13 cells, a few hundred bytes.
    assert 13 * 4 <= tess["storage"] < 2048 < native["storage"], (tess["storage"], native["storage"])
    native_bytes = (tmp_path / "native.h5").stat().st_size
    tess_bytes = sum(p.stat().st_size for p in (tmp_path / "tessera.h5").rglob("*") if p.is_file())
    assert 0 < tess_bytes < native_bytes / 4, (tess_bytes, native_bytes)


@pytest.fixture
def tfile(tessera_env, tmp_path):
    path = tmp_path / "t.h5"
    with h5py.File(path, "w") as f:
        yield f
    assert path.is_dir(), "not a tessera container: the connector was not used"


def test_slicing_matches_numpy(tfile):
    model = np.full((64, 48), 3, dtype="f4")
    d = tfile.create_dataset("d", shape=model.shape, dtype="f4", chunks=(8, 16), fillvalue=3)
    rng = np.random.default_rng(1)
    for _ in range(40):
        r0, c0 = rng.integers(0, 60), rng.integers(0, 44)
        r1, c1 = rng.integers(r0 + 1, 65), rng.integers(c0 + 1, 49)
        sr, sc = rng.integers(1, 4), rng.integers(1, 4)
        v = rng.random(model[r0:r1:sr, c0:c1:sc].shape).astype("f4")
        d[r0:r1:sr, c0:c1:sc] = v
        model[r0:r1:sr, c0:c1:sc] = v
        np.testing.assert_array_equal(d[r0:r1, c0:c1], model[r0:r1, c0:c1])
    np.testing.assert_array_equal(d[...], model)
    rows = sorted(set(rng.integers(0, 64, 10).tolist()))
    np.testing.assert_array_equal(d[rows, 5:9], model[rows, 5:9])
    mask = rng.random(model.shape) > 0.7
    np.testing.assert_array_equal(d[mask], model[mask])
    d[mask] = -1
    model[mask] = -1
    np.testing.assert_array_equal(d[...], model)
    np.testing.assert_array_equal(d.astype("f8")[...], model.astype("f8"))


def test_resize_and_fill(tfile):
    d = tfile.create_dataset("r", shape=(4, 5), maxshape=(None, None), dtype="i8", chunks=(2, 2), fillvalue=9)
    d[...] = np.arange(20).reshape(4, 5)
    d.resize((6, 7))
    model = np.full((6, 7), 9)
    model[:4, :5] = np.arange(20).reshape(4, 5)
    np.testing.assert_array_equal(d[...], model)
    d.resize((2, 2))
    d.resize((5, 5))
    model = np.full((5, 5), 9)
    model[:2, :2] = [[0, 1], [5, 6]]
    np.testing.assert_array_equal(d[...], model)
    with pytest.raises((ValueError, OSError, TypeError)):
        tfile.create_dataset("bad", shape=(4,), maxshape=(3,), dtype="i4", chunks=(2,))


def test_compound_and_strings(tfile):
    ct = np.dtype([("a", "<i2"), ("b", ">f4")])
    data = np.array([(i, i * 0.5) for i in range(10)], ct)
    d = tfile.create_dataset("c", data=data, chunks=(4,))
    np.testing.assert_array_equal(d[...], data)
    np.testing.assert_array_equal(d["b"], data["b"])
    d[2:4, "a"] = np.array([100, 101], "i2")
    data["a"][2:4] = [100, 101]
    np.testing.assert_array_equal(d[...], data)
    s = tfile.create_dataset("s", data=np.array([b"x", b"yy", b"zzz"], "S3"))
    assert s[...].tolist() == [b"x", b"yy", b"zzz"]


def test_errors_are_clean(tfile):
    """Bad selections reach the connector through the low-level API: clear errors, no crash."""
    d = tfile.create_dataset("e", shape=(10,), dtype="i4")
    buf = np.zeros(4, "i4")
    mspace = h5py.h5s.create_simple((4,))
    fspace = d.id.get_space()
    fspace.select_hyperslab((8,), (4,))  # beyond the extent
    with pytest.raises(OSError, match="tessera: dataset write: file selection"):
        d.id.write(mspace, fspace, buf)
    with pytest.raises(OSError, match="not within the dataset extent"):
        d.id.read(mspace, fspace, buf)
    fspace.select_hyperslab((0,), (3,))  # 3 elements vs 4 in memory
    with pytest.raises(OSError, match="memory selection has 4 elements, the file selection has 3"):
        d.id.write(mspace, fspace, buf)
    with pytest.raises((ValueError, OSError, TypeError)):
        tfile.create_dataset("unl", shape=(3,), maxshape=(None,), dtype="i4", chunks=False)
    np.testing.assert_array_equal(d[...], np.zeros(10, "i4"))


# Large scattered point updates (one H5Sselect_elements write each, the benchmark's
# update): tessera stores them as sparse deltas with a fast codec until consolidation
# (docs/engine.md); what reads back must still be exactly native HDF5's.
POINTS_SCENARIO = textwrap.dedent(r'''
    import pickle, sys
    import h5py, numpy as np

    path, out_path = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(11)
    out = {}
    with h5py.File(path, "w") as f:
        for name, kw in (("gz", dict(compression="gzip", compression_opts=1)),
                         ("shuf", dict(compression="gzip", shuffle=True)), ("plain", {})):
            d = f.create_dataset(name, shape=(300, 257), dtype="i4", chunks=(64, 32), **kw)
            d[...] = np.arange(300 * 257, dtype="i4").reshape(300, 257)
    for rnd in range(3):
        with h5py.File(path, "r+") as f:
            for name in ("gz", "shuf", "plain"):
                d = f[name]
                n = 20000
                pts = np.stack([rng.integers(0, 300, n), rng.integers(0, 257, n)], axis=1).astype("u8")
                # One point list per write; repeats inside it: the later element wins.
                pts[n // 2:n // 2 + 50] = pts[:50]
                vals = (-1 - rng.integers(0, 10 ** 9, n)).astype("i4")
                fs = d.id.get_space()
                fs.select_elements(pts)
                ms = h5py.h5s.create_simple((n,))
                d.id.write(ms, fs, vals)
                out[f"{name}{rnd}_pts"] = d[...]
                out[f"{name}{rnd}_some"] = np.array([d[int(r), int(c)] for r, c in pts[:20]])
    with h5py.File(path, "r") as f:
        for name in ("gz", "shuf", "plain"):
            out[name] = f[name][...]
            out[name + "_dcpl"] = (f[name].compression, f[name].shuffle, f[name].chunks)
        # Unfiltered: H5Dget_storage_size is native's number of allocated chunk bytes.
        out["plain_storage"] = f["plain"].id.get_storage_size()
    with open(out_path, "wb") as fh:
        pickle.dump(out, fh)
''')


def test_point_updates_same_as_native(tessera_env, tmp_path):
    native = run_scenario(tmp_path, True, POINTS_SCENARIO)
    tess = run_scenario(tmp_path, False, POINTS_SCENARIO)
    assert_same(native, tess)
    # Filtered datasets report tessera's compressed tile bytes: within what the
    # container's files hold; the unfiltered one reports native's allocated chunks.
    path = tmp_path / "tessera.h5"
    on_disk = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    with h5py.File(path, "r") as f:
        sizes = [f[n].id.get_storage_size() for n in ("gz", "shuf", "plain")]
    assert all(0 < s <= on_disk for s in sizes[:2]), (sizes, on_disk)
    assert sizes[2] == tess["plain_storage"] == native["plain_storage"]
    # Random int32 deltas barely compress: about 4 bytes a value for 3 rounds of about
    # 17,600 distinct points each (20,000 drawn from 77,100 cells), plus the base.
    assert sizes[0] >= 3 * 15000 * 4, sizes


TIMES = textwrap.dedent(r'''
    import pickle, sys, time
    import h5py, numpy as np
    path, out_path = sys.argv[1], sys.argv[2]
    out = {}
    t0 = int(time.time())
    def times(obj):
        i = h5py.h5o.get_info(obj.id)
        return (i.atime == i.mtime == i.ctime == i.btime, i.mtime == 0, t0 - 1 <= i.mtime <= t0 + 60,
                h5py.h5g.get_objinfo(obj.id).mtime == i.mtime)
    for libver in ("earliest", "latest"):
      with h5py.File(path, "w", libver=libver) as f:
        for track in (True, False):
            d = f.create_dataset(f"d{track}", data=np.arange(4), track_times=track)
            out[f"{libver} dataset {track}"] = times(d)
            out[f"{libver} like {track}"] = times(f.create_dataset_like(f"l{track}", d))
            gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
            gcpl.set_obj_track_times(track)
            g = h5py.Group(h5py.h5g.create(f.id, f"g{track}".encode(), gcpl=gcpl))
            out[f"{libver} group {track}"] = times(g)
        out[f"{libver} default group"] = times(f.create_group("plain"))
        out[f"{libver} root"] = times(f)
      with h5py.File(path, "r") as f:
        out[f"{libver} reopened"] = [times(f[k]) for k in sorted(f)]
    with open(out_path, "wb") as fh:
        pickle.dump(out, fh)
''')


def test_object_times_as_native(tessera_env, tmp_path):
    """H5Oget_info's times and H5Gget_objinfo's mtime: set at creation when the creation
    plist tracks times (the default), 0 when it does not — compared with native."""
    native = run_scenario(tmp_path, native=True, scenario=TIMES)
    tess = run_scenario(tmp_path, native=False, scenario=TIMES)
    assert tess == native
    assert native["latest dataset True"] == (True, False, True, True)     # all four times
    assert native["earliest dataset True"] == (False, True, False, False)  # the change time only
    assert native["latest dataset False"] == (True, True, False, True)


# Dense writes of blocks wider than a chunk (the h5py demo's chunk-row blocks): an
# unfiltered tile whose rows are >= 512 bytes in the caller's buffer is written straight
# from those rows (engine/tile/row_spans.h, FragmentWriter::add_dense_tile_spans), shorter rows
# are gathered first, filtered tiles always.  Odd chunk shapes, partial edge chunks, blocks
# not aligned to chunks, NaNs, 3-D — each read back whole and in slices, against native.
ROW_BLOCKS_SCENARIO = textwrap.dedent(r'''
    import pickle, sys
    import h5py, numpy as np

    path, out_path = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(5)
    cases = [
        ("i4_wide", (300, 1000), "<i4", (37, 129), {}, 37),    # rows of 516 B: in place
        ("i4_short", (300, 1000), "<i4", (37, 100), {}, 37),   # rows of 400 B: gathered
        ("i4_unaligned", (300, 1000), "<i4", (64, 256), {}, 50),  # blocks cut chunks
        ("f8_nan", (200, 700), "<f8", (33, 96), {}, 33),
        ("u1_wide", (100, 5000), "|u1", (16, 600), {}, 16),
        ("i2_gzip", (300, 1000), "<i2", (37, 300), dict(compression="gzip", compression_opts=1), 37),
        ("i4_shuffle", (300, 1000), "<i4", (37, 129), dict(shuffle=True, compression="gzip"), 40),
        ("f4_3d", (20, 40, 300), "<f4", (7, 9, 160), {}, 7),
    ]
    out = {}
    with h5py.File(path, "w") as f:
        for name, shape, dt, chunks, kw, step in cases:
            d = f.create_dataset(name, shape=shape, dtype=dt, chunks=chunks, **kw)
            full = rng.integers(-10 ** 6, 10 ** 6, size=shape).astype(dt)
            if full.dtype.kind == "f":
                full.flat[rng.integers(0, full.size, full.size // 50)] = np.nan
            for r0 in range(0, shape[0], step):
                d[r0:r0 + step] = full[r0:r0 + step]
            out[name + "_written"] = d[...]
    with h5py.File(path, "r") as f:
        for name, shape, *_ in cases:
            d = f[name]
            out[name] = d[...]
            out[name + "_slice"] = d[5:shape[0] - 3, 1::7]
    with open(out_path, "wb") as fh:
        pickle.dump(out, fh)
''')


def test_row_block_writes_same_as_native(tessera_env, tmp_path):
    native = run_scenario(tmp_path, True, ROW_BLOCKS_SCENARIO)
    tess = run_scenario(tmp_path, False, ROW_BLOCKS_SCENARIO)
    assert_same(native, tess)
