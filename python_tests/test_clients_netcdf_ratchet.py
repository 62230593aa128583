"""The ratchet rules of scripts/clients/netcdf (docs/clients.md), on made-up results: a
test that passed on tessera must keep passing, the `fail` list can only shrink (a listed
test that passes fails the check until it is recorded), every test must be filed, and
`apart` tests are not judged.  The netCDF-C run itself is scripts/test's stage."""
from __future__ import annotations

import importlib.machinery
import importlib.util

from conftest import REPO_ROOT


def _harness():
    path = REPO_ROOT / "scripts" / "clients" / "netcdf"
    loader = importlib.machinery.SourceFileLoader("clients_netcdf", str(path))
    spec = importlib.util.spec_from_loader("clients_netcdf", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


RATCHET = {"pass": {"a": ""}, "fail": {"b": "issue 42: EISDIR"}, "apart": {"c": "classic formats only"},
           "native": {"d": "fails natively"}}


def result(ok, native_ok=True, made=True):
    return {"ok": ok, "native_ok": native_ok, "reason": "" if ok else "why", "native_reason": "nat",
            "made_container": made}


def test_the_recorded_state_passes():
    problems, new = _harness().judge({"a": result(True), "b": result(False), "c": result(True, made=False),
                                      "d": result(False, native_ok=False)}, RATCHET)
    assert problems == []
    assert new["pass"] == {"a": ""} and new["fail"] == {"b": "issue 42: EISDIR"} and "c" in new["apart"]


def test_a_regression_fails():
    problems, _ = _harness().judge({"a": result(False), "b": result(False)}, RATCHET)
    assert any(p.startswith("a: passed on tessera before, fails now") for p in problems), problems


def test_a_listed_failure_that_passes_must_be_recorded():
    problems, new = _harness().judge({"a": result(True), "b": result(True)}, RATCHET)
    assert any(p.startswith("b: passes on tessera now") for p in problems), problems
    assert "b" in new["pass"] and "b" not in new["fail"]


def test_unfiled_tests_fail_and_are_filed_by_an_update():
    problems, new = _harness().judge({"a": result(True), "x": result(False), "y": result(True),
                                      "z": result(True, made=False)}, RATCHET)
    assert {p.split(":")[0] for p in problems if "not in the ratchet" in p} == {"x", "y", "z"}, problems
    assert new["fail"]["x"] == "why" and "y" in new["pass"] and "z" in new["apart"]


def test_a_required_test_that_fails_natively_fails():
    problems, _ = _harness().judge({"a": result(False, native_ok=False)}, RATCHET)
    assert any(p.startswith("a: fails natively now") for p in problems), problems
