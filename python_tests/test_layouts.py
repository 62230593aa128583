"""Layouts (docs/layouts.md): every tile order against native HDF5.

One scenario (SCENARIO) runs in child processes: once on native HDF5, and once on tessera
per layout, the dataset created with tessera.create_dataset(..., layout=L).  Each pickles
what h5py reads — boxes, strided and irregular hyperslabs, index lists, point (mask)
selections, after writes of each of those kinds, extent changes, a reopen, and (tessera)
a consolidation — and every tessera run must equal the native one.  The tile order a
dataset was created with is checked through `tessera info` (before and after
consolidation), and the connector's layout= default and bad names are checked too."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import h5py
import numpy as np
import pytest

from conftest import native_env

# Layout names (tessera_Pset_layout, docs/layouts.md) and the (tile order, cell order)
# `tessera info` must show for them: "multimap" brings column-major cells (dimension 0
# fastest), every other tile order row-major ones unless ":CELLS" names the cell order.
LAYOUTS = {
    "row-major": ("row-major", "row-major"),
    "column-major": ("column-major", "row-major"),
    "z-order": ("z-order", "row-major"),
    "hilbert": ("hilbert", "row-major"),
    "multimap": ("multimap", "column-major"),
    "multimap:row-major": ("multimap", "row-major"),
    "row-major:column-major": ("row-major", "column-major"),
    "z-order:column-major": ("z-order", "column-major"),
    "hilbert:col": ("hilbert", "column-major"),
}

SCENARIO = textwrap.dedent(r'''
    import pickle, sys
    import h5py, numpy as np

    path, out_path, layout = sys.argv[1], sys.argv[2], sys.argv[3]
    create = None
    if layout != "native":
        import tessera
        create = lambda g, name, **kw: tessera.create_dataset(g, name, layout=layout, **kw)
    else:
        create = lambda g, name, **kw: g.create_dataset(name, **kw)
    out = {}
    rng = np.random.default_rng(17)
    with h5py.File(path, "w") as f:
        d = create(f, "cube", shape=(40, 37, 29), dtype="i4", chunks=(8, 5, 4), maxshape=(None, 37, 29),
                   fillvalue=-7)
        z = create(f, "zip", shape=(50, 60), dtype="f8", chunks=(7, 9), compression="gzip", shuffle=True)
        d[...] = np.arange(40 * 37 * 29, dtype="i4").reshape(40, 37, 29)
        z[3:45, 10:59] = rng.random((42, 49))
        out["all"] = d[...]
        d[5:30:3, ::4, 2:27:5] = -np.arange(9 * 10 * 5, dtype="i4").reshape(9, 10, 5)
        d[[1, 7, 22], 3:9, 4:20] = np.full((3, 6, 16), 99, "i4")                            # an index list: irregular hyperslabs
        d[2:38, [0, 5, 6, 30], 1:28:9] = np.arange(36 * 4 * 3, dtype="i4").reshape(36, 4, 3)
        mask = rng.random((40, 37, 29)) > 0.97
        d[mask] = np.arange(mask.sum(), dtype="i4") * 3            # a point selection
        out["mask"] = d[mask]
        out["after_writes"] = d[...]
        for dim in range(3):                                        # beams along each dimension
            key = [7, 11, 13]
            key[dim] = slice(None)
            out["beam%d" % dim] = d[tuple(key)]
        out["box"] = d[3:38, 2:35, 1:28]
        out["strided"] = d[1:40:7, 0:37:5, 3:29:6]
        out["lists"] = d[[0, 5, 39], :, 2:9]
        out["lists2"] = d[:, 3:30:4, [1, 2, 28]]
        out["zip"] = z[...]
        # Direct chunk I/O: HDF5's chunk bytes are row-major whatever the cell order.
        d.id.write_direct_chunk((8, 5, 4), np.arange(8 * 5 * 4, dtype="i4").tobytes())
        raw = [d.id.read_direct_chunk(o) for o in ((0, 0, 0), (8, 5, 4), (16, 30, 24))]
        out["chunk_masks"] = np.array([m for m, _ in raw])
        out["chunk_raw"] = np.stack([np.frombuffer(b, "i4") for _, b in raw])
        out["after_chunk_write"] = d[...]
        zmask, zraw = z.id.read_direct_chunk((7, 9))                # gzip + shuffle: decoded here
        import zlib
        out["zip_chunk_mask"] = np.array(zmask)
        out["zip_chunk"] = np.frombuffer(zlib.decompress(zraw), "u1").reshape(8, -1).T.copy().view("f8")
        out["zip_strided"] = z[::3, 1::4]
        d.resize((63, 37, 29))
        d[45:63, 30:, :] = 5
        out["grown"] = d[...]
        d.resize((20, 37, 29))
        d.resize((50, 37, 29))
        out["regrown"] = d[...]
    with h5py.File(path, "r") as f:
        out["reopened"] = f["cube"][...]
        out["reopened_zip"] = f["zip"][...]
        out["points_reopened"] = f["cube"][f["cube"][...] % 11 == 3]
    if layout != "native":
        import tessera
        tessera.consolidate(path)
        info = tessera.info(path)
        out["orders"] = {n: (info[n].array.tile_order, info[n].array.cell_order) for n in ("/cube", "/zip")}
        out["cube"] = info["/cube"].array.multimap_cube
        with h5py.File(path, "r") as f:
            out["consolidated"] = f["cube"][...]
            out["consolidated_zip"] = f["zip"][...]
    with open(out_path, "wb") as fh:
        pickle.dump(out, fh)
''')


def run_scenario(tmp_path, layout, env):
    script = tmp_path / "scenario.py"
    script.write_text(SCENARIO)
    path = tmp_path / ("%s.h5" % layout)
    out = tmp_path / ("%s.pkl" % layout)
    r = subprocess.run([sys.executable, str(script), str(path), str(out), layout], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    with open(out, "rb") as fh:
        return pickle.load(fh), path


@pytest.fixture(scope="module")
def native(tmp_path_factory):
    d = tmp_path_factory.mktemp("native")
    res, path = run_scenario(d, "native", native_env())
    assert path.is_file()  # a native HDF5 file, not a tessera container
    return res


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_layout_matches_native(tmp_path, native, tessera_env, layout):
    env = dict(os.environ)
    res, path = run_scenario(tmp_path, layout, env)
    assert path.is_dir()  # a tessera container
    assert res.pop("orders") == {"/cube": LAYOUTS[layout], "/zip": LAYOUTS[layout]}
    # The MultiMap basic cube by docs/layouts.md's rule: a 4 MiB track of 640-byte tiles
    # along the dimension whose beams read whole tiles — dimension 0 (unlimited) for
    # row-major cells, the last one (8 tiles of 4 cells: all there are) for column-major
    # cells — and 8 tiles (or all there are) along the others.
    want_cube = {"multimap": (8, 8, 8), "multimap:row-major": ((4 << 20) // (8 * 5 * 4 * 4), 8, 8)}
    assert res.pop("cube") == want_cube.get(layout)
    for key in ("consolidated", "consolidated_zip"):
        np.testing.assert_array_equal(res.pop(key), native["reopened" if key == "consolidated" else "reopened_zip"])
    assert res.keys() == native.keys()
    for k in native:
        np.testing.assert_array_equal(res[k], native[k], err_msg=k)


def test_connector_default_layout(tmp_path, tessera_env):
    """layout= in HDF5_VOL_CONNECTOR is the default of new datasets; tessera_Pset_layout
    (tessera.create_dataset) overrides it per dataset."""
    code = textwrap.dedent('''
        import sys, h5py, numpy as np, tessera
        with h5py.File(sys.argv[1], "w") as f:
            f.create_dataset("a", data=np.arange(600).reshape(20, 30), chunks=(4, 4))
            tessera.create_dataset(f, "b", data=np.arange(600).reshape(20, 30), chunks=(4, 4), layout="z-order")
        with h5py.File(sys.argv[1], "r") as f:
            assert (f["a"][...] == np.arange(600).reshape(20, 30)).all()
        i = tessera.info(sys.argv[1])
        print(i["/a"].array.tile_order, i["/b"].array.tile_order)
    ''')
    env = dict(os.environ, HDF5_VOL_CONNECTOR="tessera layout=hilbert")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "d.h5")], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["hilbert", "z-order"]
    # The text output of `tessera info` names the orders too.
    from conftest import tool_path
    text = subprocess.run([tool_path(), "info", str(tmp_path / "d.h5")], capture_output=True, text=True).stdout
    assert "tile order hilbert, cell order row-major" in text
    assert "tile order z-order, cell order row-major" in text


def test_bad_layout_names_are_hdf5_errors(tmp_path, tessera_env):
    import tessera

    with h5py.File(tmp_path / "e.h5", "w") as f:
        with pytest.raises(ValueError, match="unknown layout"):
            tessera.create_dataset(f, "x", shape=(10,), dtype="i4", layout="spiral")
        # Past the Python check, the connector refuses the name with an HDF5 error.
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        from tessera._lib import lib
        import ctypes
        fn = lib().tessera_Pset_layout
        fn.argtypes = [ctypes.c_int64, ctypes.c_char_p]
        assert fn(dcpl.id, b"spiral") >= 0
        with pytest.raises(Exception, match="unknown layout 'spiral'"):
            f.create_dataset("y", shape=(100,), dtype="i4", chunks=(10,), dcpl=dcpl)
        assert "x" not in f and "y" not in f
    env = dict(os.environ, HDF5_VOL_CONNECTOR="tessera layout=spiral")
    r = subprocess.run([sys.executable, "-c", "import h5py,sys; h5py.File(sys.argv[1], 'w')", str(tmp_path / "b.h5")],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "layout=spiral" in r.stderr


def test_space_filling_cell_orders_are_refused(tmp_path, tessera_env):
    """Cells inside a tile are row- or column-major; a space-filling cell order is an HDF5
    error that says so (docs/layouts.md has the reason), never a silent fallback."""
    import tessera

    with h5py.File(tmp_path / "c.h5", "w") as f:
        with pytest.raises(Exception, match="cell order hilbert .*not supported"):
            tessera.create_dataset(f, "x", shape=(100, 100), dtype="i4", chunks=(10, 10), layout="multimap:hilbert")
        with pytest.raises(ValueError, match="unknown layout"):
            tessera.create_dataset(f, "y", shape=(100, 100), dtype="i4", chunks=(10, 10), layout="multimap:spiral")
        assert "x" not in f and "y" not in f
