"""SWMR across processes (vol/model/swmr.h): one writer appends to an unlimited dataset and
flushes after each append; two reader processes, opened with swmr=True while it writes,
refresh and read over and over.  Every reader observation must be a prefix of what the
writer wrote — the values of rows 0..n-1, never a fill value or a torn row — and the
readers must see the final length.  The same scenario runs on native HDF5 (its own SWMR)
as the reference for what a reader may observe.

The writer writes row i as the values i * 1000 + j (j < width); the fill value is -1, so
a row visible before its data would show up as -1.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

APPENDS = 60
ROWS_PER_APPEND = 7
WIDTH = 33

WRITER = textwrap.dedent(
    """
    import os, sys, time, h5py, numpy as np
    path, ready, go, appends, rows, width = sys.argv[1], sys.argv[2], sys.argv[3], *map(int, sys.argv[4:7])
    with h5py.File(path, "w", libver="latest") as f:
        d = f.create_dataset("data", shape=(0, width), maxshape=(None, width), dtype="i8",
                             chunks=(16, width), fillvalue=-1)
        f.swmr_mode = True
        open(ready, "w").close()
        # Append only once the readers have opened the file, so that they watch the
        # appends happen however slowly they start (a sanitizer build, a loaded machine).
        t0 = time.time()
        while not os.path.exists(go):
            assert time.time() - t0 < 120, "the readers never opened the file"
            time.sleep(0.005)
        n = 0
        for k in range(appends):
            d.resize((n + rows, width))
            block = (np.arange(n, n + rows)[:, None] * 1000 + np.arange(width)[None, :]).astype("i8")
            d[n:n + rows] = block
            n += rows
            d.flush()
            time.sleep(0.01)
    print(n)
    """
)

READER = textwrap.dedent(
    """
    import json, sys, time, h5py, numpy as np
    path, final, width, opened = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    seen, bad = [], []
    deadline = time.time() + 120
    with h5py.File(path, "r", swmr=True) as f:
        assert f.swmr_mode, "the file is not in SWMR read mode"
        d = f["data"]
        open(opened, "w").close()
        while time.time() < deadline:
            d.refresh()
            n = d.shape[0]
            v = d[:n]
            want = (np.arange(n)[:, None] * 1000 + np.arange(width)[None, :]).astype("i8")
            if v.shape != want.shape or not np.array_equal(v, want):
                bad.append({"n": n, "first_wrong_row": int(np.argwhere((v != want).any(axis=1))[0][0])
                            if v.shape == want.shape else -1})
            if not seen or seen[-1] != n:
                seen.append(n)
            if n >= final:
                break
            time.sleep(0.002)
    print(json.dumps({"seen": seen, "bad": bad}))
    """
)


def run_swmr(tmp_path: Path, env: dict) -> list[dict]:
    path = tmp_path / "swmr.h5"
    ready = tmp_path / "ready"
    go = tmp_path / "go"
    final = APPENDS * ROWS_PER_APPEND
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(ready), str(go), str(APPENDS),
                               str(ROWS_PER_APPEND), str(WIDTH)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    t0 = time.time()
    while not ready.exists():
        assert writer.poll() is None, writer.communicate()
        assert time.time() - t0 < 60, "the writer never got ready"
        time.sleep(0.005)
    opened = [tmp_path / f"opened{i}" for i in range(2)]
    readers = [subprocess.Popen([sys.executable, "-c", READER, str(path), str(final), str(WIDTH), str(o)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for o in opened]
    t0 = time.time()
    while not all(o.exists() for o in opened):
        for r in readers:
            assert r.poll() is None, r.communicate()
        assert time.time() - t0 < 120, "the readers never opened the file"
        time.sleep(0.005)
    go.touch()
    out, err = writer.communicate(timeout=180)
    assert writer.returncode == 0, err
    assert int(out.strip()) == final
    results = []
    for r in readers:
        out, err = r.communicate(timeout=180)
        assert r.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def check(results: list[dict]):
    final = APPENDS * ROWS_PER_APPEND
    for res in results:
        assert res["bad"] == [], f"a reader saw rows that were not what the writer wrote: {res['bad'][:5]}"
        seen = res["seen"]
        assert seen[-1] == final, f"a reader never saw the final length: {seen[-10:]}"
        assert seen == sorted(seen), f"a reader saw the length shrink: {seen}"
        assert all(n % ROWS_PER_APPEND == 0 for n in seen), f"a reader saw a partial append: {seen}"


def test_swmr_readers_see_prefixes_tessera(tessera_env, tmp_path):
    results = run_swmr(tmp_path, dict(os.environ))
    check(results)
    # The readers really ran while the writer appended (not only after it finished).
    assert any(len(r["seen"]) > 2 for r in results), results


def test_swmr_readers_see_prefixes_native(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("HDF5_VOL_CONNECTOR", "LD_PRELOAD", "HDF5_PLUGIN_PATH")}
    check(run_swmr(tmp_path, env))


def test_swmr_write_needs_new_format(tessera_env, tmp_path):
    """H5Fstart_swmr_write's preconditions, as native: libver 1.10+ and write intent."""
    import h5py

    p = tmp_path / "old.h5"
    with h5py.File(p, "w") as f:  # earliest format: no SWMR
        f.create_group("g")
        with pytest.raises(Exception, match="superblock"):
            f.swmr_mode = True
        assert not f.swmr_mode
    q = tmp_path / "new.h5"
    h5py.File(q, "w", libver="latest").close()
    with h5py.File(q, "r") as f:
        with pytest.raises(Exception, match="no write intent"):
            f.swmr_mode = True
    with h5py.File(q, "r", swmr=True) as f:
        assert f.swmr_mode
        assert f.mode == "r"
