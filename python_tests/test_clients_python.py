"""Python HDF5 clients that are not h5py, on tessera, compared with native HDF5 (issue 42,
docs/clients.md): netCDF4-python (its wheel bundles netCDF-C 4.10 and HDF5 2.2),
PyTables (HDF5 1.14.6 in its wheel) and pandas' to_hdf/read_hdf (PyTables underneath).

Each scenario (client_scenarios.py) runs in a process of its own, natively and on
tessera, in the same test: the plugin must bind to each client's own libhdf5, what the
client wrote must be what native HDF5 gets (compared through h5py, in the same run), and
what the client reads back must equal what it reads from the native file.

Parts that fail today because a tessera container is a directory are marked
xfail(strict=True, raises=ContainerIsADirectory): only that failure, recognised by the
client's own message, counts as expected; any other failure fails the test, and a pass
fails it too (XPASS strict) — remove the mark then.  scripts/test runs this file in the
stock-wheel venv, where scripts/bootstrap installs the clients; elsewhere it is skipped.
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO_ROOT, native_env

HERE = Path(__file__).resolve().parent
SCENARIOS = HERE / "client_scenarios.py"
PROBE = REPO_ROOT / "python" / "tessera" / "_probe.py"
WHEEL_VENV_HINT = "installed in the stock-wheel venv by scripts/bootstrap (scripts/test's wheel stage runs this file)"


class ContainerIsADirectory(AssertionError):
    """The client failed the way issue 42 records: it expects a regular file at the path."""


# The message each client gives today when it meets a container directory.
NETCDF_UNKNOWN_FORMAT = "NetCDF: Unknown file format"        # NC_infermodel reads the path: EISDIR
PYTABLES_NOT_REGULAR = "is not a regular file"               # tables.utils.check_file_access

ISSUE42_NETCDF = ("issue 42: netCDF-C recognises HDF5 by the path's first bytes; a container directory "
                  "gives EISDIR, nc_open returns -51 'NetCDF: Unknown file format'")
ISSUE42_PYTABLES = ("issue 42: PyTables opens only regular files (check_file_access: "
                    "'is not a regular file'), also for pandas' read_hdf and to_hdf(mode='a')")


def _run(args, env, cwd, what):
    r = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    return r, f"{what} exit {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"


def scenario(client, action, path, tessera, cwd, out=None, expect_issue42=None):
    """Runs client_scenarios.py CLIENT ACTION PATH [OUT] natively or on tessera; returns the
    unpickled result of a read.  A failure whose output holds `expect_issue42` raises
    ContainerIsADirectory; any other failure fails the test."""
    env = dict(os.environ) if tessera else native_env()
    args = [sys.executable, str(SCENARIOS), client, action, str(path)] + ([str(out)] if out else [])
    r, msg = _run(args, env, cwd, f"{'tessera' if tessera else 'native'} {client} {action}")
    if r.returncode != 0:
        if expect_issue42 and expect_issue42 in r.stderr:
            raise ContainerIsADirectory(msg)
        pytest.fail(msg)
    if out:
        with open(out, "rb") as fh:
            return pickle.load(fh)
    return None


def assert_same(a, b, where="out"):
    """Exact equality of nested results; arrays by dtype, shape and bytes, data frames with
    pandas' own exact comparison."""
    import pandas as pd

    if isinstance(a, dict):
        assert a.keys() == b.keys(), f"{where}: keys {sorted(a)} vs {sorted(b)}"
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert type(a) == type(b) and len(a) == len(b), f"{where}: {a!r} vs {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b, check_exact=True, obj=where)
    elif isinstance(a, pd.Series):
        pd.testing.assert_series_equal(a, b, check_exact=True, obj=where)
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), f"{where}: {type(b)}"
        assert a.dtype == b.dtype and a.shape == b.shape, f"{where}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        if a.dtype.names:
            for n in a.dtype.names:
                assert_same(a[n], b[n], f"{where}.{n}")
        elif a.dtype == object:
            assert_same(list(a.ravel()), list(b.ravel()), where)
        else:
            assert a.tobytes() == b.tobytes(), f"{where}: values differ"
    else:
        assert type(a) == type(b) and a == b, f"{where}: {a!r} vs {b!r}"


