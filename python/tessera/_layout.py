"""Creating h5py datasets with a tessera layout (docs/layouts.md).

    import h5py, tessera
    f = h5py.File("cube.h5", "w")        # opened with HDF5_VOL_CONNECTOR=tessera
    d = tessera.create_dataset(f, "T", shape=(1024, 1024, 512), dtype="f4",
                               chunks=(64, 64, 64), layout="multimap")

The layout is the order of the dataset's tiles (chunks) in storage: "row-major" (HDF5's,
the default), "column-major", "z-order", "hilbert" or "multimap", optionally followed by
":row-major" or ":column-major", the order of the cells inside each tile (default
row-major; "multimap" is "multimap:column-major", docs/layouts.md).  Values read and written
are the same whatever it is; it decides how many and how large the reads of a beam or a
box are.  On a file that tessera does not store the layout is ignored (native HDF5 has
one chunk order), as tessera_Pset_layout is."""
import ctypes

from ._lib import lib

LAYOUTS = ("row-major", "column-major", "z-order", "hilbert", "multimap")


def create_dataset(group, name, shape=None, dtype=None, data=None, layout=None, **kwds):
    """group.create_dataset(name, shape, dtype, data, **kwds) with the tile order `layout`
    (None: the connector's layout= setting).  An unknown layout raises ValueError (the
    connector checks the name too, so a C caller gets an HDF5 error)."""
    import h5py

    dcpl = kwds.pop("dcpl", None) or h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    if layout is not None:
        from ._errors import TesseraError, _stack_message

        known = LAYOUTS + ("row", "column", "col", "zorder", "morton")
        parts = layout.lower().split(":", 1) if isinstance(layout, str) else [None]
        if parts[0] not in known or (len(parts) == 2 and parts[1] not in known):
            raise ValueError("unknown layout %r (known: %s; each optionally followed by :row-major or "
                             ":column-major)" % (layout, ", ".join(LAYOUTS)))
        fn = lib().tessera_Pset_layout
        fn.argtypes = [ctypes.c_int64, ctypes.c_char_p]
        fn.restype = ctypes.c_int
        if fn(dcpl.id, layout.encode()) < 0:
            raise TesseraError(_stack_message("tessera_Pset_layout"))
    return group.create_dataset(name, shape=shape, dtype=dtype, data=data, dcpl=dcpl, **kwds)
