"""Time travel (engine/catalog/history.h, docs/tool.md "Reading the past"): a container opened as
of any past commit reads exactly what that commit left.

A model of the file — every dataset's values, shape and attributes, every path — is
recorded after each flush (a commit) of a scripted history: datasets created, written
(box, point and strided writes), resized, erased, deleted; attributes set and changed;
groups and links added and removed; a consolidation and a vacuum in between; enough
commits for the catalog to compact (its history archived).  Then every commit is opened
(by number, by time, from Python, through the tool and its export, and through the C
API's fapl) and compared with the model.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

import tessera
from conftest import native_env, tool_path


def snapshot(f: h5py.File) -> dict:
    out = {}

    def visit(name, obj):
        attrs = {k: np.asarray(obj.attrs[k]).tolist() for k in sorted(obj.attrs)}
        if isinstance(obj, h5py.Dataset):
            out["/" + name] = ("dataset", obj.shape, obj[()].tolist() if obj.shape != (0,) else [], attrs)
        else:
            out["/" + name] = ("group", None, None, attrs)

    f.visititems(visit)
    out["/"] = ("root", None, None, {k: np.asarray(f.attrs[k]).tolist() for k in sorted(f.attrs)})
    return out


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """(container, [(commit seq, snapshot)], [commit times ns])."""
    path = tmp_path_factory.mktemp("tt") / "c.h5"
    rng = np.random.default_rng(11)
    states = []

    def commit(f):
        f.flush()
        states.append(snapshot(f))

    with h5py.File(path, "w") as f:
        d = f.create_dataset("d", shape=(64, 48), maxshape=(None, 48), chunks=(16, 16), dtype="<i4", fillvalue=-1)
        d[:32] = rng.integers(0, 1000, size=(32, 48))
        f.attrs["run"] = 1
        commit(f)
        d[5, 7] = 99
        d[::3, 40] = np.arange(22)
        commit(f)
        d.resize((80, 48))
        d[70:80] = 5
        f.create_group("g").create_dataset("s", data=np.array(["a", "bc"], dtype=object), dtype=h5py.string_dtype())
        commit(f)
        tessera.erase(d, (slice(0, 8), slice(0, 8)))
        d.attrs["units"] = "m"
        commit(f)
        d.resize((40, 48))
        f["g/s"][1] = "changed"
        f.attrs["run"] = 2
        commit(f)
        for k in range(25):  # many commits: the catalog compacts, archiving its log
            f.attrs["blob"] = "x" * (5000 + 97 * k)
            d[k % 40, :] = k
            commit(f)
    # Consolidate (keeping the inputs) between commits, then go on writing.
    subprocess.run([tool_path(), "-q", "consolidate", str(path)], check=True)
    with h5py.File(path, "a") as f:
        f["d"][0, 0] = 12345
        del f["g"]
        f["late"] = np.arange(6.0)
        commit(f)
        f["late"][2] = -1
        commit(f)
    cs = tessera.commits(path)
    assert len(cs) == len(states), (len(cs), len(states))
    assert (path / "catalog.history").is_dir() and list((path / "catalog.history").iterdir()), "no compaction happened"
    return path, [(c.seq, s) for c, s in zip(cs, states)], [c.time_ns for c in cs]


def test_every_commit_reads_as_committed(history):
    path, states, times = history
    for seq, want in states:
        with tessera.open_as_of(path, seq) as f:
            assert snapshot(f) == want, f"commit {seq}"
    # By time: a commit's own time, and any time before the next commit.
    for i, (seq, want) in enumerate(states):
        with tessera.open_as_of(path, "@%d" % times[i]) as f:
            assert snapshot(f) == want
        if i + 1 < len(states):
            with tessera.open_as_of(path, "@%d" % (times[i + 1] - 1)) as f:
                assert snapshot(f) == want
    # The live file is the last commit.
    with h5py.File(path, "r") as f:
        assert snapshot(f) == states[-1][1]


def test_the_past_is_read_only_and_bounded(history):
    path, states, times = history
    with tessera.open_as_of(path, 3) as f:
        with pytest.raises(Exception):
            f["d"][0, 0] = 1
        with pytest.raises(Exception):
            f.create_group("new")
    with pytest.raises(tessera.TesseraError, match="no commit 9999"):
        tessera.open_as_of(path, 9999)
    with pytest.raises(tessera.TesseraError, match="no commit at or before"):
        tessera.open_as_of(path, dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc))
    with pytest.raises(ValueError):
        tessera.open_as_of(path, dt.datetime(2030, 1, 1))  # naive: ambiguous
    # A datetime after the last commit is the last commit.
    with tessera.open_as_of(path, dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)) as f:
        assert snapshot(f) == states[-1][1]
    # Opening the past does not disturb the present (another file in the same process).
    with h5py.File(path, "r") as live, tessera.open_as_of(path, 1) as old:
        assert snapshot(live) == states[-1][1] and snapshot(old) == states[0][1]


def test_the_tool_reads_the_past(history, tmp_path):
    path, states, times = history
    p = subprocess.run([tool_path(), "commits", str(path), "--json"], capture_output=True, text=True, check=True)
    listed = json.loads(p.stdout)["commits"]
    assert [c["commit"] for c in listed] == [s for s, _ in states] and [c["time_ns"] for c in listed] == times
    for seq, want in (states[0], states[3], states[-2]):
        p = subprocess.run([tool_path(), "info", str(path), "--as-of", str(seq), "--json"], capture_output=True,
                           text=True, check=True)
        objs = {o["path"]: o for o in json.loads(p.stdout)["objects"]}
        assert set(objs) == set(want)
        assert tuple(objs["/d"]["shape"]) == want["/d"][1]
        out = tmp_path / f"as_of_{seq}.h5"
        subprocess.run([tool_path(), "-q", "export", str(path), str(out), "--as-of", str(seq)], check=True)
        env = native_env()
        code = ("import sys, json, h5py, numpy as np; sys.path.insert(0, sys.argv[2]); from test_time_travel import snapshot; "
                "print(json.dumps({k: list(v[1:3]) if v[1] is not None else None "
                "for k, v in snapshot(h5py.File(sys.argv[1], 'r')).items()}, default=repr))")
        r = subprocess.run([sys.executable, "-c", code, str(out), os.path.dirname(__file__)], env=env,
                           capture_output=True, text=True, check=True)
        got = json.loads(r.stdout)
        for k, v in want.items():
            if v[1] is not None:
                assert got[k] == json.loads(json.dumps([list(v[1]), v[2]], default=repr)), (seq, k)
    bad = subprocess.run([tool_path(), "info", str(path), "--as-of", "yesterday"], capture_output=True, text=True)
    assert bad.returncode == 2 and "names no commit" in bad.stderr


def test_connector_setting_from_the_environment(history):
    """HDF5_VOL_CONNECTOR="tessera as_of=N": any HDF5 program (h5dump here) reads the past."""
    path, states, _ = history
    env = dict(os.environ, HDF5_VOL_CONNECTOR="tessera as_of=2")
    p = subprocess.run(["h5dump", "-d", "/d", "-s", "5,7", "-c", "1,1", str(path)], env=env, capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    assert "(5,7): 99" in p.stdout
    env = dict(os.environ, HDF5_VOL_CONNECTOR="tessera as_of=1")
    p = subprocess.run(["h5dump", "-d", "/d", "-s", "5,7", "-c", "1,1", str(path)], env=env, capture_output=True,
                       text=True)
    assert "(5,7): 99" not in p.stdout and str(states[0][1]["/d"][2][5][7]) in p.stdout


def test_a_vacuum_gives_up_what_only_the_past_needed(history, tmp_path):
    import shutil

    path, states, _ = history
    copy = tmp_path / "v.h5"
    shutil.copytree(path, copy)
    subprocess.run([tool_path(), "-q", "vacuum", str(copy)], check=True)
    readable = 0
    for seq, want in states:
        try:
            with tessera.open_as_of(copy, seq) as f:
                got = snapshot(f)
        except Exception as e:  # a missing fragment is an error naming it, never other data
            assert "vacuum" in str(e) or "missing" in str(e), str(e)
            continue
        assert got == want, f"commit {seq} after the vacuum"
        readable += 1
    assert readable >= 2  # the commits after the consolidation at least
