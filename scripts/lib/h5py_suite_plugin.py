"""pytest plugin for scripts/conformance --h5py (loaded with -p h5py_suite_plugin).

Appends one line per test phase to the file named by H5PY_SUITE_LOG as soon as the phase
ends, so that a test file whose process dies by a signal still reports every test that
ran before the crash.  The first line says which connector h5py really used: a file
created through h5py is a directory under tessera and a plain file under native HDF5
(if the plugin fails to load, HDF5 silently falls back to native).
"""
import os
import tempfile

_log = None


def _write(line):
    global _log
    if _log is None:
        _log = open(os.environ["H5PY_SUITE_LOG"], "a", buffering=1)
    _log.write(line + "\n")


def pytest_sessionstart(session):
    import h5py

    d = tempfile.mkdtemp(prefix="h5py-suite-probe-")
    path = os.path.join(d, "probe.h5")
    try:
        with h5py.File(path, "w"):
            pass
        _write("connector\t" + ("tessera" if os.path.isdir(path) else "native"))
    except Exception as e:  # reported, and every test then counts as not passed
        _write("connector\terror: " + str(e).replace("\n", " ")[:200])


def pytest_runtest_logreport(report):
    outcome = report.outcome
    if hasattr(report, "wasxfail"):
        outcome = "xfailed" if report.skipped else "xpassed"
    _write(f"{report.nodeid}\t{report.when}\t{outcome}")
