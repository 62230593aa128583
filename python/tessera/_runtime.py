"""The HDF5 library of this process, and making tessera the connector h5py uses.

tessera's plugin and libraries link no libhdf5 of their own: they run inside the one the
process already has — the HDF5 1.14 a source-built h5py uses, or the HDF5 2.x a binary
h5py wheel bundles (h5py.libs/libhdf5-<hash>.so.320) — so `pip install h5py` and
`pip install -e <repo>/python` are enough (docs/install.md):

    import tessera
    tessera.enable()          # before h5py is imported: plugin path, connector, v1 calls
    import h5py
    h5py.File("run.h5", "w")  # a tessera container

enable() sets HDF5_PLUGIN_PATH and HDF5_VOL_CONNECTOR (HDF5 reads them once, when h5py
initialises the library), loads the compat library (docs/compat.md) into the global
symbol scope so that h5py's v1 calls reach it, imports h5py and calls check(), which
raises TesseraError unless a new file-access property list really selects tessera.
"""
from __future__ import annotations

import ctypes
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ._errors import TesseraError

hid_t = ctypes.c_int64
_HDF5_NAME = re.compile(r"^libhdf5(-[0-9a-f]+)?\.so")  # not libhdf5_hl; wheels: libhdf5-<hash>.so


def loaded_hdf5_paths() -> list[str]:
    """The distinct libhdf5 files mapped into this process (/proc/self/maps)."""
    paths: list[str] = []
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
        for line in maps:
            parts = line.split(None, 5)
            if len(parts) == 6:
                path = parts[5].strip()
                if _HDF5_NAME.match(os.path.basename(path)) and path not in paths:
                    paths.append(path)
    return paths


_hdf5 = None


def hdf5() -> ctypes.CDLL:
    """ctypes handle on h5py's libhdf5 (imports h5py).  Opened with RTLD_NOLOAD: it never
    loads a library, and with RTLD_GLOBAL: libtessera_api.so, which has no DT_NEEDED entry
    for libhdf5, binds to it.  Exactly one libhdf5 must be loaded."""
    global _hdf5
    if _hdf5 is not None:
        return _hdf5
    import h5py  # noqa: F401  (loads libhdf5)
    import h5py.h5p  # noqa: F401

    paths = loaded_hdf5_paths()
    if len(paths) != 1:
        raise TesseraError("tessera needs exactly one libhdf5 in the process; found %d: %s"
                     % (len(paths), ", ".join(paths) or "none"))
    lib = ctypes.CDLL(paths[0], mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL | os.RTLD_NOW)
    lib.H5Pget_vol_id.argtypes = [hid_t, ctypes.POINTER(hid_t)]
    lib.H5Pget_vol_id.restype = ctypes.c_int
    lib.H5VLis_connector_registered_by_name.argtypes = [ctypes.c_char_p]
    lib.H5VLis_connector_registered_by_name.restype = ctypes.c_int
    lib.H5VLget_connector_id_by_name.argtypes = [ctypes.c_char_p]
    lib.H5VLget_connector_id_by_name.restype = hid_t
    lib.H5VLcmp_connector_cls.argtypes = [ctypes.POINTER(ctypes.c_int), hid_t, hid_t]
    lib.H5VLcmp_connector_cls.restype = ctypes.c_int
    lib.H5VLclose.argtypes = [hid_t]
    lib.H5VLclose.restype = ctypes.c_int
    lib.H5get_libversion.argtypes = [ctypes.POINTER(ctypes.c_uint)] * 3
    lib.H5get_libversion.restype = ctypes.c_int
    lib.path = paths[0]
    _hdf5 = lib
    return lib


def hdf5_version() -> str:
    v = [ctypes.c_uint(0) for _ in range(3)]
    hdf5().H5get_libversion(*[ctypes.byref(x) for x in v])
    return ".".join(str(x.value) for x in v)


def _fapl_is_tessera(lib, fapl_id: int) -> bool:
    vol = hid_t(-1)
    if lib.H5Pget_vol_id(fapl_id, ctypes.byref(vol)) < 0:
        raise TesseraError("H5Pget_vol_id failed on a new file-access property list")
    try:
        if lib.H5VLis_connector_registered_by_name(b"tessera") <= 0:
            return False
        tess = lib.H5VLget_connector_id_by_name(b"tessera")
        if tess < 0:
            return False
        try:
            cmp = ctypes.c_int(1)
            return lib.H5VLcmp_connector_cls(ctypes.byref(cmp), vol, tess) >= 0 and cmp.value == 0
        finally:
            lib.H5VLclose(tess)
    finally:
        lib.H5VLclose(vol.value)


@dataclass(frozen=True)
class Status:
    """What check() found: the connector a new fapl selects, and the library."""
    connector: str
    hdf5_version: str
    hdf5_path: str


def _plugin_dirs() -> list[Path]:
    return [Path(d) for d in os.environ.get("HDF5_PLUGIN_PATH", "").split(":") if d]


def _why_not_loaded() -> str:
    """A best guess at why HDF5 did not load the plugin, for the error message."""
    conn = os.environ.get("HDF5_VOL_CONNECTOR", "")
    if conn.split(" ", 1)[0] != "tessera":
        return ("HDF5_VOL_CONNECTOR is %r when the library initialised; call tessera.enable() "
                "before importing h5py, or run the program with `python -m tessera run ...`" % conn)
    plugins = [d / "libtessera.so" for d in _plugin_dirs() if (d / "libtessera.so").exists()]
    if not plugins:
        return "no libtessera.so in HDF5_PLUGIN_PATH=%r" % os.environ.get("HDF5_PLUGIN_PATH", "")
    try:  # the loader does nothing until HDF5 asks it for the class: safe to open
        ctypes.CDLL(str(plugins[0]), mode=os.RTLD_LOCAL)
    except OSError as exc:
        return "HDF5 cannot load %s: %s" % (plugins[0], exc)
    return ("HDF5 did not register %s (its reason is printed above on stderr, "
            "'tessera: the VOL connector cannot be loaded: ...')" % plugins[0])