def written(client, tmp_path, append=False):
    """Writes with CLIENT natively and on tessera; returns (native path, tessera path).
    Both writes must succeed and h5py must find the same content in both files (h5py
    natively on the native file, on tessera on the container); native HDF5 must not find
    that content at the tessera path (proof that the tessera run made a container)."""
    paths = {}
    for tessera in (False, True):
        tag = "tessera" if tessera else "native"
        p = tmp_path / f"{tag}.h5"
        scenario(client, "write", p, tessera, tmp_path)
        if append:
            scenario(f"{client}-append", "write", p, tessera, tmp_path,
                     expect_issue42=PYTABLES_NOT_REGULAR if tessera else None)
        paths[tag] = p
    dumps = {tag: scenario("h5py", "read", p, tag == "tessera", tmp_path, tmp_path / f"{tag}.dump")
             for tag, p in paths.items()}
    assert_same(dumps["native"], dumps["tessera"], f"h5py's view of the {client} file")
    r, _ = _run([sys.executable, str(SCENARIOS), "h5py", "read", str(paths["tessera"]),
                 str(tmp_path / "cross.dump")], native_env(), tmp_path, "native h5py on the container")
    if r.returncode == 0:
        with open(tmp_path / "cross.dump", "rb") as fh:
            assert pickle.load(fh) != dumps["native"], "native HDF5 reads the tessera run's data: no container"
    return paths["native"], paths["tessera"]


@pytest.fixture(scope="module")
def files(tmp_path_factory, tessera_env):
    """written(client) once per module: the write test and the read test share the files."""
    made = {}

    def get(client):
        if client not in made:
            pytest.importorskip("netCDF4" if client == "netCDF4" else "tables",
                                reason=f"the {client} client is {WHEEL_VENV_HINT}")
            d = tmp_path_factory.mktemp(client)
            made[client] = (d, written(client, d))
        return made[client]
    return get


def read_back(client, tmp_path, paths, expect):
    native = scenario(client, "read", paths[0], False, tmp_path, tmp_path / "native.pkl")
    tess = scenario(client, "read", paths[1], True, tmp_path, tmp_path / "tessera.pkl", expect_issue42=expect)
    assert_same(native, tess, f"{client} read")


# --------------------------------------------------------------------------- binding
@pytest.mark.parametrize("client", ["h5py", "netCDF4", "tables"])
def test_plugin_binds_to_the_clients_own_hdf5(tessera_env, tmp_path, client):
    """HDF5_VOL_CONNECTOR=tessera in the client's own libhdf5 (h5py's 2.0, netCDF4's 2.2,
    PyTables' 1.14.6): the plugin is registered and a new file-access list selects it."""
    pytest.importorskip(client, reason=f"{client} is {WHEEL_VENV_HINT}")
    r, msg = _run([sys.executable, str(PROBE), "--one", client], dict(os.environ), tmp_path, f"probe {client}")
    assert r.returncode == 0, msg


# --------------------------------------------------------------------------- netCDF4-python
def test_netcdf4_writes_what_native_writes(files):
    files("netCDF4")


@pytest.mark.xfail(strict=True, raises=ContainerIsADirectory, reason=ISSUE42_NETCDF)
def test_netcdf4_reads_back_what_native_reads(files):
    d, paths = files("netCDF4")
    read_back("netCDF4", d, paths, NETCDF_UNKNOWN_FORMAT)


# --------------------------------------------------------------------------- PyTables
def test_pytables_writes_what_native_writes(files):
    files("tables")


@pytest.mark.xfail(strict=True, raises=ContainerIsADirectory, reason=ISSUE42_PYTABLES)
def test_pytables_reads_back_what_native_reads(files):
    """Table rows, read_where (in-kernel query) and an indexed where, a zlib CArray
    (whole and strided), an EArray grown twice, a VLArray, attributes."""
    d, paths = files("tables")
    read_back("tables", d, paths, PYTABLES_NOT_REGULAR)


