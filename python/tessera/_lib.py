"""Loading libtessera_api (include/tessera/tessera.h) with ctypes.

The library has no DT_NEEDED entry for libhdf5: it must bind to the one h5py loaded
(identifiers are passed between them as plain integers), whichever it is — HDF5 1.14 of a
source-built h5py or the 2.x a wheel bundles.  h5py loads libhdf5 privately (RTLD_LOCAL),
so that library is first promoted to the global scope (_runtime.hdf5()).  Where it is looked for, in order: $TESSERA_API_LIB; <dir>/../lib for each
<dir> of $HDF5_PLUGIN_PATH (the build's plugins/ beside its lib/); the repository's
build/lib next to this package."""
import ctypes
import os

_lib = None


def _candidates():
    env = os.environ.get("TESSERA_API_LIB")
    if env:
        yield env
    for d in filter(None, os.environ.get("HDF5_PLUGIN_PATH", "").split(":")):
        yield os.path.join(d, os.pardir, "lib", "libtessera_api.so")
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, os.pardir, os.pardir, "build", "lib", "libtessera_api.so")


def lib():
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in _candidates():
        path = os.path.normpath(path)
        if not os.path.exists(path):
            tried.append(path)
            continue
        from ._runtime import hdf5

        hdf5()  # h5py's libhdf5, in the global scope: the library's HDF5 symbols bind to it
        l = ctypes.CDLL(path)
        hid = ctypes.c_int64
        l.tessera_Dget_defined.argtypes = [hid, hid, hid]
        l.tessera_Dget_defined.restype = hid
        l.tessera_Derase.argtypes = [hid, hid, hid]
        l.tessera_Derase.restype = ctypes.c_int
        l.tessera_is_tessera.argtypes = [hid]
        l.tessera_is_tessera.restype = ctypes.c_int
        _value_queries(l)
        _lib = l
        return l
    raise ImportError("libtessera_api.so not found (build tessera, or set TESSERA_API_LIB); looked in: "
                      + ", ".join(tried))


# ---- value indexes and queries (include/tessera/tessera.h) -----------------------------------------
hsize = ctypes.c_uint64
MAX_RANK = 32
PROGRESS = ctypes.CFUNCTYPE(ctypes.c_int, hsize, hsize, ctypes.c_void_p)


class IndexConfig(ctypes.Structure):
    _fields_ = [("precision", ctypes.c_uint), ("max_bins", ctypes.c_uint), ("rebuild", ctypes.c_int),
                ("progress", PROGRESS), ("udata", ctypes.c_void_p)]


class IndexInfoC(ctypes.Structure):
    _fields_ = [(name, hsize) for name in ("fragments", "indexed", "inline_fragments", "data_bytes",
                                           "indexed_data_bytes", "index_bytes", "unindexed_cells")]


class QueryResultC(ctypes.Structure):
    _fields_ = [("dataset", ctypes.c_char_p), ("rank", ctypes.c_int), ("start", hsize * MAX_RANK),
                ("stride", hsize * MAX_RANK), ("shape", hsize * MAX_RANK), ("count", hsize),
                ("positions", ctypes.POINTER(hsize))]


def _value_queries(l):
    hid = ctypes.c_int64
    l.tessera_Dbuild_index.argtypes = [hid, ctypes.POINTER(IndexConfig), hid]
    l.tessera_Dbuild_index.restype = ctypes.c_int
    l.tessera_Ddrop_index.argtypes = [hid, hid]
    l.tessera_Ddrop_index.restype = ctypes.c_int
    l.tessera_Dget_index_info.argtypes = [hid, ctypes.POINTER(IndexInfoC)]
    l.tessera_Dget_index_info.restype = ctypes.c_int
    l.tessera_Fquery_count.argtypes = [hid, ctypes.c_char_p, hid]
    l.tessera_Fquery_count.restype = ctypes.c_int64
    l.tessera_Fquery.argtypes = [hid, ctypes.c_char_p, hid]
    l.tessera_Fquery.restype = hid
    l.tessera_Fquery_positions.argtypes = [hid, ctypes.c_char_p, hid, ctypes.POINTER(QueryResultC)]
    l.tessera_Fquery_positions.restype = ctypes.c_int
    l.tessera_query_result_free.argtypes = [ctypes.POINTER(QueryResultC)]
    l.tessera_query_result_free.restype = None
