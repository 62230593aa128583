"""Smoke runs of the tessera-vs-native HDF5 benchmarks (scripts/bench/bench_h5_*.cc).

Each benchmark runs at a tiny scale; the test checks only that every workload ran on both
sides and that both sides read back identical data (the benchmarks hash what they read and
print CHECK lines). Timings are printed by the benchmarks but never asserted: they say
nothing at this size and depend on the machine.

The benchmark programs pick the connector per file with a file-access plist, so the child
gets HDF5_PLUGIN_PATH (from the test environment) but not HDF5_VOL_CONNECTOR.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

BENCHMARKS = {
    # name: arguments for a run of a few seconds. --cache-drop fadvise: the cold-cache
    # runs evict only the benchmark's own files, not the whole machine's page cache.
    "bench_h5_dense": ["--scale", "1/64", "--cache-drop", "fadvise", "--writes", "200"],
    "bench_h5_metadata": ["--groups", "4", "--per-group", "8"],
}


def _build_dir(tessera_env) -> Path:
    """The build the plugin comes from: <build>/plugins/libtessera.so."""
    return Path(tessera_env["plugin"]).resolve().parent.parent


def _parse(stdout: str):
    results, checks = [], []
    for line in stdout.splitlines():
        fields = line.split("\t")
        if fields[0] == "RESULT":
            results.append(fields[1:])
        elif fields[0] == "CHECK":
            checks.append(fields[1:])
    return results, checks


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_benchmark_both_sides_read_identical_data(name, tessera_env, tmp_path):
    exe = _build_dir(tessera_env) / "scripts" / "bench" / name
    assert exe.is_file(), f"{exe} was not built (configure with -DTESSERA_BUILD_BENCH=ON, the default)"
    env = {k: v for k, v in os.environ.items() if k != "HDF5_VOL_CONNECTOR"}
    proc = subprocess.run([str(exe), *BENCHMARKS[name], "--dir", str(tmp_path / "data")], env=env,
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    results, checks = _parse(proc.stdout)
    assert proc.returncode == 0, f"{name} exited {proc.returncode}:\n{out}"
    assert results and checks, f"{name} printed no RESULT/CHECK lines:\n{out}"
    for workload, native, tessera, *_ in results:
        assert native not in ("FAILED", "-") and tessera not in ("FAILED", "-"), (
            f"{workload}: native={native} tessera={tessera}\n{out}")
    for check, native_hash, tessera_hash, verdict in checks:
        assert verdict == "ok" and native_hash == tessera_hash, f"{check}: {native_hash} vs {tessera_hash}\n{out}"
    # The data directory is removed by the benchmark itself (no --keep).
    assert not any((tmp_path / "data").glob("*")), "the benchmark left files behind"