def check() -> Status:
    """Raises TesseraError unless a new file-access property list of this process's HDF5
    selects the tessera connector, i.e. unless h5py.File(...) makes tessera containers.
    When the plugin named by HDF5_VOL_CONNECTOR cannot be loaded, HDF5 1.14 falls back
    to its native connector, silently, and HDF5 2.x fails to initialise (h5py then
    crashes on its first call): both become this error, with the reason."""
    import h5py.h5p

    lib = hdf5()
    version = hdf5_version()
    # Is tessera registered at all?  Asked first, without h5py: HDF5 2.x does not fall
    # back — a default connector it cannot load fails the library's initialisation, and
    # h5py then crashes on its first property-list call.
    if lib.H5VLis_connector_registered_by_name(b"tessera") <= 0:
        asked = os.environ.get("HDF5_VOL_CONNECTOR", "").split(" ", 1)[0] == "tessera"
        failed = asked and not version.startswith("1.")  # 2.x does not fall back to native
        raise TesseraError("HDF5 %s (%s) does not use the tessera connector: it is not registered%s; %s"
                     % (version, lib.path, " (HDF5 2.x: the library failed to initialise)" if failed else "",
                        _why_not_loaded()))
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    if not _fapl_is_tessera(lib, fapl.id):
        raise TesseraError("HDF5 %s (%s) does not use the tessera connector: %s"
                     % (version, lib.path, _why_not_loaded()))
    return Status("tessera", version, lib.path)


# --------------------------------------------------------------------------- enable
def find_build(build_dir=None) -> Path:
    """The tessera build: `build_dir`, else $TESSERA_BUILD_DIR, else the build whose
    plugins/ is in HDF5_PLUGIN_PATH, else the repository's build/ next to this package
    (an editable install)."""
    cands = []
    if build_dir:
        cands.append(Path(build_dir))
    if os.environ.get("TESSERA_BUILD_DIR"):
        cands.append(Path(os.environ["TESSERA_BUILD_DIR"]))
    cands += [d.parent for d in _plugin_dirs()]
    cands.append(Path(__file__).resolve().parent.parent.parent / "build")
    for c in cands:
        if (c / "plugins" / "libtessera.so").is_file():
            return c.resolve()
    raise TesseraError("no tessera build found (looked for plugins/libtessera.so in: %s); build it "
                 "(scripts/demo) and pass build_dir= or set TESSERA_BUILD_DIR"
                 % ", ".join(str(c) for c in cands))


def environment(build_dir=None, settings: str = "") -> dict:
    """The variables that select tessera, for a new process (docs/install.md): pass them
    to subprocess, or print them (`python -m tessera env`)."""
    b = find_build(build_dir)
    env = {}
    plugin_path = [str(b / "plugins")] + [str(d) for d in _plugin_dirs() if d.resolve() != b / "plugins"]
    env["HDF5_PLUGIN_PATH"] = ":".join(plugin_path)
    conn = os.environ.get("HDF5_VOL_CONNECTOR", "")
    env["HDF5_VOL_CONNECTOR"] = ("tessera " + settings).strip() if settings or not conn.startswith("tessera ") \
        else conn
    compat = b / "compat" / "libtessera_compat.so"
    preload = [p for p in os.environ.get("LD_PRELOAD", "").split(":") if p]
    if compat.is_file() and str(compat) not in preload:
        # After a sanitizer runtime already preloaded (ASan must come first in the list).
        at = 0
        while at < len(preload) and os.path.basename(preload[at]).startswith(
                ("libasan", "libubsan", "libtsan", "libclang_rt")):
            at += 1
        preload.insert(at, str(compat))
    if preload:
        env["LD_PRELOAD"] = ":".join(preload)
    return env


def enable(build_dir=None, settings: str = "") -> Status:
    """Makes tessera the HDF5 connector of this process; call it before importing h5py.
    Returns check()'s Status; raises TesseraError if tessera is not in use afterwards."""
    if loaded_hdf5_paths():  # HDF5 is loaded (h5py imported): its connector is chosen
        try:
            return check()
        except Exception as exc:
            raise TesseraError("h5py was imported before tessera.enable(), and HDF5 chose its connector "
                         "when it initialised: call tessera.enable() first (or run the program with "
                         "`python -m tessera run ...`). %s" % exc) from None
    env = environment(build_dir, settings)
    os.environ["HDF5_PLUGIN_PATH"] = env["HDF5_PLUGIN_PATH"]
    os.environ["HDF5_VOL_CONNECTOR"] = env["HDF5_VOL_CONNECTOR"]
    os.environ.setdefault("TESSERA_BUILD_DIR", str(find_build(build_dir)))
    compat = find_build(build_dir) / "compat" / "libtessera_compat.so"
    if compat.is_file():
        # In the global scope before h5py's modules load, its v1 functions (H5Literate1, ...)
        # come before libhdf5's for them, as with LD_PRELOAD (docs/compat.md).
        ctypes.CDLL(str(compat), mode=os.RTLD_GLOBAL | os.RTLD_NOW)
    return check()
