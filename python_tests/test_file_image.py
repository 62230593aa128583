"""File images on tessera (vol/model/file_image.h): a file image is the bytes of a native HDF5
file, both ways.

Every check compares with native HDF5 in a child process (native_env): images native
HDF5 made open under tessera with the values native wrote, and images tessera makes are
opened by native HDF5, which must read the values the test wrote (a numpy model).
"""
from __future__ import annotations

import glob
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import h5py
import numpy as np
import pytest

from conftest import native_env

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"

# The model: what every file in these tests holds.
MODEL = {
    "ints": np.arange(60, dtype="<i4").reshape(6, 10),
    "grp/floats": np.linspace(0, 1, 17, dtype="<f8"),
    "grp/chunked": np.arange(1000, dtype="<i2").reshape(10, 100),
    "strings": np.array([b"alpha", b"beta", b"gamma"], dtype="S5"),
}
ATTRS = {"ints": {"units": "m", "scale": 2.5}}


def write_model(f: h5py.File) -> None:
    for name, arr in MODEL.items():
        kw = {"chunks": (5, 50), "compression": "gzip"} if name == "grp/chunked" else {}
        f.create_dataset(name, data=arr, **kw)
    for name, attrs in ATTRS.items():
        for k, v in attrs.items():
            f[name].attrs[k] = v
    f["link"] = h5py.SoftLink("/grp/floats")


def check_model(f: h5py.File, changed: dict | None = None) -> None:
    expect = dict(MODEL, **(changed or {}))
    for name, arr in expect.items():
        np.testing.assert_array_equal(f[name][()], arr, err_msg=name)
        assert f[name].dtype == arr.dtype, name
    assert f["grp/chunked"].compression == "gzip"
    assert f["grp/chunked"].chunks == (5, 50)
    assert f["ints"].attrs["units"] == "m" and f["ints"].attrs["scale"] == 2.5
    np.testing.assert_array_equal(f["link"][()], expect["grp/floats"])


# A native child: MODE "make" writes the model into an in-memory file and saves its image;
# "check" opens an image and checks it holds the model with ints[0, :] = -1 (as the test
# changed it) and writes ints[1, :] = -2 into it, saving the new image; "disk" opens the
# image file as an ordinary HDF5 file on disk ("disk2": with ints[1, :] = -2 too).
CHILD = r"""
import sys, numpy as np, h5py
sys.path.insert(0, sys.argv[3])
import test_file_image as t
mode, path = sys.argv[1], sys.argv[2]
if mode == "make":
    with h5py.File.in_memory() as f:
        t.write_model(f)
        f.flush()
        open(path, "wb").write(f.id.get_file_image())
elif mode == "check":
    img = open(path, "rb").read()
    with h5py.File.in_memory(img) as f:
        ints = t.MODEL["ints"].copy(); ints[0, :] = -1
        t.check_model(f, {"ints": ints})
        f["ints"][1, :] = -2
        f.flush()
        open(path, "wb").write(f.id.get_file_image())
elif mode in ("disk", "disk2"):
    with h5py.File(path, "r") as f:
        ints = t.MODEL["ints"].copy(); ints[0, :] = -1
        if mode == "disk2":
            ints[1, :] = -2
        t.check_model(f, {"ints": ints})
print("ok")
"""


def native(tmp_path: Path, mode: str, path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    r = subprocess.run([sys.executable, str(script), mode, str(path), str(Path(__file__).parent)],
                       env=native_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


def temporary_containers() -> set:
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "tessera-core-*")))


def test_a_native_image_opens_and_tessera_images_open_natively(tessera_env, tmp_path):
    before = temporary_containers()
    img_path = tmp_path / "image.bin"
    native(tmp_path, "make", img_path)
    img = img_path.read_bytes()
    assert img.startswith(HDF5_SIGNATURE)
    # tessera opens native's image, changes it, and hands back an image native reads.
    with h5py.File.in_memory(img) as f:
        check_model(f)
        f["ints"][0, :] = -1
        f.flush()
        out = f.id.get_file_image()
        # Taken twice, the image is the same (HDF5 programs ask for the size first).
        assert f.id.get_file_image() == out
    assert out.startswith(HDF5_SIGNATURE)
    img_path.write_bytes(out)
    native(tmp_path, "disk", img_path)   # an image written to disk is a native HDF5 file
    native(tmp_path, "check", img_path)  # native changes it and sends it back (daisy chain)
    ints = MODEL["ints"].copy()
    ints[0, :], ints[1, :] = -1, -2
    with h5py.File.in_memory(img_path.read_bytes()) as f:
        check_model(f, {"ints": ints})
    assert temporary_containers() == before  # nothing left behind


