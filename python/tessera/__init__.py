"""tessera's own operations on h5py datasets stored by the tessera HDF5 connector.

In any venv with h5py (the stock wheel or a source build), `tessera.enable()` before
`import h5py` makes tessera the connector, and `tessera.check()` verifies that it is
(docs/install.md; `python -m tessera run python app.py` for unchanged programs).

An element of a dataset is *defined* from its first write until it is erased (or cut off
by a resize); undefined elements read as the fill value, exactly as in native HDF5
(docs/sparse.md).

    import h5py, tessera
    f = h5py.File("run.h5", "a")          # opened with HDF5_VOL_CONNECTOR=tessera
    d = f["frames"]
    tessera.defined(d, 5)                  # coordinates (N x rank) of frame 5's defined pixels
    tessera.defined(d, 5, mask=True)       # a boolean array of d[5]'s shape
    tessera.erase(d, (5, slice(0, 10)))    # back to undefined
    tessera.is_tessera(d)

A dataset's layout, the order of its tiles and of the cells in a tile (docs/layouts.md):

    tessera.create_dataset(f, "T", shape=(1024, 1024, 512), dtype="f4", chunks=(64, 64, 64),
                           layout="multimap")   # or "z-order", "hilbert:column-major", ...

Value indexes and queries (docs/queries.md):

    tessera.index(f["T"])                          # binned bitmap index
    tessera.query(f, "T[0:50, :] > 270 && P < 1e5")  # coordinates in T
    tessera.query(f, "T > 300", result="count")

`key` is anything h5py accepts in d[key] (integers, slices, Ellipsis, index lists, a
boolean mask); () means the whole dataset.  On a dataset that tessera does not store
(a native HDF5 file, a virtual dataset...) both raise TesseraError with the message
tessera put on HDF5's error stack.
"""
import numpy as np

from ._lib import lib

__all__ = ["TesseraError", "defined", "defined_space", "erase", "is_tessera",
           "index", "drop_index", "index_info", "IndexInfo", "query", "create_dataset", "LAYOUTS"]


class TesseraError(RuntimeError):
    """A tessera operation failed; the message is the one HDF5's error stack holds."""


def _hid(obj):
    return obj.id.id


def _file_space(dset, key):
    """The file-space selection of dset[key] (an h5py.h5s.SpaceID) and its Selection."""
    from h5py._hl import selections

    if not isinstance(key, tuple):
        key = (key,)
    sel = selections.select(dset.shape, key, dataset=dset)
    return sel.id, sel


def _stack_message(what):
    """The innermost message of HDF5's current error stack (through ctypes: H5Ewalk2).
    Call it before any other HDF5 call (h5py's included: dset.name is one): each clears
    the stack."""
    import ctypes

    from ._runtime import hdf5

    try:  # the libhdf5 h5py uses (libtessera_api binds to it)
        walk = hdf5().H5Ewalk2
    except AttributeError:
        return what
    msgs = []

    class Err(ctypes.Structure):
        _fields_ = [("cls_id", ctypes.c_int64), ("maj_num", ctypes.c_int64), ("min_num", ctypes.c_int64),
                    ("line", ctypes.c_uint), ("func_name", ctypes.c_char_p), ("file_name", ctypes.c_char_p),
                    ("desc", ctypes.c_char_p)]

    CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint, ctypes.POINTER(Err), ctypes.c_void_p)

    def cb(n, e, data):
        if e.contents.desc:
            msgs.append(e.contents.desc.decode(errors="replace"))
        return 0

    walk.argtypes = [ctypes.c_int64, ctypes.c_int, CB, ctypes.c_void_p]
    walk(0, 1, CB(cb), None)  # H5E_DEFAULT, H5E_WALK_DOWNWARD: the innermost record last
    tessera_msgs = [m for m in msgs if "tessera" in m]
    return "%s: %s" % (what, (tessera_msgs or msgs or ["failed"])[-1])


def is_tessera(obj):
    """True when obj (a file, group or dataset) is stored by the tessera connector."""
    r = lib().tessera_is_tessera(_hid(obj))
    if r < 0:
        raise TesseraError(_stack_message("is_tessera"))
    return bool(r)


