"""Converting a dataset's layout by consolidation (docs/layouts.md, "Converting"):
`tessera consolidate --layout X` / tessera.consolidate(path, layout=X), against native HDF5.

One scenario (SCENARIO) runs in child processes: once on native HDF5, once on tessera.
Both write the same data in several calls (so tessera has several fragments: boxes,
strided and irregular hyperslabs, points); tessera then converts the container to each
layout in turn (every layout name of test_layouts.LAYOUTS, each conversion starting from
the previous one's layout), and after each conversion both runs write one more box (the
new fragment takes the new layout) and read every selection kind — whole, box, strided,
index lists, beams along each dimension, a point (mask) selection, a reopen.  Every read
of the tessera run must equal the native one; `tessera info` must show the new layout
and no fragment in another one, `tessera fragments` each fragment's layout."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import native_env, tool_path
from test_layouts import LAYOUTS

STEPS = list(LAYOUTS) + ["row-major"]

SCENARIO = textwrap.dedent(r'''
    import json, pickle, sys
    import h5py, numpy as np

    path, out_path, mode, steps = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    out = {}
    rng = np.random.default_rng(23)
    with h5py.File(path, "w") as f:
        d = f.create_dataset("cube", shape=(33, 27, 19), dtype="i4", chunks=(8, 5, 4), fillvalue=-7)
        z = f.create_dataset("zip", shape=(50, 60), dtype="f8", chunks=(7, 9), compression="gzip", shuffle=True)
    # Several writes, each its own flush: several fragments of every kind.
    with h5py.File(path, "r+") as f:
        f["cube"][2:30, :, 1:18] = np.arange(28 * 27 * 17, dtype="i4").reshape(28, 27, 17)
        f["zip"][3:45, 10:59] = rng.random((42, 49))
    with h5py.File(path, "r+") as f:
        f["cube"][5:30:3, ::4, 2:17:5] = -np.arange(9 * 7 * 3, dtype="i4").reshape(9, 7, 3)
    with h5py.File(path, "r+") as f:
        f["cube"][[1, 7, 22], 3:9, 4:19] = np.full((3, 6, 15), 99, "i4")
    with h5py.File(path, "r+") as f:
        mask = rng.random((33, 27, 19)) > 0.96
        f["cube"][mask] = np.arange(mask.sum(), dtype="i4") * 3
        f["zip"][::5, ::7] = -1.5
    readmask = np.random.default_rng(5).random((33, 27, 19)) > 0.9

    def reads(f):
        d, z = f["cube"], f["zip"]
        r = {"whole": d[...], "box": d[3:31, 2:25, 1:18], "strided": d[1:33:7, 0:27:5, 3:19:6],
             "lists": d[[0, 5, 32], :, 2:9], "lists2": d[:, 3:25:4, [1, 2, 18]], "points": d[readmask],
             "zip": z[...], "zip_strided": z[::3, 1::4]}
        for dim in range(3):
            key = [7, 11, 13]
            key[dim] = slice(None)
            r["beam%d" % dim] = d[tuple(key)]
        return r

    with h5py.File(path, "r") as f:
        out["written"] = reads(f)
    for i, layout in enumerate(steps):
        step = {}
        if mode == "tessera":
            import tessera
            step["report"] = tessera.consolidate(path, layout=layout)
            info = tessera.info(path)
            step["orders"] = {n: (info[n].array.tile_order, info[n].array.cell_order,
                                  info[n].array.fragments, info[n].array.fragment_layouts)
                              for n in ("/cube", "/zip")}
            with h5py.File(path, "r") as f:
                step["converted"] = reads(f)
        # One more write, in the new layout on tessera.
        with h5py.File(path, "r+") as f:
            f["cube"][i:i + 9, 4:13, 2:11] = np.full((9, 9, 9), 1000 + i, "i4")
        with h5py.File(path, "r") as f:
            step["after_write"] = reads(f)
        if mode == "tessera":
            step["fragments"] = sorted({fr.layout for fr in tessera.fragments(path, "/cube")})
        out[layout + "#%d" % i] = step
    with open(out_path, "wb") as fh:
        pickle.dump(out, fh)
''')


def run_scenario(tmp_path, mode, env):
    script = tmp_path / "convert_scenario.py"
    script.write_text(SCENARIO)
    path = tmp_path / ("%s.h5" % mode)
    out = tmp_path / ("%s.pkl" % mode)
    import json
    r = subprocess.run([sys.executable, str(script), str(path), str(out), mode, json.dumps(STEPS)], env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-4000:]
    with open(out, "rb") as fh:
        return pickle.load(fh), path


def _name(tile, cell):
    """The layout name `tessera fragments` prints for (tile order, cell order)."""
    default = "column-major" if tile == "multimap" else "row-major"
    return tile if cell == default else tile + ":" + cell


def test_consolidate_layout_matches_native(tmp_path, tessera_env):
    native, npath = run_scenario(tmp_path, "native", native_env())
    assert npath.is_file()
    res, path = run_scenario(tmp_path, "tessera", dict(os.environ))
    assert path.is_dir()
    for k, want in native["written"].items():
        np.testing.assert_array_equal(res["written"][k], want, err_msg="written: " + k)
    prev = "row-major"
    for i, layout in enumerate(STEPS):
        key = layout + "#%d" % i
        got, want = res[key], native[key]
        tile, cell = LAYOUTS[layout]
        # Converted: one fragment per dataset, in the new layout, none in another one.
        assert got["orders"] == {"/cube": (tile, cell, 1, {}), "/zip": (tile, cell, 1, {})}, key
        assert "layout %s -> %s" % (prev, _name(tile, cell)) in got["report"], got["report"]
        assert got["fragments"] == [_name(tile, cell)], key  # the write after it too
        for k, w in want["after_write"].items():
            np.testing.assert_array_equal(got["converted"][k], (native["written"] if i == 0
                                                                 else native[STEPS[i - 1] + "#%d" % (i - 1)]["after_write"])[k],
                                          err_msg="%s converted: %s" % (key, k))
            np.testing.assert_array_equal(got["after_write"][k], w, err_msg="%s after write: %s" % (key, k))
        prev = _name(tile, cell)


def test_consolidate_layout_errors(tmp_path, tessera_env):
    """An unknown layout fails before anything is opened; --layout is not combined with
    --size-tiered; a space-filling cell order is refused with its reason."""
    import h5py
    path = tmp_path / "e.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("a", data=np.arange(100).reshape(10, 10), chunks=(5, 5))
    for args, msg in ((["--layout", "spiral"], "unknown layout 'spiral'"),
                      (["--layout", "hilbert", "--size-tiered"], "--size-tiered"),
                      (["--layout", "multimap:hilbert"], "not supported")):
        r = subprocess.run([tool_path(), "consolidate", str(path)] + args, capture_output=True, text=True)
        assert r.returncode != 0, args
        assert msg in r.stderr, (args, r.stderr)
    with h5py.File(path, "r") as f:
        assert (f["a"][...] == np.arange(100).reshape(10, 10)).all()
    import tessera
    assert tessera.info(str(path))["/a"].array.tile_order == "row-major"
