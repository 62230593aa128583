"""tessera inside whichever HDF5 h5py brings (docs/install.md).

scripts/test runs this file twice: with the source-built h5py (HDF5 1.14) and with the
stock h5py wheel, which bundles its own HDF5 2.x.  In both, the process must hold exactly
one libhdf5 (the plugin, the connector and libtessera_api.so link none: they bind to
h5py's), files must be tessera containers, and a plugin that cannot be loaded must be an
error the user sees — never HDF5's silent fallback to a native file.
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

import tessera
from tessera._runtime import loaded_hdf5_paths

from conftest import REPO_ROOT, native_env


@pytest.fixture(scope="module")
def build_dir(tessera_env) -> Path:
    return Path(tessera_env["plugin"]).parent.parent


def _maps_paths(substring: str) -> list[str]:
    out = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split(None, 5)
            if len(parts) == 6 and substring in os.path.basename(parts[5]) and parts[5].strip() not in out:
                out.append(parts[5].strip())
    return out


def test_one_libhdf5_and_tessera_containers(tessera_env, tmp_path):
    path = tmp_path / "one.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("g/d", data=np.arange(12, dtype="i4").reshape(3, 4), chunks=(2, 2))
        d[1, 1] = 99
        assert tessera.is_tessera(d)  # loads libtessera_api.so into this process
        assert list(f) == ["g"]      # H5Literate1: the compat library
    with h5py.File(path, "r") as f:
        expect = np.arange(12, dtype="i4").reshape(3, 4)
        expect[1, 1] = 99
        np.testing.assert_array_equal(f["g/d"][...], expect)
    assert path.is_dir() and (path / "tessera.container").is_file()
    hdf5 = loaded_hdf5_paths()
    assert len(hdf5) == 1, f"more than one libhdf5 in the process: {hdf5}"
    status = tessera.check()
    assert status.connector == "tessera"
    assert status.hdf5_path == hdf5[0]
    assert status.hdf5_version == h5py.version.hdf5_version
    # The connector that serves the files is this build's, loaded through its plugin.
    assert _maps_paths("libtessera_vol.so"), "the connector library is not mapped"
    assert _maps_paths("libtessera_api.so"), "libtessera_api.so is not mapped"


def test_wheel_or_source_build_is_what_h5py_says(tessera_env):
    """The stock wheel's h5py carries its HDF5 in h5py.libs; a source build uses the
    prefix's.  Either way the one libhdf5 loaded is h5py's own."""
    path = loaded_hdf5_paths()[0]
    wheel = os.path.isdir(os.path.join(os.path.dirname(h5py.__file__), os.pardir, "h5py.libs"))
    if wheel:
        assert "h5py.libs" in path and not h5py.version.hdf5_version.startswith("1.")
    else:
        assert "h5py.libs" not in path and h5py.version.hdf5_version.startswith("1.14.")


def _run(args, env, cwd):
    return subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def _bad_plugin_dir(tmp_path: Path) -> Path:
    bad = tmp_path / "badbuild" / "plugins"
    bad.mkdir(parents=True)
    (bad / "libtessera.so").write_bytes(b"this is not a shared library\n")
    return bad


CREATE = "import h5py; h5py.File('x.h5', 'w').close(); print('created')"


def test_unloadable_plugin_check_raises(tmp_path):
    """HDF5 alone falls back to native (the file is created); tessera.check() says why."""
    env = native_env()
    env["HDF5_VOL_CONNECTOR"] = "tessera"
    env["HDF5_PLUGIN_PATH"] = str(_bad_plugin_dir(tmp_path))
    r = _run([sys.executable, "-c", "import tessera; tessera.check()"], env, tmp_path)
    assert r.returncode != 0
    assert "does not use the tessera connector" in r.stderr, r.stderr
    assert "libtessera.so" in r.stderr, r.stderr


def test_missing_connector_library_is_reported_by_the_loader(tessera_env, tmp_path):
    env = native_env()
    env["HDF5_VOL_CONNECTOR"] = "tessera"
    env["HDF5_PLUGIN_PATH"] = tessera_env["HDF5_PLUGIN_PATH"]
    env["TESSERA_VOL_CORE"] = str(tmp_path / "nowhere" / "libtessera_vol.so")
    r = _run([sys.executable, "-c", "import tessera; tessera.check()"], env, tmp_path)
    assert r.returncode != 0
    assert "tessera: the VOL connector cannot be loaded" in r.stderr, r.stderr
    assert "does not use the tessera connector" in r.stderr, r.stderr


def test_launcher_refuses_unloadable_plugin(tmp_path):
    bad = _bad_plugin_dir(tmp_path)
    env = native_env()
    env["TESSERA_BUILD_DIR"] = str(bad.parent)
    r = _run([str(REPO_ROOT / "scripts" / "tessera-env"), "run", sys.executable, "-c", CREATE], env, tmp_path)
    assert r.returncode != 0
    assert "refusing to run" in r.stderr and "does not use the tessera connector" in r.stderr, r.stderr
    assert not (tmp_path / "x.h5").exists(), "the program ran and made a (native) file"


def test_python_m_tessera_run_refuses_unloadable_plugin(tmp_path):
    bad = _bad_plugin_dir(tmp_path)
    env = native_env()
    env.pop("HDF5_PLUGIN_PATH", None)
    env["TESSERA_BUILD_DIR"] = str(bad.parent)
    r = _run([sys.executable, "-m", "tessera", "run", sys.executable, "-c", CREATE], env, tmp_path)
    assert r.returncode == 1
    assert "cannot use tessera" in r.stderr and "does not use the tessera connector" in r.stderr, r.stderr
    assert not (tmp_path / "x.h5").exists()


def test_python_m_tessera_run_works(build_dir, tmp_path):
    env = native_env()
    env.pop("HDF5_PLUGIN_PATH", None)
    env["TESSERA_BUILD_DIR"] = str(build_dir)
    r = _run([sys.executable, "-m", "tessera", "run", sys.executable, "-c",
              CREATE + "; import h5py; f = h5py.File('x.h5', 'r'); print(sorted(f))"], env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "x.h5" / "tessera.container").is_file()


ENABLE = """
import os, tessera
s = tessera.enable()
import h5py
with h5py.File('e.h5', 'w') as f:
    f.create_group('g')
    f['g/d'] = [1, 2, 3]
    print(sorted(f), sorted(f['g']))   # H5Literate1: the compat library, loaded by enable()
