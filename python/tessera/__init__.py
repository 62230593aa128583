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
from ._errors import TesseraError
from ._sparse import defined, defined_space, erase, is_tessera
from ._query import IndexInfo, drop_index, index, index_info, query  # docs/queries.md
from ._layout import LAYOUTS, create_dataset  # docs/layouts.md
from ._tool import *  # noqa: F401,F403  info, fragments, consolidate, vacuum, verify (docs/tool.md)
from ._tool import __all__ as _tool_all
from ._history import Commit, commits, open_as_of  # time travel (docs/tool.md)
from ._runtime import Status, check, enable, environment, find_build  # docs/install.md

__all__ = ["TesseraError", "defined", "defined_space", "erase", "is_tessera",
           "index", "drop_index", "index_info", "IndexInfo", "query", "create_dataset", "LAYOUTS",
           *_tool_all, "Commit", "commits", "open_as_of",
           "Status", "check", "enable", "environment", "find_build"]
