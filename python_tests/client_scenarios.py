"""Scenarios of the Python HDF5 clients that are not h5py (python_tests/test_clients_python.py):
netCDF4-python, PyTables and pandas.  Run in a child process of its own, natively or on
tessera (HDF5 reads HDF5_VOL_CONNECTOR once, when the library initialises):

    python client_scenarios.py CLIENT write PATH
    python client_scenarios.py CLIENT read PATH OUT.pkl

`write` makes a file with the client's own API; `read` opens it again in a new process
and pickles everything the client reads back (values, types, attributes, chunking and
compression as the client reports them), for comparison with the native run."""
import pickle
import sys

import numpy as np

ROWS = 1000


def _rng():
    return np.random.default_rng(42)


# --------------------------------------------------------------------------- netCDF4-python
def netcdf4_write(path):
    import netCDF4

    rng = _rng()
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.title = "tessera clients"
        ds.setncattr("version", np.int32(3))
        ds.createDimension("time", None)
        ds.createDimension("lat", 5)
        ds.createDimension("lon", 8)
        t = ds.createVariable("time", "f8", ("time",))
        t.units = "hours since 2024-01-01"
        v = ds.createVariable("temp", "f4", ("time", "lat", "lon"), zlib=True, complevel=4,
                              chunksizes=(1, 5, 8), fill_value=np.float32(-999))
        v.units = "K"
        v.valid_range = np.array([150.0, 350.0], "f4")
        t[:] = np.arange(4) * 6.0
        v[0:4] = (273 + 10 * rng.standard_normal((4, 5, 8))).astype("f4")
        v[1, 2, 3:6] = np.ma.masked                    # fill values in the middle
        pair = ds.createCompoundType(np.dtype([("a", "i4"), ("b", "f8")]), "pair")
        p = ds.createVariable("pairs", pair, ("lat",))
        p[:] = np.array([(i, i / 3) for i in range(5)], dtype=[("a", "i4"), ("b", "f8")])
        cloud = ds.createEnumType("u1", "cloud", {"clear": 0, "cloudy": 1, "storm": 2})
        c = ds.createVariable("sky", cloud, ("lon",), fill_value=0)
        c[:] = np.array([0, 1, 2, 1, 0, 0, 2, 1], "u1")
        g = ds.createGroup("ocean").createGroup("profiles")
        g.createDimension("z", 4)
        s = g.createVariable("station", str, ("z",))
        s[:] = np.array(["alpha", "", "gamma delta", "\u00e9t\u00e9"], dtype=object)
        d = g.createVariable("depth", "i2", ("z",), zlib=True, shuffle=True)
        d[:] = np.arange(4, dtype="i2") * 10
        g.comment = "a nested group"


def netcdf4_read(path):
    import netCDF4

    out = {}

    def walk(grp, name):
        grp.set_auto_mask(False)
        out[name + "/attrs"] = {k: grp.getncattr(k) for k in grp.ncattrs()}
        out[name + "/dims"] = {k: (len(d), d.isunlimited()) for k, d in grp.dimensions.items()}
        for vname, v in grp.variables.items():
            out[f"{name}/{vname}"] = {
                "dims": v.dimensions, "dtype": str(v.dtype), "data": v[...],
                "attrs": {k: v.getncattr(k) for k in v.ncattrs()},
                "chunking": v.chunking(), "filters": v.filters()}
        for gname, sub in grp.groups.items():
            walk(sub, f"{name}/{gname}")

    with netCDF4.Dataset(path, "r") as ds:
        out["format"] = ds.data_model
        walk(ds, "")
    return out


# --------------------------------------------------------------------------- PyTables
def tables_write(path):
    import tables

    rng = _rng()

    class Particle(tables.IsDescription):
        name = tables.StringCol(16)
        idnumber = tables.Int64Col()
        energy = tables.Float64Col()
        pressure = tables.Float32Col(shape=(2,))

    with tables.open_file(path, "w", title="tessera clients") as h5:
        grp = h5.create_group("/", "detector", "Detector information")
        tab = h5.create_table(grp, "readout", Particle, "Readout example",
                              filters=tables.Filters(complevel=5, complib="zlib", shuffle=True))
        row = tab.row
        energy = rng.random(ROWS)
        for i in range(ROWS):
            row["name"] = f"particle {i:6d}"
            row["idnumber"] = i * 3
            row["energy"] = energy[i]
            row["pressure"] = (i * 0.5, -i * 0.25)
            row.append()
        tab.flush()
        tab.cols.idnumber.create_index()
        tab.attrs.units = "GeV"
        arr = rng.standard_normal((200, 300)).astype("f8")
        ca = h5.create_carray("/", "compressed", obj=arr, chunkshape=(50, 100),
                              filters=tables.Filters(complevel=4, complib="zlib"))
        ca.attrs.origin = np.array([1.5, -2.0])
        ea = h5.create_earray("/", "growing", atom=tables.Int32Atom(), shape=(0, 4))
        ea.append(np.arange(40, dtype="i4").reshape(10, 4))
        ea.append(np.arange(8, dtype="i4").reshape(2, 4) * -1)
        vl = h5.create_vlarray("/", "ragged", tables.Int16Atom())
        for n in (0, 1, 5, 3):
            vl.append(np.arange(n, dtype="i2"))