print(s.connector, os.path.isdir('e.h5'))
"""


def test_enable_before_importing_h5py(build_dir, tmp_path):
    env = native_env()  # no connector, no compat preload: enable() must do all of it
    env.pop("HDF5_PLUGIN_PATH", None)
    env["TESSERA_BUILD_DIR"] = str(build_dir)
    r = _run([sys.executable, "-c", ENABLE], env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["['g'] ['d']", "tessera True"], r.stdout
    assert (tmp_path / "e.h5" / "tessera.container").is_file()


def test_enable_after_h5py_without_environment_raises(build_dir, tmp_path):
    env = native_env()
    env.pop("HDF5_PLUGIN_PATH", None)
    env["TESSERA_BUILD_DIR"] = str(build_dir)
    r = _run([sys.executable, "-c", "import h5py, tessera; tessera.enable()"], env, tmp_path)
    assert r.returncode != 0
    assert "before tessera.enable()" in r.stderr, r.stderr


def new_file(path, native: bool) -> h5py.File:
    """A new file made natively (the native connector chosen on the fapl, in this process)
    or through tessera (the environment's default connector)."""
    from conftest import HDF5

    if not native:
        return h5py.File(path, "w")
    lib = HDF5().lib
    lib.H5Pset_vol.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    cid = lib.H5VLget_connector_id_by_name(b"native")
    assert lib.H5Pset_vol(fapl.id, cid, None) >= 0
    lib.H5VLclose(cid)
    return h5py.File(h5py.h5f.create(str(path).encode(), h5py.h5f.ACC_TRUNC, fapl=fapl))


def test_direct_chunk_read_matches_native(tessera_env, tmp_path):
    """H5Dread_chunk through h5py: HDF5 2.x hands the connector a larger argument struct
    (with the caller's buffer size) than 1.14 (vol/base/h5_runtime.h NativeChunkRead2)."""
    import zlib

    from conftest import HDF5

    lib = HDF5().lib
    data = np.arange(64 * 64, dtype="<i4").reshape(64, 64)

    def chunks(native):
        with new_file(tmp_path / ("n.h5" if native else "t.h5"), native) as f:
            raw = f.create_dataset("raw", data=data, chunks=(16, 32))
            gz = f.create_dataset("gz", data=data, chunks=(16, 32), compression="gzip")
            out = []
            for off in ((0, 0), (16, 32), (48, 32)):
                m1, b1 = raw.id.read_direct_chunk(off)
                m2, b2 = gz.id.read_direct_chunk(off)
                out.append((m1, bytes(b1), m2, zlib.decompress(bytes(b2))))
            if hasattr(lib, "H5Dread_chunk2"):  # 2.x: a buffer too small is not written to
                read2 = lib.H5Dread_chunk2
                read2.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(ctypes.c_uint64),
                                  ctypes.POINTER(ctypes.c_uint32), ctypes.c_void_p,
                                  ctypes.POINTER(ctypes.c_size_t)]
                for room in (10, 16 * 32 * 4):
                    buf = ctypes.create_string_buffer(b"\xee" * room, room)
                    nalloc, mask = ctypes.c_size_t(room), ctypes.c_uint32(99)
                    offset = (ctypes.c_uint64 * 2)(16, 32)
                    rc = read2(raw.id.id, 0, offset, ctypes.byref(mask), buf, ctypes.byref(nalloc))
                    out.append((room, rc >= 0, nalloc.value, buf.raw[:16]))
        return out

    native, tess = chunks(True), chunks(False)
    assert native[1][1] == data[16:32, 32:64].tobytes()
    assert tess == native


