"""h5py's filters on tessera, compared with native HDF5 run in another process.

scale-offset is lossy by design: native's values are the reference (vol/model/value_filters.h
runs HDF5's own pipeline over each written chunk).  lzf is h5py's own registered filter
(stored with tessera's lz4; values must simply survive).  Reads go through a reopened
file: native keeps written chunks unfiltered in its chunk cache until they leave it.
"""
from __future__ import annotations

import os
import textwrap

import numpy as np

from test_h5py_datasets import assert_same, run_scenario

SCENARIO = textwrap.dedent('''
    import pickle, sys
    import h5py, numpy as np
    path, out_path = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(7)
    ints = rng.integers(-5000, 5000, (60, 70)).astype("i4")
    floats = (rng.standard_normal((60, 70)) * 100).astype("f8")
    with h5py.File(path, "w") as f:
        f.create_dataset("so_int", data=ints, chunks=(16, 16), scaleoffset=0)
        f.create_dataset("so_int_lossy", data=ints, chunks=(16, 16), scaleoffset=3)
        f.create_dataset("so_float", data=floats, chunks=(16, 16), scaleoffset=2)
        d = f.create_dataset("so_float_fill", shape=(60, 70), dtype="f4", chunks=(16, 16),
                             scaleoffset=1, fillvalue=-7.25)
        d[5:40, 3:30] = floats[5:40, 3:30]
        d[20:22, :] = 1.0 / 3.0          # a second, partial write over written chunks
        f.create_dataset("lzf", data=ints, chunks=(16, 16), compression="lzf")
        f.create_dataset("gzip_shuffle", data=floats, chunks=(16, 16), compression="gzip",
                         shuffle=True, fletcher32=True)
        # n-bit through the low-level API: a 20-bit integer type (HDF5 1.14.5 refuses
        # types with more unused bits than used ones)
        t = h5py.h5t.STD_I32LE.copy()
        t.set_precision(20)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((16, 16))
        dcpl.set_filter(h5py.h5z.FILTER_NBIT)
        sp = h5py.h5s.create_simple((60, 70))
        h5py.h5d.create(f.id, b"nbit", t, sp, dcpl=dcpl)
        f["nbit"][...] = ints * 300          # values beyond 20 bits lose their high bits
    out = {"ints": ints, "floats": floats}
    with h5py.File(path, "r") as f:
        for name in sorted(f):
            ds = f[name]
            out[name] = ds[...]
            out[name + "_dcpl"] = (ds.compression, ds.compression_opts, ds.shuffle, ds.fletcher32,
                                   ds.scaleoffset, ds.chunks, ds.fillvalue)
    with open(out_path, "wb") as fh:
        pickle.dump(out, fh)
''')


def test_filters_same_as_native(tessera_env, tmp_path):
    native = run_scenario(tmp_path, native=True, scenario=SCENARIO)
    tess = run_scenario(tmp_path, native=False, scenario=SCENARIO)
    assert_same(native, tess)
    # The lossy ones really changed values (else the comparison would prove little).
    assert not np.array_equal(native["so_float"], native["floats"])
    assert np.abs(native["so_float"] - native["floats"]).max() <= 0.005 + 1e-9
    assert not np.array_equal(native["nbit"], native["ints"] * 300)


PLUGIN_SCENARIO = textwrap.dedent('''
    import pickle, sys
    import h5py, hdf5plugin, numpy as np
    path, out_path = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(3)
    data = np.cumsum(rng.standard_normal((64, 80)), axis=1).astype("f4")
    filters = {"zfp_rate": hdf5plugin.Zfp(rate=8), "zfp_accuracy": hdf5plugin.Zfp(accuracy=0.01),
               "sz": hdf5plugin.SZ(absolute=0.05), "sz3": hdf5plugin.SZ3(absolute=0.05),
               "blosc": hdf5plugin.Blosc(), "zstd": hdf5plugin.Zstd(), "lz4": hdf5plugin.LZ4(),
               "bitshuffle": hdf5plugin.Bitshuffle(), "bzip2": hdf5plugin.BZip2()}
    out = {"data": data}
    with h5py.File(path, "w") as f:
        for name, flt in filters.items():
            d = f.create_dataset(name, data=data, chunks=(16, 16), **flt)
            d[10:30, 5:70] = data[10:30, 5:70] * 2     # a partial rewrite of written chunks
    with h5py.File(path, "r") as f:
        for name in filters:
            out[name] = f[name][...]
            out[name + "_filters"] = f[name].id.get_create_plist().get_nfilters()
    with open(out_path, "wb") as fh:
        pickle.dump(out, fh)
''')


def plugin_env() -> dict:
    """Under scripts/test --sanitize: an hdf5plugin filter frees with free() a buffer it
    allocated with new[] (ASan reports it in native HDF5 as well); that one check is off
    for these processes, every other one stays."""
    opts = os.environ.get("ASAN_OPTIONS")
    return {"ASAN_OPTIONS": opts + ":alloc_dealloc_mismatch=0"} if opts is not None else {}


def test_hdf5plugin_filters_same_as_native(tessera_env, tmp_path):
    """hdf5plugin's filters: the lossy ones (ZFP, SZ, SZ3) through HDF5's own pipeline
    give native's values; the lossless ones are stored with tessera's codecs."""
    native = run_scenario(tmp_path, native=True, scenario=PLUGIN_SCENARIO, extra_env=plugin_env())
    tess = run_scenario(tmp_path, native=False, scenario=PLUGIN_SCENARIO, extra_env=plugin_env())
    assert_same(native, tess)
    expected = native["data"].copy()
    expected[10:30, 5:70] *= 2
    for lossy in ("zfp_rate", "sz", "sz3"):
        assert not np.array_equal(native[lossy], expected), lossy  # really lossy
    for lossless in ("blosc", "zstd", "lz4", "bitshuffle", "bzip2"):
        assert np.array_equal(native[lossless], expected), lossless
