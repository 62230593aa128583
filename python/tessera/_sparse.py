"""Defined elements of a dataset, and erasing them (docs/sparse.md)."""
import numpy as np

from ._errors import _hid, stack_error
from ._lib import lib


def _file_space(dset, key):
    """The file-space selection of dset[key] (an h5py.h5s.SpaceID) and its Selection."""
    from h5py._hl import selections

    if not isinstance(key, tuple):
        key = (key,)
    sel = selections.select(dset.shape, key, dataset=dset)
    return sel.id, sel


def is_tessera(obj):
    """True when obj (a file, group or dataset) is stored by the tessera connector."""
    r = lib().tessera_is_tessera(_hid(obj))
    if r < 0:
        raise stack_error("is_tessera")
    return bool(r)


def defined_space(dset, key=()):
    """The defined elements of dset[key] as an h5py.h5s.SpaceID selection (low level)."""
    import h5py

    space, _ = _file_space(dset, key)
    sid = lib().tessera_Dget_defined(_hid(dset), space.id, 0)
    if sid < 0:
        raise stack_error("tessera.defined", dset)
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
        raise stack_error("tessera.erase", dset)