def test_direct_chunk_write_matches_native(tessera_env, tmp_path):
    """H5Dwrite_chunk through h5py: HDF5 2.x's argument struct has a size_t size (1.14: a
    uint32_t), which moves the buffer pointer (vol/base/h5_runtime.h NativeChunkWrite2).  Read
    with 1.14's layout, the connector took the size for the buffer and crashed."""
    import zlib

    block = np.arange(16 * 32, dtype="<i4").reshape(16, 32)

    def written(native):
        with new_file(tmp_path / ("wn.h5" if native else "wt.h5"), native) as f:
            raw = f.create_dataset("raw", shape=(32, 64), dtype="<i4", chunks=(16, 32), fillvalue=-1)
            gz = f.create_dataset("gz", shape=(32, 64), dtype="<i4", chunks=(16, 32), compression="gzip")
            raw.id.write_direct_chunk((16, 32), (block * 3).tobytes())
            gz.id.write_direct_chunk((0, 32), zlib.compress(block.tobytes()), 0)
            return raw[()], gz[()], gz.id.read_direct_chunk((0, 32))[0]

    native, tess = written(True), written(False)
    assert (native[0][16:, 32:] == block * 3).all() and (native[0][:16] == -1).all()
    for a, b in zip(native, tess):
        np.testing.assert_array_equal(a, b)


def test_launcher_refuses_a_build_without_plugin(tmp_path):
    env = native_env()
    env["TESSERA_BUILD_DIR"] = str(tmp_path / "nobuild")
    r = _run([str(REPO_ROOT / "scripts" / "tessera-env"), "run", "touch", str(tmp_path / "ran")], env, tmp_path)
    assert r.returncode != 0 and "libtessera.so does not exist" in r.stderr, r.stderr
    assert not (tmp_path / "ran").exists()


def _dynamic_symbols(lib: str, which: str) -> set[str]:
    """Names of LIB's dynamic symbols, WHICH = "--defined-only" or "--undefined-only"
    (version suffixes such as @HDF5_1.14 dropped)."""
    out = subprocess.run(["nm", "-D", which, lib], check=True, capture_output=True, text=True).stdout
    return {line.split()[-1].split("@")[0] for line in out.splitlines() if line.split()}


def test_every_hdf5_symbol_tessera_links_is_in_this_libhdf5(build_dir):
    """The connector and libtessera_api.so bind their HDF5 symbols to the process's
    libhdf5 (RTLD_NOW at plugin load).  A function this HDF5 lacks (as HDF5 2.0's serial
    wheel lacks H5Pget_dxpl_mpio) would only show up as a plugin that does not load; this
    names it.  Functions that differ between versions are looked up at run time instead
    (vol/base/h5_runtime.h) and are not in these lists."""
    hdf5 = loaded_hdf5_paths()
    assert len(hdf5) == 1, hdf5
    defined = _dynamic_symbols(hdf5[0], "--defined-only")
    assert "H5Fopen" in defined, f"nm found no HDF5 symbols in {hdf5[0]}"
    for lib in (build_dir / "lib" / "libtessera_vol.so", build_dir / "lib" / "libtessera_api.so",
                build_dir / "compat" / "libtessera_compat.so"):
        needed = {s for s in _dynamic_symbols(str(lib), "--undefined-only") if s.startswith("H5")}
        missing = sorted(needed - defined)
        assert not missing, f"{lib.name} needs {missing}, which HDF5 {h5py.version.hdf5_version} ({hdf5[0]}) lacks"
