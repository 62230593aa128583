"""Run by path (`python .../tessera/_probe.py`) by the launchers (scripts/tessera-env run,
python -m tessera run) in the interpreter a program will use, with the program's
environment: exits 0 if that interpreter's h5py makes tessera containers, else prints
why and exits 1.  Needs only h5py (the tessera package may not be installed there)."""
import ctypes
import os
import re
import sys


def main():
    try:
        import h5py
        import h5py.h5p
    except Exception as exc:  # noqa: BLE001
        print("cannot import h5py: %s" % exc, file=sys.stderr)
        return 1
    name = re.compile(r"^libhdf5(-[0-9a-f]+)?\.so")
    paths = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split(None, 5)
            if len(parts) == 6 and name.match(os.path.basename(parts[5].strip())):
                if parts[5].strip() not in paths:
                    paths.append(parts[5].strip())
    if len(paths) != 1:
        print("expected exactly one libhdf5 in the process, found: %s" % (paths or "none"), file=sys.stderr)
        return 1
    lib = ctypes.CDLL(paths[0], mode=os.RTLD_NOLOAD)
    hid = ctypes.c_int64
    # Registered at all?  Asked before any h5py call: HDF5 2.x fails its initialisation
    # when it cannot load the default connector, and h5py then crashes on its first call.
    if lib.H5VLis_connector_registered_by_name(b"tessera") <= 0:
        print("HDF5 %s (%s) does not use the tessera connector: it is not registered, HDF5 cannot "
              "load the plugin (HDF5_VOL_CONNECTOR=%r, HDF5_PLUGIN_PATH=%r)"
              % (h5py.version.hdf5_version, paths[0], os.environ.get("HDF5_VOL_CONNECTOR", ""),
                 os.environ.get("HDF5_PLUGIN_PATH", "")), file=sys.stderr)
        return 1
    vol, tess, cmp = hid(-1), hid(-1), ctypes.c_int(1)
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    lib.H5Pget_vol_id.argtypes = [hid, ctypes.POINTER(hid)]
    lib.H5VLget_connector_id_by_name.restype = hid
    lib.H5VLcmp_connector_cls.argtypes = [ctypes.POINTER(ctypes.c_int), hid, hid]
    ok = (lib.H5Pget_vol_id(fapl.id, ctypes.byref(vol)) >= 0
          and lib.H5VLis_connector_registered_by_name(b"tessera") > 0)
    if ok:
        tess = hid(lib.H5VLget_connector_id_by_name(b"tessera"))
        ok = tess.value >= 0 and lib.H5VLcmp_connector_cls(ctypes.byref(cmp), vol, tess) >= 0 and cmp.value == 0
    if not ok:
        print("HDF5 %s (%s) does not use the tessera connector (HDF5_VOL_CONNECTOR=%r, "
              "HDF5_PLUGIN_PATH=%r); HDF5 would silently write native files"
              % (h5py.version.hdf5_version, paths[0], os.environ.get("HDF5_VOL_CONNECTOR", ""),
                 os.environ.get("HDF5_PLUGIN_PATH", "")), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
