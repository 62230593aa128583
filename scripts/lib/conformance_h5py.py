"""h5py's own test suite as a client conformance suite (scripts/conformance --h5py).

h5py ships its tests inside the package (h5py/tests).  Each test file runs in its own
pytest process (a crash costs that file only), once with native HDF5 and once with
HDF5_VOL_CONNECTOR=tessera, in a scratch directory per side.  The pytest plugin
h5py_suite_plugin.py logs every test phase as it ends, so a file that dies by a signal
still reports the tests before the crash, and probes which connector h5py really used.

A test "passes" when none of its phases failed and its call phase passed.  What counts
is a test that passes natively but not on tessera; tests that fail or skip natively say
nothing about tessera.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent


def tests_dir(python: str) -> Path:
    out = subprocess.run([python, "-c", "import h5py.tests, os; print(os.path.dirname(h5py.tests.__file__))"],
                         capture_output=True, text=True, check=True).stdout.strip()
    return Path(out)


def test_files(root: Path):
    """Test files relative to h5py/tests, sorted (subpackages such as test_vds included)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("test_*.py"))


def _outcomes(log: Path):
    """(connector, {nodeid: passed|failed|skipped|xfailed}) from the plugin's log."""
    connector, phases = None, {}
    if not log.exists():
        return connector, {}
    for line in log.read_text(errors="replace").splitlines():
        parts = line.split("\t")
        if parts[0] == "connector" and len(parts) == 2:
            connector = parts[1]
        elif len(parts) == 3:
            # Node ids relative to h5py/tests (the rootdir we pass; without it pytest could
            # take test_vds/ as the rootdir when no ini file is found above the scratch dir).
            nodeid = parts[0].split("h5py/tests/", 1)[-1]
            phases.setdefault(nodeid, {})[parts[1]] = parts[2]
    out = {}
    for nodeid, ph in phases.items():
        if "failed" in ph.values():
            out[nodeid] = "failed"
        elif ph.get("call") in ("passed", "xpassed"):
            out[nodeid] = "passed"
        elif "xfailed" in ph.values():
            out[nodeid] = "xfailed"
        elif "skipped" in ph.values():
            out[nodeid] = "skipped"
        else:  # setup passed, the process died during the call
            out[nodeid] = "failed"
    return connector, out


def _run_file(python, root, rel, side_dir: Path, env, timeout):
    name = rel.replace("/", "__").removesuffix(".py")
    log = side_dir / f"{name}.log"
    log.unlink(missing_ok=True)
    # A fresh working and temporary directory per run: files an earlier run left behind
    # (h5py's tests create some in the working directory) must not decide a result.
    tmp, cwd = side_dir / "tmp" / name, side_dir / "cwd" / name
    for d in (tmp, cwd):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    run_env = dict(env)
    run_env.update(H5PY_SUITE_LOG=str(log), TMPDIR=str(tmp),
                   PYTHONPATH=":".join(x for x in (str(HERE), env.get("PYTHONPATH", "")) if x))
    cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "h5py_suite_plugin",
           "-o", "addopts=", "--rootdir", str(root), str(root / rel)]
    try:
        r = subprocess.run(cmd, cwd=cwd, env=run_env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=timeout)
        rc, tail = r.returncode, r.stdout.decode(errors="replace").strip().splitlines()[-3:]
    except subprocess.TimeoutExpired:
        rc, tail = "timeout", []
    connector, outcomes = _outcomes(log)
    return {"rc": rc, "connector": connector, "outcomes": outcomes, "tail": tail}


def run_h5py_suite(python, work: Path, native_env, tessera_env, timeout=900, only=None):
    """Runs every test file on both connectors; returns a list of per-file dicts
    {file, native: {...}, tessera: {...}, lost: [nodeids passing natively only]}."""
    root = tests_dir(python)
    results = []
    for rel in test_files(root):
        if only and not any(o in rel for o in only):
            continue
        res = {"file": rel}
        for side, env in (("native", native_env), ("tessera", tessera_env)):
            d = work / side
            d.mkdir(parents=True, exist_ok=True)
            res[side] = _run_file(python, root, rel, d, env, timeout)
        nat, tes = res["native"]["outcomes"], res["tessera"]["outcomes"]
        res["lost"] = sorted(t for t, o in nat.items() if o == "passed" and tes.get(t) != "passed")
        results.append(res)
        n_pass = sum(o == "passed" for o in nat.values())
        t_pass = sum(o == "passed" for o in tes.values())
        print(f"  h5py {rel}: native {n_pass} passed, tessera {t_pass} passed"
              f"{', ' + ending(res['tessera']) if ending(res['tessera']) else ''}", flush=True)
    return results


def ending(side):
    """'' for a normal end (pytest exit 0 or 1), else how the process ended."""
    rc = side["rc"]
    if rc == "timeout":
        return "timed out"
    if isinstance(rc, int) and rc < 0:
        return f"killed by signal {-rc}"
    if rc not in (0, 1, 5):
        return f"pytest exit {rc}"
    return ""


def passing(results, side="tessera"):
    return sorted(t for r in results for t, o in r[side]["outcomes"].items() if o == "passed")


def problems(results):
    """Runs that cannot be trusted: the wrong connector on either side."""
    out = []
    for r in results:
        for side, want in (("native", "native"), ("tessera", "tessera")):
            got = r[side]["connector"]
            if got is not None and got != want:
                out.append(f"h5py {r['file']}: the {side} run used connector '{got}'")
    return out


