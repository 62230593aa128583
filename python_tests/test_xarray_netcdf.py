"""netCDF-4 through xarray and h5netcdf on tessera, compared with native HDF5.

netCDF-4 files are HDF5 files whose dimensions are dimension scales: every variable
carries a DIMENSION_LIST attribute (object references to its dimensions' scales), every
scale a REFERENCE_LIST (references back) — so writing one exercises references, vlen
attributes, compound attributes, unlimited dimensions, chunking and compression at
once.  The scenario below runs in a fresh process natively (no HDF5_VOL_CONNECTOR) and
on tessera; each pickles what xarray, h5netcdf and h5py observe, and the two must be
identical.  The tessera run must have made a tessera container (a directory).
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

from test_h5py_datasets import run_scenario

SCENARIO = textwrap.dedent(r'''
    import pickle, sys
    import h5netcdf, h5py, numpy as np, pandas as pd, xarray as xr

    path, out_path = sys.argv[1], sys.argv[2]
    out = {}
    rng = np.random.default_rng(3)
    time = pd.date_range("2024-01-01", periods=6, freq="6h")
    lat = np.linspace(-60, 60, 7)
    lon = np.arange(0, 360, 40.0)
    temp = (15 + 8 * rng.standard_normal((6, 7, 9))).astype("f4")
    count = rng.integers(0, 100, (6, 7)).astype("i2")
    ds = xr.Dataset(
        {"temp": (("time", "lat", "lon"), temp, {"units": "degC", "long_name": "air temperature",
                                                  "valid_range": np.array([-90.0, 60.0], "f4")}),
         "count": (("time", "lat"), count, {"flag": np.int32(3)}),
         "station": (("lat",), np.array(["alpha", "b", "", "gamma delta", "e", "f", "\u00e9t\u00e9"], dtype=object)),
         "scalar": ((), np.float64(2.5))},
        coords={"time": time, "lat": ("lat", lat, {"units": "degrees_north"}),
                "lon": ("lon", lon, {"units": "degrees_east"})},
        attrs={"title": "tessera netCDF-4 test", "version": np.int32(2), "weights": np.array([0.5, 0.25])},
    )
    encoding = {"temp": {"zlib": True, "complevel": 4, "chunksizes": (2, 7, 9), "_FillValue": np.float32(-999)},
                "count": {"_FillValue": np.int16(-1), "dtype": "i2"},
                "time": {"units": "hours since 2024-01-01", "dtype": "i8"}}
    ds.to_netcdf(path, engine="h5netcdf", encoding=encoding, unlimited_dims=["time"])
    sub = xr.Dataset({"depth": (("z",), np.arange(4.0) * 10, {"units": "m"})}, coords={"z": np.arange(4)})
    sub.to_netcdf(path, engine="h5netcdf", mode="a", group="ocean/profiles")

    def strip(d):
        for v in d.variables.values():
            v.encoding.pop("source", None)
        d.encoding.pop("source", None)
        return d

    with xr.open_dataset(path, engine="h5netcdf") as r:
        out["dataset"] = strip(r.load())
        out["encodings"] = {k: {e: v.encoding.get(e) for e in ("zlib", "complevel", "chunksizes", "_FillValue",
                                                              "dtype", "units", "unlimited_dims")}
                            for k, v in r.variables.items()}
        out["unlimited"] = r.encoding.get("unlimited_dims")
        out["sel"] = r["temp"].sel(time=slice("2024-01-01T06", "2024-01-02"), lat=slice(-20, 40)).load()
        out["isel"] = r["temp"].isel(time=[0, 3, 5], lon=slice(1, None, 3)).load()
        out["nearest"] = r["count"].sel(lat=13.0, method="nearest").load()
    with xr.open_dataset(path, engine="h5netcdf", group="ocean/profiles") as g:
        out["group"] = strip(g.load())

    # Append along the unlimited dimension with h5netcdf, then read through xarray again.
    with h5netcdf.File(path, "a") as f:
        out["h5netcdf_dims"] = {k: (len(v), v.isunlimited()) for k, v in f.dimensions.items()}
        out["h5netcdf_vardims"] = {k: v.dimensions for k, v in f.variables.items()}
        n = f.dimensions["time"].size
        f.resize_dimension("time", n + 2)
        f.variables["temp"][n:n + 2, :, :] = np.full((2, 7, 9), 1.5, "f4")
        f.variables["time"][n:n + 2] = [36, 42]
    with xr.open_dataset(path, engine="h5netcdf") as r:
        out["appended"] = strip(r[["temp", "time"]].load())

    # The dimension-scale structure itself, as h5py sees it.
    with h5py.File(path, "r") as f:
        scales = {}
        for name in ("temp", "count", "station"):
            d = f[name]
            scales[name] = [[f[ref].name for ref in d.attrs["DIMENSION_LIST"][i]] for i in range(d.ndim)]
        out["dimension_list"] = scales
        out["is_scale"] = {k: h5py.h5ds.is_scale(f[k].id) for k in ("time", "lat", "lon", "temp")}
        out["scale_names"] = {k: f[k].attrs.get("NAME") for k in ("time", "lat", "lon")}
        rl = f["lat"].attrs["REFERENCE_LIST"]
        out["reference_list"] = sorted((f[r[0]].name, int(r[1])) for r in rl)
        out["dims_api"] = {k: [[s.name for s in dim.values()] for dim in f[k].dims] for k in ("temp", "count")}
        out["labels"] = [dim.label for dim in f["temp"].dims]
    with open(out_path, "wb") as fh:
        pickle.dump(out, fh)
''')


def run(tmp_path: Path, native: bool) -> dict:
    return run_scenario(tmp_path, native, SCENARIO, suffix=".nc")


def same(a, b) -> bool:
    """Deep equality in which a NaN equals a NaN of the same type (NaN != NaN otherwise:
    netCDF's default _FillValue for floats is NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    if isinstance(a, (float, np.floating)) and np.isnan(a):
        return bool(np.isnan(b))
    return bool(a == b)


def test_netcdf4_same_as_native(tessera_env, tmp_path):
    import xarray as xr

    native = run(tmp_path, native=True)
    tess = run(tmp_path, native=False)
    assert native.keys() == tess.keys()
    for key in native:
        a, b = native[key], tess[key]
        if isinstance(a, (xr.Dataset, xr.DataArray)):
            xr.testing.assert_identical(a, b)
            if isinstance(a, xr.Dataset):
                for name in a.variables:
                    assert same(a[name].encoding, b[name].encoding), \
                        (key, name, a[name].encoding, b[name].encoding)
        else:
            assert same(a, b), f"{key}: native {a!r} vs tessera {b!r}"
    # Sanity of the native side, so that an empty scenario cannot pass.
    assert native["dimension_list"]["temp"] == [["/time"], ["/lat"], ["/lon"]]
    assert native["h5netcdf_dims"]["time"] == (6, True)


# netCDF-4 as bytes (`to_netcdf()` without a path, `open_dataset(BytesIO)`): the bytes are
# a native HDF5 file that tessera writes through h5py's file-object driver
# (vol/model/file_image.h), dimension scales' references re-pointed on the way.
BYTES_CHILD = textwrap.dedent(r'''
    import io, pickle, sys
    import h5py, numpy as np, xarray as xr
    mode, path, out_path = sys.argv[1:4]

    def model():
        return xr.Dataset(
            {"t": (("x", "y"), np.arange(12.0).reshape(3, 4), {"units": "K"}),
             "n": (("x",), np.array([5, 6, 7], "i4"))},
            coords={"x": [10, 20, 30], "y": ("y", [0.5, 1.5, 2.5, 3.5], {"units": "m"})})

    if mode == "write":  # the model as netCDF-4 bytes, by whichever connector runs this
        open(path, "wb").write(bytes(model().to_netcdf(engine="h5netcdf")))
    out = {}
    data = open(path, "rb").read()
    with xr.open_dataset(io.BytesIO(data), engine="h5netcdf") as r:
        out["dataset"] = r.load()
    with h5py.File(io.BytesIO(data), "r") as f:
        out["dims"] = {k: [[f[ref].name for ref in f[k].attrs["DIMENSION_LIST"][i]] for i in range(f[k].ndim)]
                       for k in ("t", "n")}
        out["refs"] = {k: sorted((f[r[0]].name, int(r[1])) for r in f[k].attrs["REFERENCE_LIST"]) for k in ("x", "y")}
    xr.testing.assert_identical(out["dataset"], model())
    with open(out_path, "wb") as fh:
        pickle.dump(out, fh)
''')


def test_netcdf4_bytes_are_native_files(tessera_env, tmp_path):
    import os
    import pickle
    import subprocess
    import sys

    import xarray as xr
    from conftest import native_env

    script = tmp_path / "bytes.py"
    script.write_text(BYTES_CHILD)

    def child(mode, path, native):
        out = tmp_path / f"{mode}-{native}-{path.name}.pkl"
        env = native_env() if native else dict(os.environ)
        r = subprocess.run([sys.executable, str(script), mode, str(path), str(out)], env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        with open(out, "rb") as fh:
            return pickle.load(fh)

    nat, tes = tmp_path / "native.nc", tmp_path / "tessera.nc"
    ref = child("write", nat, native=True)      # native writes and reads its own bytes
    mine = child("write", tes, native=False)    # tessera writes (and reads back) bytes
    assert tes.read_bytes().startswith(b"\x89HDF\r\n\x1a\n")
    by_native = child("read", tes, native=True)  # native reads tessera's bytes
    by_tessera = child("read", nat, native=False)  # tessera reads native's bytes
    for got in (mine, by_native, by_tessera):
        assert got["dims"] == ref["dims"] and got["refs"] == ref["refs"]
        xr.testing.assert_identical(got["dataset"], ref["dataset"])
