"""tessera's exception and how its message is taken from HDF5's error stack; every
module of the package raises through these (no other module imports the package itself)."""


class TesseraError(RuntimeError):
    """A tessera operation failed; the message is the one HDF5's error stack holds."""


def _hid(obj):
    return obj.id.id


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


def stack_error(what, obj=None, strip=()):
    """TesseraError with the stack's message (see _stack_message; call it first).  obj's
    name is put after `what` (asked for after the stack is read); `strip` lists prefixes
    the connector adds that say nothing to a Python user."""
    msg = _stack_message(what)
    for prefix in strip:
        msg = msg.replace(prefix, "", 1)
    if obj is not None:
        msg = msg.replace(what, "%s(%s)" % (what, obj.name), 1)
    return TesseraError(msg)
