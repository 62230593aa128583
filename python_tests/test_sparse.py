"""tessera.defined / tessera.erase on h5py datasets (python/tessera, docs/sparse.md),
against an independent numpy model: values plus a boolean "defined" array, changed by
every write (defined), erase (undefined) and resize (cut elements undefined).

- random slice, step and index-list writes and erases on 1-D to 4-D chunked datasets,
  resizes, flushes and reopens; after each step the whole dataset reads as the model
  (fill value where undefined), defined() equals np.argwhere of the model, the mask form
  equals the model's slice, and the allocated chunks are those holding a defined element;
- consolidation (`tessera consolidate` and `tessera vacuum`) keeps values and definedness and gives an
  erase's space back;
- a writer process killed at random moments while it writes, erases and flushes: the
  reopened file holds the state of one of its flushes (the last one reported, or the one
  in flight) — an erase is never half applied;
- a native HDF5 file's dataset: both raise TesseraError saying why.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
import tessera  # noqa: E402
from conftest import tool_path  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
FILL = -5


def _rand_key(rng, shape):
    key = []
    for n in shape:
        kind = rng.random()
        if kind < 0.15:
            key.append(rng.randrange(n))
        elif kind < 0.75 or n < 3:
            a = rng.randrange(n)
            b = rng.randrange(a, n) + 1
            key.append(slice(a, b, rng.choice([1, 1, 2, 3])))
        else:  # an increasing index list (h5py allows one per key)
            if any(isinstance(k, list) for k in key):
                key.append(slice(None))
            else:
                key.append(sorted(rng.sample(range(n), rng.randint(1, min(n, 4)))))
    return tuple(key)


def _model_index(key, shape):
    """The numpy index of key over the model (lists become np.ix_-like broadcasting)."""
    idx = []
    for k, n in zip(key, shape):
        if isinstance(k, int):
            idx.append([k])
        elif isinstance(k, slice):
            idx.append(list(range(*k.indices(n))))
        else:
            idx.append(list(k))
    return np.ix_(*idx)


def _chunks_with_defined(defined, chunks):
    n = 0
    grid = [range(0, s, c) for s, c in zip(defined.shape, chunks)]
    for corner in np.array(np.meshgrid(*grid, indexing="ij")).reshape(len(chunks), -1).T:
        sl = tuple(slice(int(c0), int(c0) + c) for c0, c in zip(corner, chunks))
        n += bool(defined[sl].any())
    return n


def _check(dset, values, defined):
    got = dset[()]
    want = np.where(defined, values, FILL)
    np.testing.assert_array_equal(got, want)
    coords = tessera.defined(dset)
    np.testing.assert_array_equal(coords, np.argwhere(defined).astype(np.uint64))
    assert dset.id.get_num_chunks() == _chunks_with_defined(defined, dset.chunks)


@pytest.mark.parametrize("shape,chunks", [((53,), (8,)), ((15, 21), (4, 5)), ((6, 7, 5), (3, 2, 4)),
                                          ((4, 5, 3, 4), (2, 3, 2, 2))])
def test_defined_and_erase_match_a_model(tessera_env, tmp_path, shape, chunks):
    rng = random.Random(hash(shape) & 0xFFFF)
    path = tmp_path / "m.h5"
    f = h5py.File(path, "w")
    d = f.create_dataset("d", shape=shape, maxshape=shape, chunks=chunks, dtype="i4", fillvalue=FILL)
    cap = shape
    values = np.zeros(cap, dtype=np.int32)
    defined = np.zeros(cap, dtype=bool)
    cur = list(shape)
    for step in range(70):
        op = rng.random()
        cshape = tuple(cur)
        view_v = values[tuple(slice(0, n) for n in cshape)]
        view_d = defined[tuple(slice(0, n) for n in cshape)]
        if op < 0.35:
            key = _rand_key(rng, cshape)
            target = d[key]
            v = np.asarray(np.random.default_rng(step).integers(0, 1 << 30, size=np.shape(target)), dtype=np.int32)
            d[key] = v
            idx = _model_index(key, cshape)
            view_v[idx] = v.reshape(view_v[idx].shape)
            view_d[idx] = True
        elif op < 0.65:
            key = _rand_key(rng, cshape) if rng.random() < 0.9 else ()
            tessera.erase(d, key)
            view_d[_model_index(key, cshape) if key else ...] = False
            if rng.random() < 0.3 and key and all(not isinstance(k, list) for k in key):
                mask = tessera.defined(d, key, mask=True)
                sub = view_d[_model_index(key, cshape)].reshape(np.shape(mask))
                np.testing.assert_array_equal(mask, sub)
        elif op < 0.75:
            new = tuple(rng.randint(1, n) for n in cap)
            d.resize(new)
            keep = np.zeros(cap, dtype=bool)
            keep[tuple(slice(0, n) for n in new)] = True
            defined &= keep
            cur = list(new)
        elif op < 0.85:
            f.flush()
        else:
            f.close()
            f = h5py.File(path, "a")
            d = f["d"]
        region = tuple(slice(0, n) for n in cur)
        _check(d, values[region], defined[region])
    f.close()


def test_defined_of_a_point_list_keeps_its_order(tessera_env, tmp_path):
    with h5py.File(tmp_path / "p.h5", "w") as f:
        d = f.create_dataset("d", shape=(10, 10), chunks=(5, 5), dtype="f8")
        d[2:4, 2:4] = 1.0
        space = d.id.get_space()
        pts = np.array([[3, 3], [0, 0], [2, 2], [9, 9], [2, 3]], dtype=np.uint64)
        space.select_elements(pts)
        import ctypes
        lib = tessera._lib.lib()
        sid = lib.tessera_Dget_defined(d.id.id, space.id, 0)
        assert sid >= 0
        got = h5py.h5s.SpaceID(sid).get_select_elem_pointlist()
        np.testing.assert_array_equal(got, pts[[0, 2, 4]])
        del ctypes


def test_consolidation_keeps_definedness_and_frees_erased_space(tessera_env, tmp_path):
    path = tmp_path / "c.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("d", shape=(64, 512, 512), chunks=(1, 512, 512), dtype="u2", fillvalue=0)
        for t in range(64):
            d[t] = np.full((512, 512), t + 1, dtype=np.uint16)
        tessera.erase(d, (slice(0, 64), slice(0, 500), slice(None)))  # keeps 12 rows per frame
    size_before = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    # `tessera consolidate` keeps the merged fragments until `tessera vacuum` (docs/tool.md).
    for cmd in ("consolidate", "vacuum"):
        subprocess.run([tool_path(), cmd, str(path)], check=True, capture_output=True)
    size_after = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    assert size_after * 10 < size_before, (size_before, size_after)
    with h5py.File(path, "r") as f:
        d = f["d"]
        c = tessera.defined(d)
        assert len(c) == 64 * 12 * 512
        assert set(np.unique(c[:, 1])) == set(range(500, 512))
        np.testing.assert_array_equal(d[5, 499:502, 0], [0, 6, 6])


WRITER = r"""
import sys, h5py, numpy as np, tessera
path = sys.argv[1]
f = h5py.File(path, "a")
d = f["d"]
k = 0
while True:
    k += 1
    if k % 3 == 0:
        tessera.erase(d, (slice(None), slice(k % 7, k % 7 + 20)))
    else:
        d[k % 4] = np.full(d.shape[1:], k, dtype=np.int32)
    f.flush()
    print(k, flush=True)