def tables_read(path):
    import tables

    out = {}
    with tables.open_file(path, "r") as h5:
        out["title"] = h5.title
        tab = h5.root.detector.readout
        out["table"] = tab.read()
        out["table_attrs"] = tab.attrs.units
        out["where"] = tab.read_where("(energy > 0.5) & (idnumber < 1500)")
        out["where_indexed"] = [r["name"] for r in tab.where("idnumber == 300")]
        out["filters"] = repr(tab.filters)
        out["compressed"] = h5.root.compressed[...]
        out["compressed_slice"] = h5.root.compressed[10:60:7, 250:]
        out["compressed_chunks"] = h5.root.compressed.chunkshape
        out["compressed_filters"] = repr(h5.root.compressed.filters)
        out["origin"] = h5.root.compressed.attrs.origin
        out["growing"] = h5.root.growing[...]
        out["ragged"] = [list(x) for x in h5.root.ragged]
        out["nodes"] = sorted(n._v_pathname for n in h5.walk_nodes("/"))
    return out


# --------------------------------------------------------------------------- pandas
def pandas_write(path):
    """One to_hdf into a new file: a queryable, compressed table."""
    import pandas as pd

    rng = _rng()
    df = pd.DataFrame({"A": rng.random(ROWS), "B": rng.integers(0, 100, ROWS),
                       "C": [f"s{i % 17}" for i in range(ROWS)],
                       "T": pd.date_range("2024-01-01", periods=ROWS, freq="min")})
    df.to_hdf(path, key="table", format="table", data_columns=["A", "B"], complevel=5, complib="zlib")


def pandas_append(path):
    """More keys into the existing file (mode "a"): a compressed fixed frame and a Series."""
    import pandas as pd

    wide = pd.DataFrame(_rng().standard_normal((500, 6)), columns=list("uvwxyz"))
    wide.to_hdf(path, key="fixed", mode="a", format="fixed", complevel=9, complib="zlib")
    pd.Series(np.arange(10.0), name="s").to_hdf(path, key="grp/series", mode="a")


def pandas_read(path):
    import pandas as pd

    out = {}
    out["table"] = pd.read_hdf(path, "table")
    out["where"] = pd.read_hdf(path, "table", where="A > 0.5 & B < 50")
    out["columns"] = pd.read_hdf(path, "table", columns=["A", "C"], start=10, stop=30)
    with pd.HDFStore(path, "r") as st:
        if "/fixed" in st:
            out["fixed"] = st["fixed"]
            out["series"] = st["grp/series"]
        out["keys"] = sorted(st.keys())
    return out


# --------------------------------------------------------------------------- any file, by h5py
def h5py_dump(path):
    """Every group, dataset (values) and attribute of the file as h5py sees it: what a
    client wrote, independent of the client's own reader.  Object references become
    the path they point at; the netCDF library's _NCProperties (its version) is kept."""
    import h5py

    def plain(x, f):
        if isinstance(x, h5py.Reference):
            return ("ref", f[x].name) if x else ("ref", None)
        if isinstance(x, np.ndarray) and x.dtype == object:
            return [plain(y, f) for y in x.ravel()]
        if isinstance(x, np.ndarray) and x.dtype.names:
            # Field by field: the padding between fields holds no data (and differs).
            return {"fields": str(x.dtype), **{n: plain(x[n], f) for n in x.dtype.names}}
        return x

    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            attrs = {k: plain(obj.attrs[k], f) for k in sorted(obj.attrs)}
            if isinstance(obj, h5py.Dataset):
                out[name] = {"dtype": str(obj.dtype), "shape": obj.shape, "chunks": obj.chunks,
                             "compression": obj.compression, "data": plain(obj[()], f), "attrs": attrs}
            else:
                out[name] = {"group": True, "attrs": attrs}
        out["/"] = {"attrs": {k: plain(f.attrs[k], f) for k in sorted(f.attrs)}}
        f.visititems(visit)
    return out


SCENARIOS = {"netCDF4": (netcdf4_write, netcdf4_read), "tables": (tables_write, tables_read),
             "pandas": (pandas_write, pandas_read), "pandas-append": (pandas_append, pandas_read),
             "h5py": (None, h5py_dump)}


def main(argv):
    client, action, path = argv[0], argv[1], argv[2]
    write, read = SCENARIOS[client]
    if action == "write":
        write(path)
    else:
        with open(argv[3], "wb") as fh:
            pickle.dump(read(path), fh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