def defined_space(dset, key=()):
    """The defined elements of dset[key] as an h5py.h5s.SpaceID selection (low level)."""
    import h5py

    space, _ = _file_space(dset, key)
    sid = lib().tessera_Dget_defined(_hid(dset), space.id, 0)
    if sid < 0:
        msg = _stack_message("tessera.defined")
        raise TesseraError(msg.replace("tessera.defined", "tessera.defined(%s)" % dset.name, 1))
    return h5py.h5s.SpaceID(sid)


def _coords(space, rank):
    """The selected coordinates of a SpaceID, (N, rank) uint64, row-major order."""
    import h5py

    t = space.get_select_type()
    if t == h5py.h5s.SEL_NONE:
        return np.empty((0, rank), dtype=np.uint64)
    if t == h5py.h5s.SEL_POINTS:
        return np.asarray(space.get_select_elem_pointlist(), dtype=np.uint64).reshape(-1, rank)
    if t == h5py.h5s.SEL_ALL:
        shape = space.shape
        return np.indices(shape).reshape(rank, -1).T.astype(np.uint64)
    blocks = np.asarray(space.get_select_hyper_blocklist(), dtype=np.uint64).reshape(-1, 2, rank)
    parts = []
    for lo, hi in blocks:
        grid = np.indices(tuple(int(x) for x in hi - lo + 1)).reshape(rank, -1).T
        parts.append(grid.astype(np.uint64) + lo)
    if not parts:
        return np.empty((0, rank), dtype=np.uint64)
    out = np.concatenate(parts)
    order = np.lexsort(out.T[::-1])  # row-major: last dimension fastest
    return out[order]


def defined(dset, key=(), mask=False):
    """The defined elements among dset[key].

    mask=False: their coordinates in the dataset, an (N, rank) uint64 array in row-major
    order (a point-list key: in the key's order).  mask=True: a boolean array shaped like
    dset[key] (simple keys — integers, slices, Ellipsis — only).  No values are read.
    """
    space = defined_space(dset, key)
    rank = len(dset.shape)
    c = _coords(space, rank)
    if not mask:
        return c
    _, sel = _file_space(dset, key)
    from h5py._hl import selections

    if not isinstance(sel, selections.SimpleSelection):
        raise TypeError("mask=True needs a simple key (integers, slices with steps, Ellipsis)")
    start, count, step, scalar = sel._sel
    out = np.zeros(tuple(int(n) for n in count), dtype=bool)
    if len(c):
        idx = (c.astype(np.int64) - np.asarray(start, dtype=np.int64)) // np.asarray(step, dtype=np.int64)
        out[tuple(idx.T)] = True
    return out.reshape(sel.array_shape)


def erase(dset, key=()):
    """Makes the elements of dset[key] undefined: they read as the fill value again,
    defined() no longer reports them, and consolidation gives their space back.  Atomic;
    durable at the next flush or close, like a write."""
    space, _ = _file_space(dset, key)
    if lib().tessera_Derase(_hid(dset), space.id, 0) < 0:
        msg = _stack_message("tessera.erase")
        raise TesseraError(msg.replace("tessera.erase", "tessera.erase(%s)" % dset.name, 1))

from ._tool import *  # noqa: E402,F401,F403  info, fragments, consolidate, vacuum, verify (docs/tool.md)
from ._tool import __all__ as _tool_all  # noqa: E402
__all__ += _tool_all
from ._history import Commit, commits, open_as_of  # noqa: E402  time travel (docs/tool.md)
__all__ += ["Commit", "commits", "open_as_of"]

from ._query import IndexInfo, drop_index, index, index_info, query  # noqa: E402  (needs TesseraError)
from ._layout import LAYOUTS, create_dataset  # noqa: E402  layouts (docs/layouts.md)
from ._runtime import Status, check, enable, environment, find_build  # noqa: E402  (docs/install.md)
__all__ += ["Status", "check", "enable", "environment", "find_build"]