"""


def _apply(values, defined, k):
    if k % 3 == 0:
        defined[:, k % 7:k % 7 + 20] = False
    else:
        values[k % 4] = k
        defined[k % 4] = True


def test_a_killed_writer_leaves_a_flushed_state(tessera_env, tmp_path):
    rng = random.Random(7)
    for run in range(6):
        path = tmp_path / f"k{run}.h5"
        with h5py.File(path, "w") as f:
            f.create_dataset("d", shape=(4, 64, 64), chunks=(1, 16, 64), dtype="i4", fillvalue=FILL)
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
        # Kill at a random moment after the writer has flushed a few states, however slowly
        # it starts (a sanitizer build, a loaded machine): wait for its fourth report first.
        early = [proc.stdout.readline() for _ in range(4)]
        time.sleep(rng.uniform(0.0, 1.0))
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate()
        done = [int(x) for x in "".join(early).split() + out.split()]
        last = done[-1] if done else 0
        states = []
        for upto in (last, last + 1):
            values = np.zeros((4, 64, 64), dtype=np.int32)
            defined = np.zeros((4, 64, 64), dtype=bool)
            for k in range(1, upto + 1):
                _apply(values, defined, k)
            states.append((values, defined))
        with h5py.File(path, "r") as f:
            d = f["d"]
            got = d[()]
            coords = tessera.defined(d)
        ok = False
        for values, defined in states:
            if np.array_equal(got, np.where(defined, values, FILL)) and np.array_equal(
                    coords, np.argwhere(defined).astype(np.uint64)):
                ok = True
        assert ok, f"run {run}: killed after {last} flushes; the file holds neither that state nor the next"
        assert last > 3, "the writer did too little before the kill to test anything"


def test_native_datasets_are_refused(tessera_env, tmp_path):
    path = tmp_path / "native.h5"
    env = {k: v for k, v in os.environ.items() if k != "HDF5_VOL_CONNECTOR"}  # native HDF5
    code = ("import h5py, numpy as np; f = h5py.File(%r, 'w'); "
            "f.create_dataset('d', data=np.arange(16).reshape(4, 4), chunks=(2, 2)); f.close()" % str(path))
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    assert path.is_file()  # a native HDF5 file, not a tessera container
    with h5py.File(path, "r+") as f:
        d = f["d"]
        assert not tessera.is_tessera(d)
        with pytest.raises(tessera.TesseraError, match="needs a dataset stored by tessera"):
            tessera.erase(d, (0,))
        with pytest.raises(tessera.TesseraError, match="needs a dataset stored by tessera"):
            tessera.defined(d)
        np.testing.assert_array_equal(d[()], np.arange(16).reshape(4, 4))  # untouched
