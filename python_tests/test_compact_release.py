"""Small datasets (compact arrays: one catalog record of cells) closed before their file
is flushed.  Since issue 20 the array of such a dataset is released at its last
H5Dclose and its cells are committed to the catalog then (durable with the next flush).
Checked against numpy models: reads through a new handle before any flush, a second
handle that stays open while another closes (its array must not be released under it),
writes after a reopen, never-written datasets (fill value), the file reopened read-only,
and the array count `tessera commits` reports for the close.
"""
from __future__ import annotations

import json
import os
import subprocess

import h5py
import numpy as np

from conftest import tool_path


def test_closed_small_datasets_read_back(tmp_path):
    path = str(tmp_path / "small.h5")
    rng = np.random.default_rng(20)
    model: dict[str, np.ndarray] = {}
    with h5py.File(path, "w") as f:
        assert os.path.isdir(path)  # a tessera container
        for i in range(40):
            name = f"g{i % 4}/d{i:02d}"
            a = rng.integers(-1000, 1000, size=(5, 7)).astype("i8")
            ds = f.create_dataset(name, data=a)
            ds.attrs["i"] = i
            model[name] = a
            del ds  # the last handle: H5Dclose
        # Never written: the fill value (user-defined here), as native reads it.
        f.create_dataset("empty", shape=(3, 4), dtype="f8", fillvalue=2.5)
        model["empty"] = np.full((3, 4), 2.5)
        # A second handle open while the first one closes: the array stays shared.
        h1 = f["g1/d05"]
        h2 = f["g1/d05"]
        del h1
        h2[2, :] = np.arange(7)
        model["g1/d05"][2, :] = np.arange(7)
        np.testing.assert_array_equal(h2[...], model["g1/d05"])
        del h2
        # Reopened before any flush: the values the closed handles wrote.
        for name, a in model.items():
            np.testing.assert_array_equal(f[name][...], a, err_msg=name)
        # Written again after a reopen, closed again, read again.
        for name in ("g0/d00", "g3/d39", "empty"):
            d = f[name]
            d[0, :] = -7
            model[name][0, :] = -7
            del d
            np.testing.assert_array_equal(f[name][...], model[name], err_msg=name)
    with h5py.File(path, "r") as f:
        assert sorted(f.keys()) == ["empty", "g0", "g1", "g2", "g3"]
        for name, a in model.items():
            np.testing.assert_array_equal(f[name][...], a, err_msg=name)
        assert [f[f"g{i % 4}/d{i:02d}"].attrs["i"] for i in range(40)] == list(range(40))
    # One commit (the close); it published the cells of the 41 written arrays ("empty"
    # included: written after its reopen).
    p = subprocess.run([tool_path(), "commits", path, "--json"], capture_output=True, text=True, check=True)
    commits = json.loads(p.stdout)["commits"]
    assert len(commits) == 1
    assert commits[0]["arrays"] == 41