# --------------------------------------------------------------------------- pandas
def test_pandas_to_hdf_writes_what_native_writes(files):
    """to_hdf(format='table', data_columns, zlib) into a new file."""
    files("pandas")


@pytest.mark.xfail(strict=True, raises=ContainerIsADirectory, reason=ISSUE42_PYTABLES)
def test_pandas_read_hdf_reads_back_what_native_reads(files):
    """read_hdf of the whole table, a `where` query on data columns, a column subset."""
    d, paths = files("pandas")
    read_back("pandas", d, paths, PYTABLES_NOT_REGULAR)


@pytest.mark.xfail(strict=True, raises=ContainerIsADirectory, reason=ISSUE42_PYTABLES)
def test_pandas_to_hdf_appends_to_an_existing_file(tessera_env, tmp_path):
    """to_hdf(mode='a') of a compressed fixed frame and a Series into the same file, then
    read_hdf of all three keys."""
    pytest.importorskip("tables", reason=f"tables is {WHEEL_VENV_HINT}")
    read_back("pandas", tmp_path, written("pandas", tmp_path, append=True), PYTABLES_NOT_REGULAR)


# --------------------------------------------------------------------------- python -m tessera run
NC_PROGRAM = """
import sys
import netCDF4
with netCDF4.Dataset("run.nc", "w") as ds:
    ds.createDimension("x", 3)
    ds.createVariable("v", "i4", ("x",))[:] = [1, 2, 3]
print("written; h5py imported:", "h5py" in sys.modules)
"""


def _launcher_env(tmp_path, build):
    """Native environment plus TESSERA_BUILD_DIR, and an h5py that cannot be imported first
    on the path: neither the launcher nor its check may need h5py."""
    fake = tmp_path / "no_h5py" / "h5py"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('this program must run without h5py')\n")
    env = native_env()
    env.pop("HDF5_PLUGIN_PATH", None)
    env["TESSERA_BUILD_DIR"] = str(build)
    env["PYTHONPATH"] = f"{tmp_path / 'no_h5py'}:{REPO_ROOT / 'python'}"
    (tmp_path / "prog.py").write_text(NC_PROGRAM)
    return env


def test_python_m_tessera_run_starts_a_netcdf4_program_without_h5py(tessera_env, tmp_path):
    pytest.importorskip("netCDF4", reason=f"netCDF4 is {WHEEL_VENV_HINT}")
    build = Path(tessera_env["plugin"]).parent.parent
    env = _launcher_env(tmp_path, build)
    r, msg = _run([sys.executable, "-m", "tessera", "run", "--client", "netCDF4", sys.executable, "prog.py"],
                  env, tmp_path, "python -m tessera run --client netCDF4")
    assert r.returncode == 0, msg
    assert "written; h5py imported: False" in r.stdout, msg
    # A tessera container: the tessera tool reads it and finds the variable.
    info = subprocess.run([str(build / "tools" / "tessera"), "info", "run.nc"], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert info.returncode == 0 and "/v" in info.stdout, info.stdout + info.stderr


def test_python_m_tessera_run_refuses_when_netcdf4s_hdf5_cannot_load_the_plugin(tmp_path):
    pytest.importorskip("netCDF4", reason=f"netCDF4 is {WHEEL_VENV_HINT}")
    bad = tmp_path / "badbuild" / "plugins"
    bad.mkdir(parents=True)
    (bad / "libtessera.so").write_bytes(b"this is not a shared library\n")
    env = _launcher_env(tmp_path, bad.parent)
    r, msg = _run([sys.executable, "-m", "tessera", "run", "--client", "netCDF4", sys.executable, "prog.py"],
                  env, tmp_path, "python -m tessera run with a broken plugin")
    assert r.returncode == 1, msg
    assert "netCDF4's HDF5" in r.stderr and "does not use the tessera connector" in r.stderr, msg
    assert not (tmp_path / "run.nc").exists(), "the program ran"