# Tests that need HDF5's native file format itself — the bytes of a file, a Python
# file-like object holding them, byte offsets inside them — which a tessera container (a
# directory) does not have by design (issue 12).  Keys are test ids or prefixes of them.
NATIVE_FORMAT = {
    **{f"test_file2.py::TestFileObj::{t}": "a Python file object's errors surface when tessera writes the "
       "file back through h5py's file-object driver (create, flush, close), not at the read or write that "
       "natively meets them (docs/vol-files.md)"
       for t in ("test_exception_read", "test_exception_write", "test_exception_writeonly", "test_method_vanish")},
    "test_file_alignment.py::": "checks the byte offsets of datasets in the file (H5Dget_offset)",
    "test_file2.py::TestFileMetaBlockSize::": "checks a dataset's byte offset in the file (H5Dget_offset) "
                                              "against the metadata block size",
    "test_file.py::TestUserblock::test_write_block": "writes the userblock with open() on the file's path",
    "test_file.py::TestFileOpen::test_default": "overwrites the file's path with open(path, 'wb')",
    "test_file.py::test_reproducible_file": "compares the bytes of two files",
    "test_base.py::test_is_hdf5": "h5py.is_hdf5 answers False for anything that is not a regular file "
                                  "(os.path.isfile) before asking HDF5",
    "test_vds/test_highlevel_vds.py::VDSUnlimitedTestCase::test_unlimited_axis":
        "copies the file with shutil.copyfile",
    "test_group.py::TestCopy::test_copy_external_links": (
        "removes the linked file with os.unlink, and a container is a directory (the copy itself matches "
        "native: python_tests/test_h5py_groups.py::test_copy_expand_external_as_native, "
        "h5tests/vol/test_copy_elinks.c)"),
}


def native_format_reason(test: str) -> str:
    for k, why in NATIVE_FORMAT.items():
        if test == k or (k.endswith("::") and test.startswith(k)):
            return why
    return ""


def ratchet_problems(results, ratchet, key="h5py"):
    """What the ratchet (tests `{key}_tests`, files `{key}_clean_files`) finds lost."""
    out = []
    passed = set(passing(results))
    clean = {r["file"] for r in results if not ending(r["tessera"])}
    ran = {r["file"] for r in results}
    ran_tests = {t for r in results for t in r["tessera"]["outcomes"]}
    for t in sorted(set(ratchet.get(f"{key}_tests", [])) & ran_tests - passed):
        out.append(f"{key} test {t} passed on tessera before and does not now")
    for f in sorted(set(ratchet.get(f"{key}_clean_files", [])) & ran - clean):
        out.append(f"{key} test file {f} ended normally before and does not now")
    # A test that vanished from a file that ran (renamed, or its file crashed earlier).
    for f in sorted(ran):
        gone = [t for t in ratchet.get(f"{key}_tests", []) if t.split("::")[0].endswith(f) and t not in ran_tests]
        if gone and f in clean:
            out.append(f"{key} {f}: {len(gone)} ratcheted tests did not run (first: {gone[0]})")
    return out


def raise_ratchet(results, ratchet, key="h5py"):
    clean = [r["file"] for r in results if not ending(r["tessera"])]
    ratchet[f"{key}_tests"] = sorted(set(ratchet.get(f"{key}_tests", [])) | set(passing(results)))
    ratchet[f"{key}_clean_files"] = sorted(set(ratchet.get(f"{key}_clean_files", [])) | set(clean))


def markdown(results, reasons=None, wheel=False):
    reasons = reasons or {}
    title = ("### h5py's own test suite with the stock h5py wheel (HDF5 2.x)" if wheel
             else "### h5py's own test suite")
    how = ("the stock PyPI h5py wheel's Python and test package (its bundled HDF5 2.x; "
           "`scripts/conformance --h5py-wheel PYTHON`, run by scripts/test's wheel stage)" if wheel
           else "`scripts/conformance --h5py`")
    lines = [title, "",
             "`python -m pytest` on every test file of h5py's installed test package, one process",
             f"per file, natively and with `HDF5_VOL_CONNECTOR=tessera` ({how}).",
             "\"lost\" counts tests that pass natively and do not pass on tessera.", "",
             "| test file | native passed | tessera passed | lost | tessera run ended |",
             "| --- | --- | --- | --- | --- |"]
    tn = tt = tl = 0
    for r in results:
        n = sum(o == "passed" for o in r["native"]["outcomes"].values())
        t = sum(o == "passed" for o in r["tessera"]["outcomes"].values())
        tn, tt, tl = tn + n, tt + t, tl + len(r["lost"])
        lines.append(f"| {r['file']} | {n} | {t} | {len(r['lost'])} | {ending(r['tessera']) or 'normally'} |")
    lines += [f"| **all** | **{tn}** | **{tt}** | **{tl}** | |", ""]
    lost = [t for r in results for t in r["lost"]]
    by_design = [t for t in lost if native_format_reason(t)]
    other = [t for t in lost if not native_format_reason(t)]
    if by_design:
        lines += [f"Tests that need HDF5's native file format itself ({len(by_design)}, by design: a "
                  "container is a directory, not the bytes of an HDF5 file):", ""]
        lines += [f"- `{t}` — {native_format_reason(t)}" for t in by_design]
        lines.append("")
    if other:
        lines += [f"Other tests that pass natively but not on tessera ({len(other)}):", ""]
        lines += [f"- `{t}`" + (f" — {reasons[t]}" if reasons.get(t) else "") for t in other]
        lines.append("")
    return "\n".join(lines)
