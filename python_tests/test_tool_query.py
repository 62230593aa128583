"""`tessera index` and `tessera query` (tools/tessera/cmd_index.cc, cmd_query.cc; issue 16)
against numpy's evaluation of the same expressions on the same data: counts, the hits'
coordinates (in the first variable's dataset, row-major order of its subarray) and
values, with and without indexes, after overwrites across several fragments; a malformed
expression is a usage error naming the character."""
from __future__ import annotations

import json
import subprocess

import h5py
import numpy as np

from conftest import fragments_as_written, tool_path

OK, USAGE = 0, 64


def run(*args, check=OK):
    p = subprocess.run([tool_path(), *map(str, args)], capture_output=True, text=True, timeout=300)
    assert p.returncode == check, f"tessera {' '.join(map(str, args))}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


def make(path):
    rng = np.random.default_rng(16)
    T = rng.normal(270, 12, (240, 300)).astype("f4")
    P = rng.integers(-500, 1500, (240, 300)).astype(">i2")  # big-endian storage
    with fragments_as_written(), h5py.File(path, "w") as f:  # a fragment per band, as counted below
        t = f.create_dataset("T", shape=T.shape, dtype="f4", chunks=(60, 100))
        p = f.create_dataset("g/P", shape=P.shape, dtype=">i2", chunks=(120, 150))
        for lo in range(0, 240, 60):  # a fragment per band, flushed apart
            t[lo:lo + 60] = T[lo:lo + 60]
            p[lo:lo + 60] = P[lo:lo + 60]
            f.flush()
        # Overwrites in newer fragments: an index must never answer for the old values.
        T[100:140, 50:250] = rng.normal(300, 5, (40, 200)).astype("f4")
        t[100:140, 50:250] = T[100:140, 50:250]
        P[::7, ::3] = 2000
        p[::7, ::3] = P[::7, ::3]
    return T, P


def coords_out(stdout):
    return [tuple(int(x) for x in line.split("\t")[0].split()) for line in stdout.splitlines()]


def test_index_and_query_match_numpy(tmp_path):
    c = tmp_path / "q.h5"
    T, P = make(c)
    cases = [
        ("T > 290 && g/P < 500", (T > 290) & (P < 500), (slice(None), slice(None))),
        ("!(T <= 265) || /g/P == 2000", ~(T <= 265) | (P == 2000), (slice(None), slice(None))),
        ("T[10:200:3, ::4] >= 280", T[10:200:3, ::4] >= 280, (slice(10, 200, 3), slice(None, None, 4))),
        ('re"^/g/" != 2000 && T[:, :] < 262', (P != 2000) & (T < 262), None),
    ]

    def check_all():
        for expr, mask, sub in cases:
            assert int(run("query", c, expr).stdout) == int(mask.sum()), expr
        # Coordinates and values of a subarray query: dataset coordinates, row-major.
        expr, mask, (s0, s1) = cases[2]
        got = run("query", c, expr, "--values").stdout.splitlines()
        want = [(s0.start + s0.step * i, s1.step * j) for i, j in np.argwhere(mask)]
        assert coords_out("\n".join(got)) == want
        assert [np.float32(line.split("\t")[1]) for line in got] == [T[a, b] for a, b in want]
        got = coords_out(run("query", c, "g/P > 1400 && T > 275", "--coords").stdout)
        assert got == [tuple(x) for x in np.argwhere((P > 1400) & (T > 275))]
        vals = [int(line.split("\t")[1]) for line in run("query", c, "g/P > 1400", "--values").stdout.splitlines()]
        assert vals == [int(v) for v in P[P > 1400]]

    check_all()                                  # no index: scans
    out = run("index", c, "/T").stdout
    assert "/T: indexed" in out and "0 fragment(s)" not in out, out
    run("index", c, "g/P", "--precision", "2", "--max-bins", "64")
    check_all()                                  # indexes answer (and candidate checks)
    info = lambda: {o["path"]: o for o in json.loads(run("info", c, "--json").stdout)["objects"] if "index_bytes" in o}
    t = info()["/T"]
    assert t["indexed_fragments"] == 4 and t["index_bytes"] > 0, t  # the four band fragments (files)
    run("index", c, "/T", "--drop")
    assert info()["/T"]["indexed_fragments"] == 0
    check_all()


def test_query_errors_name_the_problem(tmp_path):
    c = tmp_path / "q.h5"
    make(c)
    p = run("query", c, "T > > 3", check=USAGE)
    assert "at character 5" in p.stderr, p.stderr
    p = run("query", c, "nosuch < 3", check=2)
    assert "nosuch" in p.stderr, p.stderr
    p = run("query", c, "T > 1", "--count", "--coords", check=USAGE)
    p = run("index", c, "/nosuch", check=2)
    assert "nosuch" in p.stderr, p.stderr
