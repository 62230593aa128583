"""The tessera connector is loaded by HDF5 from the environment alone, and h5py uses it.

Run with HDF5_VOL_CONNECTOR=tessera and HDF5_PLUGIN_PATH=<build>/plugins in the
environment before Python starts (scripts/test does this).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import h5py
import pytest


def test_environment_selects_tessera(tessera_env):
    assert tessera_env["HDF5_VOL_CONNECTOR"].split(" ", 1)[0] == "tessera"
    assert Path(tessera_env["plugin"]).is_file()


def test_h5py_uses_the_shared_hdf5(hdf5):
    """Exactly one libhdf5 in the process, h5py's own: the one of a source build (under
    HDF5_PREFIX), or the HDF5 2.x a binary wheel bundles (h5py.libs) — the plugin binds to
    whichever it is and never loads a second one (docs/install.md)."""
    from tessera._runtime import loaded_hdf5_paths

    assert loaded_hdf5_paths() == [hdf5.path]
    if "h5py.libs" in hdf5.path:
        return  # the stock wheel: test_wheel_runtime.py covers it
    assert h5py.version.hdf5_version.startswith("1.14."), h5py.version.hdf5_version
    prefix = os.environ.get("HDF5_PREFIX")
    if prefix:
        assert os.path.realpath(hdf5.path).startswith(os.path.realpath(prefix) + os.sep), (
            f"h5py loaded {hdf5.path}, not the libhdf5 under HDF5_PREFIX={prefix}")


def test_default_connector_is_tessera(tessera_env, hdf5):
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    name = hdf5.connector_name(fapl.id)
    assert name == "tessera", (
        f"the default VOL connector is {name!r}: HDF5 did not load {tessera_env['plugin']} "
        "(it falls back to native silently)")


def test_cap_flags_query_works(tessera_env, hdf5):
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    flags = hdf5.cap_flags(fapl.id)
    assert isinstance(flags, int) and flags >= 0


def test_file_create_makes_a_tessera_container(tessera_env, tmp_path):
    path = tmp_path / "run.h5"
    with h5py.File(path, "w") as f:
        f.create_group("g")
    assert path.is_dir() and (path / "tessera.container").is_file(), \
        "h5py.File(..., 'w') must create a tessera container, not a native file"
    with h5py.File(path, "r") as f:
        assert "g" in f


def test_is_hdf5_plain_file_is_false(tessera_env, tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_text("not HDF5, not a tessera container\n")
    assert h5py.is_hdf5(str(plain)) is False  # H5Fis_accessible -> tessera answers false
    assert h5py.h5f.is_hdf5(str(plain).encode()) is False


def test_is_hdf5_tessera_container_is_true(tessera_env, tmp_path):
    container = tmp_path / "container.h5"
    h5py.File(container, "w").close()
    # h5py.is_hdf5() answers False for any directory before asking HDF5 (os.path.isfile),
    # so ask HDF5's H5Fis_accessible through h5py's low-level binding instead.
    assert h5py.is_hdf5(str(container)) is False
    assert h5py.h5f.is_hdf5(str(container).encode()) is True


def test_missing_file_in_mode_a_is_created(tessera_env, tmp_path):
    # h5py creates the file in mode 'a' only when the open fails with errno = 2.
    path = tmp_path / "new.h5"
    with h5py.File(path, "a") as f:
        f["x"] = 1
    assert (path / "tessera.container").is_file()


def _child_connector_name(conftest_path: Path, env: dict) -> str:
    proc = subprocess.run([sys.executable, str(conftest_path)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    lines = proc.stdout.strip().splitlines()
    assert lines, f"child printed nothing; stderr:\n{proc.stderr}"
    return lines[-1].strip()


def test_child_process_with_environment_uses_tessera(tessera_env, conftest_path):
    assert _child_connector_name(conftest_path, dict(os.environ)) == "tessera"


def test_child_process_without_connector_variable_uses_native(conftest_path):
    env = dict(os.environ)
    env.pop("HDF5_VOL_CONNECTOR", None)
    assert _child_connector_name(conftest_path, env) == "native"


def test_missing_plugin_falls_back_to_native_and_is_detected(conftest_path, tmp_path):
    """HDF5 1.14 silently falls back to native when the plugin is not found: the name
    check is what notices.  HDF5 2.x fails to initialise instead (tessera.check() and the
    launchers report both: test_wheel_runtime.py)."""
    env = dict(os.environ, HDF5_VOL_CONNECTOR="tessera", HDF5_PLUGIN_PATH=str(tmp_path))
    if h5py.version.hdf5_version.startswith("1."):
        assert _child_connector_name(conftest_path, env) == "native"
        return
    code = "import tessera._runtime as r; print(r.hdf5().H5VLis_connector_registered_by_name(b'tessera'))"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "0", (proc.stdout, proc.stderr)
    assert "unable to load VOL connector" in proc.stderr
