"""h5py with driver='mpio' on tessera: collective metadata, per-rank writes, epochs.

Every rank writes its own part of each dataset — a block of rows (collective transfer), a
strided interleaving of columns and random points (independent), each with and without
gzip — then, after a flush, a box over another rank's earlier data.  Every rank reads the
whole datasets and compares them with a model computed here; after the parallel close,
rank 0 re-reads the file with a serial h5py open.  Results are allgathered before any
assert, so a failure on one rank fails the test on every rank (no rank is left waiting
in a collective).  Native PHDF5 refuses the independent gzip writes; tessera does them.
"""
from __future__ import annotations

import os
import shutil
import tempfile

import h5py
import numpy as np
from mpi4py import MPI

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()
NX, NY, FILL = 48, 40, -1


def _tmpdir():
    d = tempfile.mkdtemp(prefix="tessera-mpio-") if RANK == 0 else None
    return COMM.bcast(d, root=0)


def _cleanup(d):
    COMM.Barrier()
    if RANK == 0:
        shutil.rmtree(d, ignore_errors=True)


def _value(phase, r, idx):
    return phase * 1_000_000 + (r + 1) * 10_000 + idx


def _rows(r):
    return r * NX // SIZE, (r + 1) * NX // SIZE


def _points(r):
    rng = np.random.default_rng(7)  # the same permutation on every rank
    cells = rng.permutation(NX * NY)[: NX * NY // 3]
    return np.sort(cells[r::SIZE])


def _apply(model, pattern, r, ds=None):
    """Rank r's first write into the model (and into ds, when given)."""
    grid = np.arange(NX * NY).reshape(NX, NY)
    if pattern == "slab":
        lo, hi = _rows(r)
        model[lo:hi, :] = _value(0, r, grid[lo:hi, :])
        if ds is not None:
            with ds.collective:
                ds[lo:hi, :] = model[lo:hi, :]
    elif pattern == "strided":
        model[:, r::SIZE] = _value(0, r, grid[:, r::SIZE])
        if ds is not None:
            ds[:, r::SIZE] = model[:, r::SIZE]
    else:  # points: a 1-D view of the same cells
        flat = model.reshape(-1)
        idx = _points(r)
        flat[idx] = _value(0, r, idx)
        if ds is not None:
            ds[idx] = flat[idx]


def _overlay(model, pattern, r, ds=None):
    """After a flush, rank r overwrites a box in the next rank's rows."""
    lo = _rows((r + 1) % SIZE)[0] + 1
    box = _value(1, r, np.arange(4 * 5).reshape(4, 5))
    if pattern == "points":
        flat = model.reshape(-1)
        idx = np.arange(lo * NY, lo * NY + 20)
        flat[idx] = box.reshape(-1)
        if ds is not None:
            ds[lo * NY: lo * NY + 20] = box.reshape(-1)
        return
    model[lo: lo + 4, 3:8] = box
    if ds is not None:
        ds[lo: lo + 4, 3:8] = box


CASES = [(p, gz) for p in ("slab", "strided", "points") for gz in (False, True)]


def _name(pattern, gz):
    return pattern + ("_gzip" if gz else "")


def _models():
    models = {}
    for pattern, gz in CASES:
        m = np.full((NX, NY), FILL, dtype=np.int32)
        for r in range(SIZE):
            _apply(m, pattern, r)
        for r in range(SIZE):
            _overlay(m, pattern, r)
        models[_name(pattern, gz)] = m
    return models


def _read(f, name):
    data = f[name][...]
    return data.reshape(NX, NY)


def test_mpio_writes_match_the_model_on_every_rank_and_serially():
    d = _tmpdir()
    path = os.path.join(d, "par.h5")
    models = _models()
    try:
        try:
            local = []
            with h5py.File(path, "w", driver="mpio", comm=COMM) as f:
                local.append(("driver", f.driver))
                f.create_group("meta/sub")
                f["meta"].attrs["info"] = np.array([7, 8, 9, SIZE], dtype=np.int32)
                dsets = {}
                for pattern, gz in CASES:
                    shape = (NX * NY,) if pattern == "points" else (NX, NY)
                    chunks = (256,) if pattern == "points" else (16, 16)
                    dsets[_name(pattern, gz)] = f.create_dataset(
                        _name(pattern, gz), shape, dtype="i4", chunks=chunks, fillvalue=FILL,
                        compression="gzip" if gz else None)
                scratch = np.full((NX, NY), FILL, dtype=np.int32)
                for pattern, gz in CASES:
                    _apply(scratch.copy(), pattern, RANK, dsets[_name(pattern, gz)])
                f.flush()
                for pattern, gz in CASES:
                    _overlay(scratch.copy(), pattern, RANK, dsets[_name(pattern, gz)])
                f.flush()
                for pattern, gz in CASES:
                    name = _name(pattern, gz)
                    local.append((name, bool((_read(f, name) == models[name]).all())))
                local.append(("attr", f["meta"].attrs["info"].tolist()))
                local.append(("group", "sub" in f["meta"]))
            serial = None
            if RANK == 0:
                with h5py.File(path, "r") as f:
                    serial = [(n, bool((_read(f, n) == models[n]).all())) for n in models]
                    serial.append(("attr", f["meta"].attrs["info"].tolist()))
                serial.append(("container", os.path.isfile(os.path.join(path, "tessera.container"))))
            serial = COMM.bcast(serial, root=0)
        except Exception as exc:  # report, never raise before the collective
            local, serial = [("error", repr(exc))], None
        results = COMM.allgather(local)
        serial = COMM.bcast(serial, root=0)
    finally:
        _cleanup(d)
    want = [("driver", "mpio")] + [(_name(p, g), True) for p, g in CASES] + \
        [("attr", [7, 8, 9, SIZE]), ("group", True)]
    assert results == [want] * SIZE, results
    assert serial == [(n, True) for n in models] + [("attr", [7, 8, 9, SIZE]), ("container", True)], serial


def test_mpio_resize_is_collective_and_cut_cells_come_back_as_fill():
    d = _tmpdir()
    path = os.path.join(d, "ext.h5")
    try:
        try:
            with h5py.File(path, "w", driver="mpio", comm=COMM) as f:
                ds = f.create_dataset("x", (16 * SIZE,), maxshape=(None,), dtype="i4", chunks=(8,),
                                      fillvalue=FILL)
                ds[RANK * 16:(RANK + 1) * 16] = _value(0, RANK, np.arange(RANK * 16, (RANK + 1) * 16))
                ds.resize((8,))
                ds.resize((32 * SIZE,))
                lo = 16 * SIZE + RANK * 16
                ds[lo:lo + 16] = _value(2, RANK, np.arange(lo, lo + 16))
                f.flush()
                got = ds[...]
            want = np.full(32 * SIZE, FILL, dtype=np.int32)
            want[:8] = _value(0, 0, np.arange(8))
            for r in range(SIZE):
                lo = 16 * SIZE + r * 16
                want[lo:lo + 16] = _value(2, r, np.arange(lo, lo + 16))
            local = (got.shape, bool((got == want).all()))
            if RANK == 0:
                with h5py.File(path, "r") as f:
                    local = local + (bool((f["x"][...] == want).all()),)
            else:
                local = local + (True,)
        except Exception as exc:
            local = ("error", repr(exc))
        results = COMM.allgather(local)
    finally:
        _cleanup(d)
    assert results == [((32 * SIZE,), True, True)] * SIZE, results


def test_mpio_reopen_appends_in_a_new_epoch():
    """A second parallel session on the same container sees the first and adds to it."""
    d = _tmpdir()
    path = os.path.join(d, "re.h5")
    try:
        try:
            with h5py.File(path, "w", driver="mpio", comm=COMM) as f:
                ds = f.create_dataset("x", (SIZE, 10), dtype="i8", fillvalue=FILL)
                ds[RANK, :] = RANK
            with h5py.File(path, "r+", driver="mpio", comm=COMM) as f:
                before = f["x"][...].tolist()
                # Every rank has read before any writes: closing the dataset after a write
                # publishes it to ranks that open it later (docs/parallel.md, "Visibility").
                COMM.Barrier()
                f["x"][(RANK + 1) % SIZE, 5:] = 100 + RANK
                f.attrs["second"] = 1
            with h5py.File(path, "r", driver="mpio", comm=COMM) as f:
                after = f["x"][...].tolist()
                attr = int(f.attrs["second"])
            local = (before, after, attr)
        except Exception as exc:
            local = ("error", repr(exc))
        results = COMM.allgather(local)
    finally:
        _cleanup(d)
    before = [[r] * 10 for r in range(SIZE)]
    after = [[r] * 5 + [100 + (r - 1) % SIZE] * 5 for r in range(SIZE)]
    assert results == [(before, after, 1)] * SIZE, results


def test_mpio_failures_are_the_same_on_every_rank_and_leave_the_file_usable():
    """A failing collective fails on every rank with one message; nobody hangs."""
    d = _tmpdir()
    path = os.path.join(d, "err.h5")
    try:
        try:
            with h5py.File(path, "w", driver="mpio", comm=COMM) as f:
                f.create_dataset("x", (4,), "i4")
            msgs = []
            try:
                h5py.File(path, "w-", driver="mpio", comm=COMM)  # exists: every rank fails
                msgs.append("created")
            except Exception as exc:
                msgs.append(type(exc).__name__)
            with h5py.File(path, "r+", driver="mpio", comm=COMM) as f:
                try:
                    f.create_dataset("x", (4,), "i4")  # name exists on every rank
                    msgs.append("created")
                except Exception as exc:
                    msgs.append(type(exc).__name__)
                f["x"][RANK % 4] = RANK + 1  # still usable afterwards
            with h5py.File(path, "r", driver="mpio", comm=COMM) as f:
                data = f["x"][...].tolist()
            local = (msgs, data)
        except Exception as exc:
            local = ("error", repr(exc))
        results = COMM.allgather(local)
    finally:
        _cleanup(d)
    assert SIZE <= 4  # so that element r is written by rank r alone
    want_data = [r + 1 if r < SIZE else 0 for r in range(4)]
    msgs = results[0][0] if isinstance(results[0][0], list) else None
    assert msgs is not None and "created" not in msgs, results
    assert all(r == (msgs, want_data) for r in results), results


def test_mpio_one_rank_may_open_and_use_a_dataset_alone():
    """h5py's `if rank == 0: f["x"][...]`: dataset open and I/O are not collective."""
    d = _tmpdir()
    path = os.path.join(d, "alone.h5")
    try:
        try:
            with h5py.File(path, "w", driver="mpio", comm=COMM) as f:
                f.create_dataset("x", (SIZE,), "i4", fillvalue=FILL)
                f.create_dataset("y", (4,), "i4", fillvalue=FILL)
            with h5py.File(path, "r+", driver="mpio", comm=COMM) as f:
                if RANK == SIZE - 1:  # only this rank opens x and writes it
                    f["x"][...] = np.arange(SIZE) * 10
                f["y"][RANK % 4] = RANK  # every rank writes y
                f.flush()
                x = f["x"][...].tolist()  # everyone sees the last rank's write now
                peek = f["y"][...].tolist() if RANK == 0 else None
            local = (x, peek if RANK == 0 else "skip")
        except Exception as exc:
            local = ("error", repr(exc))
        results = COMM.allgather(local)
    finally:
        _cleanup(d)
    y = [r if r < SIZE else FILL for r in range(4)]
    assert results == [(list(range(0, 10 * SIZE, 10)), y)] + [(list(range(0, 10 * SIZE, 10)), "skip")] * (SIZE - 1), results


def test_mpio_variable_length_strings_from_every_rank():
    """Variable-length cells: each rank's bytes live in heap files named by its rank."""
    d = _tmpdir()
    path = os.path.join(d, "vlen.h5")
    words = [f"rank{r}-" + "x" * (r * 7 + i) for r in range(SIZE) for i in range(5)]
    try:
        try:
            with h5py.File(path, "w", driver="mpio", comm=COMM) as f:
                ds = f.create_dataset("s", (5 * SIZE,), dtype=h5py.string_dtype())
                ds[RANK * 5:(RANK + 1) * 5] = words[RANK * 5:(RANK + 1) * 5]
                f.flush()
                got = [s.decode() for s in ds[...]]
            serial = None
            if RANK == 0:
                with h5py.File(path, "r") as f:
                    serial = [s.decode() for s in f["s"][...]]
            local = (got, COMM.bcast(serial, root=0))
        except Exception as exc:
            local = ("error", repr(exc))
        results = COMM.allgather(local)
    finally:
        _cleanup(d)
    assert results == [(words, words)] * SIZE, results


def test_mpio_dataset_close_publishes_to_ranks_that_open_it_after_a_barrier():
    """PHDF5 programs (and HDF5's parallel API tests): one rank writes and closes the
    dataset, all ranks pass a barrier, every rank opens it and sees the write — no flush.
    A rank that keeps its own handle open sees it after the next H5Fflush."""
    d = _tmpdir()
    path = os.path.join(d, "visible.h5")
    model = np.full((SIZE * 8,), FILL, dtype="i4")
    seen = []
    try:
        try:
            with h5py.File(path, "w", driver="mpio", comm=COMM) as f:
                f.create_dataset("x", model.shape, "i4", chunks=(4,), fillvalue=FILL)
                kept = f["x"]  # held open all along on every rank
                for it in range(3):
                    writer = it % SIZE
                    if RANK == writer:
                        ds = f["x"]
                        ds[it * 4:it * 4 + 6] = np.arange(6) + 100 * it
                        ds.id.close()  # H5Dclose: publishes this rank's writes
                    model[it * 4:it * 4 + 6] = np.arange(6) + 100 * it
                    COMM.Barrier()
                    seen.append(f["x"][...].tolist())  # a fresh open on every rank
                    # The next writer must not write before every rank has read this
                    # iteration (without it a slow rank sees the next write too, with
                    # native PHDF5 as well: the test raced, not the connector).
                    COMM.Barrier()
                f.flush()
                seen.append(kept[...].tolist())
        except Exception as exc:
            seen = ("error", repr(exc))
        results = COMM.allgather(seen)
        # Rank 0 reads the file serially while it is open in parallel: a read-only serial
        # handle works and closing it starts no collective; a writable one is refused.
        with h5py.File(path, "r+", driver="mpio", comm=COMM) as f:
            serial = None
            if RANK == 0:
                with h5py.File(path, "r") as g:
                    serial = g["x"][...].tolist()
                try:
                    h5py.File(path, "r+").close()
                    serial = ("writable serial handle accepted", serial)
                except OSError:
                    pass
            serial = COMM.bcast(serial, root=0)
    finally:
        _cleanup(d)
    want = []
    m = np.full_like(model, FILL)
    for it in range(3):
        m[it * 4:it * 4 + 6] = np.arange(6) + 100 * it
        want.append(m.tolist())
    want.append(m.tolist())
    assert results == [want] * SIZE, results
    assert serial == m.tolist(), serial


def test_mpio_erase_from_every_rank_is_published_with_the_epoch():
    """Each rank writes its rows, flushes, then erases a box in its rows and a few
    points in the next rank's rows (tessera.erase: docs/sparse.md); after the collective
    close every rank, and a serial reader, sees the same defined cells and values as the
    model — the erases of all ranks published together, newest-wins against the writes."""
    import tessera

    d = _tmpdir()
    path = os.path.join(d, "erase.h5")
    try:
        try:
            with h5py.File(path, "w", driver="mpio", comm=COMM) as f:
                ds = f.create_dataset("x", (NX, NY), dtype="i4", chunks=(4, 8), fillvalue=FILL)
                lo, hi = _rows(RANK)
                grid = np.arange(NX * NY).reshape(NX, NY)
                ds[lo:hi, :] = _value(0, RANK, grid[lo:hi, :])
                f.flush()
                tessera.erase(ds, (slice(lo, lo + 2), slice(1, 6)))
                nlo = _rows((RANK + 1) % SIZE)[0]
                pts = [(nlo + 1, c) for c in (0, 7, 9)]
                space = ds.id.get_space()
                space.select_elements(np.array(pts, dtype=np.uint64))
                rc = tessera._lib.lib().tessera_Derase(ds.id.id, space.id, 0)
                assert rc >= 0
            want = np.full((NX, NY), FILL, dtype=np.int32)
            defined = np.zeros((NX, NY), dtype=bool)
            grid = np.arange(NX * NY).reshape(NX, NY)
            for r in range(SIZE):
                lo, hi = _rows(r)
                want[lo:hi, :] = _value(0, r, grid[lo:hi, :])
                defined[lo:hi, :] = True
            for r in range(SIZE):
                lo, _ = _rows(r)
                defined[lo:lo + 2, 1:6] = False
                nlo = _rows((r + 1) % SIZE)[0]
                for c in (0, 7, 9):
                    defined[nlo + 1, c] = False
            want = np.where(defined, want, FILL)
            with h5py.File(path, "r", driver="mpio", comm=COMM) as f:
                got = f["x"][...]
                coords = tessera.defined(f["x"])
            local = (bool((got == want).all()),
                     bool(np.array_equal(coords, np.argwhere(defined).astype(np.uint64))))
            if RANK == 0:
                with h5py.File(path, "r") as f:
                    local = local + (bool((f["x"][...] == want).all()),)
            else:
                local = local + (True,)
        except Exception as exc:
            local = ("error", repr(exc))
        results = COMM.allgather(local)
    finally:
        _cleanup(d)
    assert results == [(True, True, True)] * SIZE, results
