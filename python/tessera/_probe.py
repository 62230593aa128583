"""Run by path (`python .../tessera/_probe.py [CLIENT ...]`) by the launchers
(scripts/tessera-env run, python -m tessera run) in the interpreter a program will use,
with the program's environment: exits 0 if the libhdf5 of every CLIENT makes tessera
containers, else prints why and exits 1.

CLIENT is a Python package that brings an HDF5 of its own: h5py, netCDF4 or tables
(PyTables, also what pandas' to_hdf uses).  Without arguments: every one of them
installed in this interpreter; none installed means nothing to check (exit 0).  Each is
checked in a child process of its own: each wheel bundles its own libhdf5, and one
process binds the plugin to one of them.  Needs none of the tessera package."""
import ctypes
import importlib.util
import os
import re
import subprocess
import sys

CLIENTS = ("h5py", "netCDF4", "tables")
_HDF5_NAME = re.compile(r"^libhdf5(-[0-9a-f]+)?\.so")  # not libhdf5_hl; wheels: libhdf5-<hash>.so


def _loaded_hdf5():
    paths = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split(None, 5)
            if len(parts) == 6 and _HDF5_NAME.match(os.path.basename(parts[5].strip())):
                if parts[5].strip() not in paths:
                    paths.append(parts[5].strip())
    return paths


def check_one(client):
    """In this process: imports CLIENT (which loads its libhdf5) and asks that library
    whether a new file-access property list selects tessera.  Returns an error or None."""
    try:
        mod = __import__(client)
    except Exception as exc:  # noqa: BLE001
        return "cannot import %s: %s" % (client, exc)
    paths = _loaded_hdf5()
    if len(paths) != 1:
        return "%s: expected exactly one libhdf5 in the process, found: %s" % (client, paths or "none")
    lib = ctypes.CDLL(paths[0], mode=os.RTLD_NOLOAD)
    hid = ctypes.c_int64
    lib.H5Pcreate.argtypes = [hid]
    lib.H5Pcreate.restype = hid
    lib.H5Pget_vol_id.argtypes = [hid, ctypes.POINTER(hid)]
    lib.H5VLget_connector_id_by_name.restype = hid
    lib.H5VLcmp_connector_cls.argtypes = [ctypes.POINTER(ctypes.c_int), hid, hid]
    ver = [ctypes.c_uint(0) for _ in range(3)]
    lib.H5get_libversion(*[ctypes.byref(v) for v in ver])
    what = "%s's HDF5 %s (%s)" % (client, ".".join(str(v.value) for v in ver), paths[0])
    env = "HDF5_VOL_CONNECTOR=%r, HDF5_PLUGIN_PATH=%r" % (os.environ.get("HDF5_VOL_CONNECTOR", ""),
                                                          os.environ.get("HDF5_PLUGIN_PATH", ""))
    # H5open first: HDF5 2.x fails its initialisation when it cannot load the default
    # connector (1.14 falls back to native); either way the answer is "not registered".
    if lib.H5open() < 0 or lib.H5VLis_connector_registered_by_name(b"tessera") <= 0:
        return ("%s does not use the tessera connector: it is not registered, HDF5 cannot load the "
                "plugin (%s)" % (what, env))
    fapl = lib.H5Pcreate(hid.in_dll(lib, "H5P_CLS_FILE_ACCESS_ID_g").value)
    vol, cmp = hid(-1), ctypes.c_int(1)
    tess = hid(lib.H5VLget_connector_id_by_name(b"tessera"))
    ok = (fapl >= 0 and lib.H5Pget_vol_id(fapl, ctypes.byref(vol)) >= 0 and tess.value >= 0
          and lib.H5VLcmp_connector_cls(ctypes.byref(cmp), vol, tess) >= 0 and cmp.value == 0)
    if not ok:
        return "%s does not use the tessera connector (%s); HDF5 would silently write native files" % (what, env)
    del mod
    return None


def main(argv):
    if argv[:1] == ["--one"]:
        why = check_one(argv[1])
        if why:
            print(why, file=sys.stderr)
        return 1 if why else 0
    clients = argv or [c for c in CLIENTS if importlib.util.find_spec(c) is not None]
    if len(clients) == 1:
        return main(["--one", clients[0]])
    failed = 0
    for c in clients:
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", c],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            failed += 1
            print(r.stdout.strip() or "%s: the check exited %d" % (c, r.returncode), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
