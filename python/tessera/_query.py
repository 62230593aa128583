"""Value indexes and queries on h5py objects stored by tessera (docs/queries.md).

    import h5py, tessera
    f = h5py.File("climate.h5", "a")                 # HDF5_VOL_CONNECTOR=tessera
    tessera.index(f["T"])                            # binned bitmap index of T
    n = tessera.query(f, "T > 300", result="count")
    xy = tessera.query(f, "T[0:50, :] > 270 && P < 1e5")   # (N, rank) coordinates in T
    m = tessera.query(f, "T[0:50, :] > 270", result="mask")  # bool, shaped like T[0:50, :]
    v = tessera.query(f, "T > 300", result="values")        # T's values there

Variables name datasets by path (relative to the file or group given, or absolute) or by
regular expression (re"..."); a subarray x[start:end:stride, ...] may follow.  All
variables of one query have the same number of elements, paired in row-major order; the
result is about the first variable.  Comparisons are exact: a decimal number is rounded
to float64 first, so float32 data compares like ``a.astype(np.float64) < t`` in numpy.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Callable, Literal, Optional, Union

import numpy as np

from ._errors import _hid, stack_error
from ._lib import PROGRESS, IndexConfig, IndexInfoC, QueryResultC, lib

Result = Literal["coords", "mask", "count", "values", "positions", "selection"]


@dataclass(frozen=True)
class IndexInfo:
    """What a dataset's value indexes cover (tessera_Dget_index_info)."""

    fragments: int           # fragments stored as files
    indexed: int             # of those, with an index
    inline_fragments: int    # small fragments kept in the catalog (always scanned)
    data_bytes: int          # bytes of the file fragments
    indexed_data_bytes: int  # bytes of the indexed ones
    index_bytes: int         # bytes of their indexes
    unindexed_cells: int     # stored cells a query would scan


def _error(what: str, obj=None) -> Exception:
    # The connector prefixes the HDF5 operation it ran; the tessera part is what matters.
    return stack_error(what, obj, strip=("object optional: ", "dataset optional: "))


def index(dset, *, precision: Optional[int] = None, max_bins: Optional[int] = None, rebuild: bool = False,
          progress: Optional[Callable[[int, int], Optional[bool]]] = None) -> None:
    """Builds the value index of every fragment of ``dset`` that has none.

    precision: significant decimal digits of the bin boundaries (1-9; default the file's
    ``index_precision`` setting, 3) — constants written with that many digits are answered
    by the index alone.  max_bins: most bins per fragment (default ``index_max_bins``,
    1024).  rebuild: rebuild existing indexes too.  progress(done, total) is called with
    cells done as the build goes; returning True stops it (TesseraError).
    Under MPI (a file opened with driver='mpio') the call is collective."""
    cb = None
    if progress is not None:
        def _cb(done, total, _udata):
            try:
                return 1 if progress(int(done), int(total)) else 0
            except Exception:  # an exception cannot cross C: stop the build instead
                return 1
        cb = PROGRESS(_cb)
    cfg = IndexConfig(precision or 0, max_bins or 0, 1 if rebuild else 0, cb if cb else PROGRESS(), None)
    if lib().tessera_Dbuild_index(_hid(dset), ctypes.byref(cfg), 0) < 0:
        raise _error("tessera.index", dset)


def drop_index(dset) -> None:
    """Removes the value indexes of ``dset`` (queries then scan it)."""
    if lib().tessera_Ddrop_index(_hid(dset), 0) < 0:
        raise _error("tessera.drop_index", dset)


def index_info(dset) -> IndexInfo:
    """How much of ``dset`` is indexed, and the sizes of data and index."""
    info = IndexInfoC()
    if lib().tessera_Dget_index_info(_hid(dset), ctypes.byref(info)) < 0:
        raise _error("tessera.index_info", dset)
    return IndexInfo(*(int(getattr(info, f)) for f, _ in IndexInfoC._fields_))


def _positions(loc, expr: str):
    """(positions, first dataset's path, start, stride, shape) of the hits."""
    r = QueryResultC()
    if lib().tessera_Fquery_positions(_hid(loc), expr.encode(), 0, ctypes.byref(r)) < 0:
        raise _error("tessera.query(%r)" % expr)
    try:
        rank = r.rank
        start = np.array(r.start[:rank], dtype=np.uint64)
        stride = np.array(r.stride[:rank], dtype=np.uint64)
        shape = tuple(int(x) for x in r.shape[:rank])
        n = int(r.count)
        pos = np.ctypeslib.as_array(r.positions, shape=(n,)).astype(np.uint64, copy=True) if n else \
            np.empty(0, dtype=np.uint64)
        path = r.dataset.decode() if r.dataset else ""
    finally:
        lib().tessera_query_result_free(ctypes.byref(r))
    return pos, path, start, stride, shape


def query(loc, expr: str, result: Result = "coords") -> Union[int, np.ndarray, object]:
    """Evaluates ``expr`` over the datasets of ``loc`` (an h5py File or Group).

    result:
      "count"      the number of elements satisfying it (int);
      "coords"     their coordinates in the first variable's dataset, (N, rank) uint64,
                   row-major order;
      "mask"       a bool array shaped like the first variable's subarray;
      "values"     the first variable's values there (1-D, row-major order);
      "positions"  their row-major positions in the first variable's subarray (uint64);
      "selection"  an h5py.h5s.SpaceID selecting them in the first variable's dataset.
    Raises TesseraError with the message tessera gives (a malformed expression names the
    character where it goes wrong)."""
    if result == "count":
        n = lib().tessera_Fquery_count(_hid(loc), expr.encode(), 0)
        if n < 0:
            raise _error("tessera.query(%r)" % expr)
        return int(n)
    if result == "selection":
        import h5py

        sid = lib().tessera_Fquery(_hid(loc), expr.encode(), 0)
        if sid < 0:
            raise _error("tessera.query(%r)" % expr)
        return h5py.h5s.SpaceID(sid)
    if result not in ("coords", "mask", "positions", "values"):
        raise ValueError("result must be one of 'coords', 'mask', 'count', 'values', 'positions', 'selection'")
    pos, path, start, stride, shape = _positions(loc, expr)
    if result == "positions":
        return pos
    if result == "mask":
        m = np.zeros(shape, dtype=bool)
        m.reshape(-1)[pos.astype(np.int64)] = True
        return m
    if len(pos) == 0:
        coords = np.empty((0, len(shape)), dtype=np.uint64)
    else:
        idx = np.stack(np.unravel_index(pos.astype(np.int64), shape), axis=1).astype(np.uint64)
        coords = idx * stride + start
    if result == "coords":
        return coords
    # values: one point read of the first variable's dataset at the coordinates.
    import h5py

    dset = loc.file[path]
    out = np.empty((len(coords),), dtype=dset.dtype)
    if len(coords):
        fspace = dset.id.get_space()
        fspace.select_elements(coords)
        dset.id.read(h5py.h5s.create_simple((len(coords),)), fspace, out)
    return out
