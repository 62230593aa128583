"""Loading libtessera_api (api/tessera.h) with ctypes.

The library must use the same libhdf5 as h5py (it does when both come from this
repository's build and scripts/bootstrap): identifiers are passed between them as plain
integers.  Where it is looked for, in order: $TESSERA_API_LIB; <dir>/../lib for each
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
        # h5py has loaded libhdf5 already (import h5py first): the library binds to it.
        import h5py  # noqa: F401
        l = ctypes.CDLL(path)
        hid = ctypes.c_int64
        l.tessera_Dget_defined.argtypes = [hid, hid, hid]
        l.tessera_Dget_defined.restype = hid
        l.tessera_Derase.argtypes = [hid, hid, hid]
        l.tessera_Derase.restype = ctypes.c_int
        l.tessera_is_tessera.argtypes = [hid]
        l.tessera_is_tessera.restype = ctypes.c_int
        _lib = l
        return l
    raise ImportError("libtessera_api.so not found (build tessera, or set TESSERA_API_LIB); looked in: "
                      + ", ".join(tried))