def test_images_of_files_tessera_created(tessera_env, tmp_path):
    # A container on disk and an in-memory file: both give the image of their contents.
    with h5py.File(tmp_path / "c.h5", "w") as f:
        write_model(f)
        f["ints"][0, :] = -1
        disk_image = f.id.get_file_image()
    assert (tmp_path / "c.h5").is_dir()  # the file itself stays a container
    p = tmp_path / "from_disk.h5"
    p.write_bytes(disk_image)
    native(tmp_path, "disk", p)
    with h5py.File.in_memory(track_order=True) as f:
        write_model(f)
        f["ints"][0, :] = -1
        f.flush()
        mem_image = f.id.get_file_image()
        # Open a second file from the image while the first is still open.
        with h5py.File.in_memory(mem_image) as g:
            g["ints"][2, :] = 7  # a copy: the first file does not change
        assert (f["ints"][2, :] == MODEL["ints"][2, :]).all()
    p.write_bytes(mem_image)
    native(tmp_path, "disk", p)


def test_low_level_image_opens(tessera_env, tmp_path):
    img_path = tmp_path / "image.bin"
    native(tmp_path, "make", img_path)
    img = img_path.read_bytes()
    # H5LTopen_file_image (the image callbacks) and a core fapl with a backing store,
    # read-only (h5py's own tests).
    with h5py.File(h5py.h5f.open_file_image(img)) as f:
        check_model(f)
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_fapl_core()  # backing store on: read-only uses the image, writes no data
    fapl.set_file_image(img)
    name = str(tmp_path / "never-written.h5")
    with h5py.File(h5py.h5f.open(name.encode(), h5py.h5f.ACC_RDONLY, fapl=fapl)) as f:
        check_model(f)
    # Native's core driver leaves an empty backing file (it opens it); no container is made.
    assert not os.path.isdir(name) and (not os.path.exists(name) or os.path.getsize(name) == 0)


def test_bad_images_fail_clearly(tessera_env, tmp_path):
    before = temporary_containers()
    with pytest.raises(OSError, match="native HDF5 file"):
        h5py.File.in_memory(b"this is not an HDF5 file" * 100)
    img_path = tmp_path / "image.bin"
    native(tmp_path, "make", img_path)
    img = img_path.read_bytes()
    with pytest.raises(OSError, match="truncated|native HDF5 file"):
        h5py.File.in_memory(img[: len(img) // 2])
    # Read-write with a backing store would write a native file at close: refused.
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_fapl_core(backing_store=True)
    fapl.set_file_image(img)
    name = str(tmp_path / "backed.h5")
    with pytest.raises(OSError, match="backing store"):
        h5py.h5f.open(name.encode(), h5py.h5f.ACC_RDWR, fapl=fapl)
    assert not os.path.exists(name)
    assert temporary_containers() == before


# --------------------------------------------------------------------------- file objects
# h5py's file-object driver keeps a file's bytes in a Python file-like object: tessera
# imports them at open and writes the whole file back through the driver, as a native
# HDF5 file, at create, flush and close (vol/model/file_image.h).

def test_a_file_object_holds_a_native_file(tessera_env, tmp_path):
    import io
    before = temporary_containers()
    bio = io.BytesIO()
    with h5py.File(bio, "w") as f:
        assert f.driver == "fileobj"
        write_model(f)
        f["ints"][0, :] = -1
    assert bio.getvalue().startswith(HDF5_SIGNATURE)
    p = tmp_path / "from_bytesio.h5"
    p.write_bytes(bio.getvalue())
    native(tmp_path, "disk", p)  # native reads what tessera wrote into the object
    with h5py.File(bio, "r") as f:
        ints = MODEL["ints"].copy()
        ints[0, :] = -1
        check_model(f, {"ints": ints})
        with pytest.raises(Exception):
            f.create_dataset("more", data=[1])  # read-only, as natively
    # r+: a flush writes the change back before the close.
    with h5py.File(bio, "r+") as f:
        f["ints"][1, :] = -2
        f.flush()
        flushed = bio.getvalue()
    p.write_bytes(flushed)
    native(tmp_path, "disk2", p)  # native sees the flushed change
    assert temporary_containers() == before


def test_a_native_file_object_opens(tessera_env, tmp_path):
    import io
    img_path = tmp_path / "image.bin"
    native(tmp_path, "make", img_path)
    # A real file object holding native bytes, read and changed through tessera.
    with open(img_path, "r+b") as fo:
        with h5py.File(fo, "r+") as f:
            check_model(f)
            f["ints"][0, :] = -1
    native(tmp_path, "disk", img_path)
    # A file object that cannot hold a file fails at create, with the object's error.
    with pytest.raises(Exception):
        h5py.File(io.StringIO(), "w")
