"""Shared pytest setup for tessera's Python tests.

The tests run inside the repository's venv (built by scripts/bootstrap, h5py compiled
from source against the same HDF5 1.14 the plugin is built against) with the connector
environment set *before* Python starts — HDF5 reads HDF5_VOL_CONNECTOR and
HDF5_PLUGIN_PATH once, when the library initialises on `import h5py`.  scripts/test
does this; by hand:  scripts/tessera-env run python -m pytest python_tests

Nothing here skips tests: a missing h5py is a usage error, a missing environment makes
the tests that need it fail with a message saying how to set it.

The helpers at module level (find_libhdf5, HDF5, default_connector_name) are also used
by child processes: `python conftest.py` prints the default connector's name.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import re
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
CONFTEST_PATH = Path(__file__).resolve()

hid_t = ctypes.c_int64  # HDF5 1.14: typedef int64_t hid_t
herr_t = ctypes.c_int
htri_t = ctypes.c_int


# --------------------------------------------------------------------------- helpers
@contextlib.contextmanager
def fragments_as_written():
    """Files opened inside keep every flush's fragment: no automatic consolidation
    (TESSERA_AUTO_CONSOLIDATE=0, read at each file's open; docs/engine.md, "Automatic
    consolidation").  For tests of explicit consolidation and of what each flush wrote."""
    old = os.environ.get("TESSERA_AUTO_CONSOLIDATE")
    os.environ["TESSERA_AUTO_CONSOLIDATE"] = "0"
    try:
        yield
    finally:
        if old is None:
            del os.environ["TESSERA_AUTO_CONSOLIDATE"]
        else:
            os.environ["TESSERA_AUTO_CONSOLIDATE"] = old


def without_compat(env: dict) -> dict:
    """Drops only the compat library from LD_PRELOAD: a sanitizer runtime preloaded ahead
    of it stays (under scripts/test --sanitize, an instrumented library a child loads,
    such as the tessera Python package's libtessera_api.so, aborts without it)."""
    kept = [p for p in env.get("LD_PRELOAD", "").split(":") if p and "libtessera_compat" not in p]
    if kept:
        env["LD_PRELOAD"] = ":".join(kept)
    else:
        env.pop("LD_PRELOAD", None)
    return env


def native_env(env: dict | None = None) -> dict:
    """The environment of a child process that must use native HDF5: no tessera connector
    and no compat library (without_compat)."""
    env = dict(os.environ if env is None else env)
    env.pop("HDF5_VOL_CONNECTOR", None)
    return without_compat(env)


def tool_path() -> str:
    """The `tessera` command line tool of the build the environment points at: it sits in
    <build>/tools beside <build>/plugins (HDF5_PLUGIN_PATH)."""
    for d in filter(None, os.environ.get("HDF5_PLUGIN_PATH", "").split(":")):
        tool = Path(d).parent / "tools" / "tessera"
        if tool.is_file():
            return str(tool)
    pytest.fail(f"no <build>/tools/tessera beside HDF5_PLUGIN_PATH={os.environ.get('HDF5_PLUGIN_PATH', '')!r} "
                "(build it: scripts/test, or ninja -C <build> tessera_cli)")


def find_libhdf5() -> str:
    """Path of the libhdf5 this process has loaded (via h5py), from /proc/self/maps."""
    import h5py  # noqa: F401  (loads libhdf5)
    import h5py.h5p  # noqa: F401

    pattern = re.compile(r"^libhdf5(-[0-9a-f]+)?\.so")  # not libhdf5_hl; wheels use libhdf5-<hash>.so
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
        for line in maps:
            parts = line.split(None, 5)
            if len(parts) == 6:
                path = parts[5].strip()
                if pattern.match(os.path.basename(path)):
                    return path
    raise RuntimeError("h5py is imported but no libhdf5 appears in /proc/self/maps")


class HDF5:
    """The few HDF5 C functions the tests need, called through ctypes on the libhdf5
    that h5py loaded (dlopen of an already loaded path returns the same library)."""

    def __init__(self, path: str | None = None):
        self.path = path or find_libhdf5()
        lib = ctypes.CDLL(self.path)
        lib.H5Pget_vol_id.argtypes = [hid_t, ctypes.POINTER(hid_t)]
        lib.H5Pget_vol_id.restype = herr_t
        lib.H5Pget_vol_cap_flags.argtypes = [hid_t, ctypes.POINTER(ctypes.c_uint64)]
        lib.H5Pget_vol_cap_flags.restype = herr_t
        lib.H5VLget_connector_name.argtypes = [hid_t, ctypes.c_char_p, ctypes.c_size_t]
        lib.H5VLget_connector_name.restype = ctypes.c_ssize_t
        lib.H5VLis_connector_registered_by_name.argtypes = [ctypes.c_char_p]
        lib.H5VLis_connector_registered_by_name.restype = htri_t
        lib.H5VLget_connector_id_by_name.argtypes = [ctypes.c_char_p]
        lib.H5VLget_connector_id_by_name.restype = hid_t
        lib.H5VLcmp_connector_cls.argtypes = [ctypes.POINTER(ctypes.c_int), hid_t, hid_t]
        lib.H5VLcmp_connector_cls.restype = herr_t
        lib.H5VLclose.argtypes = [hid_t]
        lib.H5VLclose.restype = herr_t
        self.lib = lib

    def vol_id(self, fapl_id: int) -> int:
        out = hid_t(-1)
        if self.lib.H5Pget_vol_id(fapl_id, ctypes.byref(out)) < 0:
            raise RuntimeError(f"H5Pget_vol_id({fapl_id}) failed")
        return out.value

    def connector_name(self, fapl_id: int) -> str:
        """Name of the VOL connector set on a file-access plist.

        H5VLget_connector_name() takes an *object* ID (file, group, dataset...), not a
        connector ID, and the skeleton cannot create files; so compare the plist's
        connector class with each registered candidate (H5VLcmp_connector_cls).
        Candidates are looked up only if already registered: this never loads a plugin."""
        vol = self.vol_id(fapl_id)
        try:
            for name in ("tessera", "native"):
                bname = name.encode()
                if self.lib.H5VLis_connector_registered_by_name(bname) <= 0:
                    continue
                cid = self.lib.H5VLget_connector_id_by_name(bname)
                if cid < 0:
                    continue
                try:
                    cmp = ctypes.c_int(1)
                    if self.lib.H5VLcmp_connector_cls(ctypes.byref(cmp), vol, cid) >= 0 and cmp.value == 0:
                        return name
                finally:
                    self.lib.H5VLclose(cid)
            return "unknown"
        finally:
            self.lib.H5VLclose(vol)

    def cap_flags(self, fapl_id: int) -> int:
        out = ctypes.c_uint64(0)
        if self.lib.H5Pget_vol_cap_flags(fapl_id, ctypes.byref(out)) < 0:
            raise RuntimeError("H5Pget_vol_cap_flags failed")
        return out.value


def new_fapl():
    """A fresh file-access plist (h5py object; keep it alive while using .id)."""
    import h5py.h5p

    return h5py.h5p.create(h5py.h5p.FILE_ACCESS)


def default_connector_name() -> str:
    """Name of the connector a new file-access plist gets by default."""
    fapl = new_fapl()
    return HDF5().connector_name(fapl.id)


ENV_HINT = (
    "HDF5_VOL_CONNECTOR / HDF5_PLUGIN_PATH must be set before Python starts "
    "(run scripts/test, or: scripts/tessera-env run python -m pytest python_tests)"
)


# --------------------------------------------------------------------------- pytest hooks
def pytest_configure(config):
    try:
        import h5py  # noqa: F401
    except ImportError as exc:
        raise pytest.UsageError(
            f"h5py cannot be imported by {sys.executable}: {exc}\n"
            f"The tests need h5py built from source against tessera's HDF5: run scripts/bootstrap "
            f"and use {REPO_ROOT}/.venv/bin/python (scripts/test and scripts/tessera-env do)."
        ) from exc


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def hdf5() -> HDF5:
    return HDF5()


@pytest.fixture(scope="session")
def tessera_env() -> dict:
    """The connector environment; fails (not skips) the test if it is missing."""
    conn = os.environ.get("HDF5_VOL_CONNECTOR", "")
    plugin_path = os.environ.get("HDF5_PLUGIN_PATH", "")
    if conn.split(" ", 1)[0] != "tessera":
        pytest.fail(f"HDF5_VOL_CONNECTOR is {conn!r}, expected 'tessera'. {ENV_HINT}")
    plugin = next((Path(d) / "libtessera.so" for d in plugin_path.split(":")
                   if d and (Path(d) / "libtessera.so").is_file()), None)
    if plugin is None:
        pytest.fail(f"no libtessera.so in HDF5_PLUGIN_PATH={plugin_path!r}. {ENV_HINT}")
    return {"HDF5_VOL_CONNECTOR": conn, "HDF5_PLUGIN_PATH": plugin_path, "plugin": str(plugin)}


@pytest.fixture(scope="session")
def conftest_path() -> Path:
    return CONFTEST_PATH


if __name__ == "__main__":
    # Used by tests (and scripts/demo) in a child process: print the default connector.
    print(default_connector_name())
