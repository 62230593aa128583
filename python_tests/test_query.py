"""tessera.index / tessera.query on h5py objects (python/tessera/_query.py,
docs/queries.md), against numpy's evaluation of the same expression on the data read back.

- random datasets (every integer size, float32/64 with NaN and infinities; 1-D to 4-D;
  fill values) written by random slice writes, erased in parts, resized, flushed,
  reopened, indexed (random precision and bin counts) or not, dropped; after each step
  random comparisons over random subarrays (steps included) — count, coordinates, mask,
  positions and values all equal numpy's;
- expressions over several datasets (&&, ||, !, parentheses, paths relative to a group,
  absolute, regular expressions), same number of elements, paired in row-major order;
- the selection result reads the hits with h5py's low-level read;
- indexes survive consolidation (`tessera consolidate`) and index_on_write builds
  them at flush; progress callbacks; a malformed expression names the character; a
  native file is refused;
- under `mpirun -n 2`: a collective tessera.index in which each rank indexes its share.

numpy comparisons of float32 data are done in float64 (tessera compares the exact stored
value with the number; numpy's own float32 comparison rounds the number to float32 first).
"""
from __future__ import annotations

import operator
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
import tessera  # noqa: E402
from conftest import fragments_as_written, tool_path  # noqa: E402

OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne}
DTYPES = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8", ">i4", ">f8"]


def _random_values(rng, dtype, shape):
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt.kind == "f":
        v = rng.integers(-40, 40, size=n) / 8.0
        special = rng.random(n)
        v = np.where(special < 0.03, np.nan, v)
        v = np.where((special >= 0.03) & (special < 0.04), np.inf, v)
        v = np.where((special >= 0.04) & (special < 0.05), -np.inf, v)
    elif dt.kind == "u":
        v = rng.integers(0, 40, size=n)
    else:
        v = rng.integers(-20, 20, size=n)
    return v.astype(dt).reshape(shape)


def _numpy_holds(values, op, t):
    if values.dtype.kind == "f":
        values = values.astype(np.float64)
    with np.errstate(invalid="ignore"):
        return OPS[op](values, t)


def _random_subarray(rng, shape):
    """(text, numpy index tuple) of a FastQuery subarray over shape."""
    parts, idx = [], []
    for n in shape:
        k = rng.random()
        if k < 0.25:
            parts.append(":")
            idx.append(slice(None))
        elif k < 0.4:
            i = int(rng.integers(0, n))
            parts.append(str(i))
            idx.append(slice(i, i + 1))
        else:
            a = int(rng.integers(0, n))
            b = int(rng.integers(a, n + 3))  # past the end: clipped, as in Python
            s = int(rng.choice([1, 1, 2, 3]))
            parts.append(f"{a}:{b}:{s}" if s > 1 else f"{a}:{b}")
            idx.append(slice(a, b, s))
    return "[" + ", ".join(parts) + "]", tuple(idx)


def _coords_of(idx, shape, mask):
    """Dataset coordinates of mask's True elements (mask over the subarray idx)."""
    hits = np.argwhere(mask)
    start = np.array([s.indices(n)[0] for s, n in zip(idx, shape)], dtype=np.uint64)
    step = np.array([s.indices(n)[2] for s, n in zip(idx, shape)], dtype=np.uint64)
    return (hits.astype(np.uint64) * step + start).reshape(-1, len(shape))


@pytest.mark.parametrize("shape,chunks", [((200,), (32,)), ((40, 30), (16, 8)), ((12, 10, 9), (5, 4, 9)),
                                          ((6, 7, 5, 4), (3, 3, 2, 4))])
def test_queries_match_numpy(tessera_env, tmp_path, shape, chunks):
    seed = int(os.environ.get("TESSERA_TEST_SEED", "0") or 0) if os.environ.get("TESSERA_TEST_SEED", "") != "random" \
        else random.randrange(1 << 30)
    rng = np.random.default_rng(seed + len(shape))
    for run in range(4):
        dtype = DTYPES[int(rng.integers(0, len(DTYPES)))]
        path = tmp_path / f"q{len(shape)}_{run}.h5"
        fill = _random_values(rng, dtype, (1,))[0] if rng.random() < 0.5 else np.zeros((), dtype)[()]
        if np.dtype(dtype).kind == "f" and np.isnan(fill):
            fill = np.dtype(dtype).type(0)
        f = h5py.File(path, "w")
        d = f.create_dataset("d", shape=shape, chunks=chunks, dtype=dtype, fillvalue=fill, maxshape=shape)
        model = np.full(shape, fill, dtype=dtype)
        log = []
        for step in range(24):
            k = rng.random()
            if k < 0.35:
                _, idx = _random_subarray(rng, shape)
                cur = model[idx]
                v = _random_values(rng, dtype, cur.shape)
                d[idx] = v
                model[idx] = v
                log.append(f"write {idx}")
            elif k < 0.45:
                _, idx = _random_subarray(rng, shape)
                tessera.erase(d, idx)
                model[idx] = fill
                log.append(f"erase {idx}")
            elif k < 0.65:
                tessera.index(d, precision=int(rng.integers(1, 5)), max_bins=int(rng.choice([2, 5, 64, 1024])),
                              rebuild=bool(rng.random() < 0.2))
                info = tessera.index_info(d)
                assert info.indexed == info.fragments and info.unindexed_cells == 0, info
                log.append("index")
            elif k < 0.7:
                tessera.drop_index(d)
                log.append("drop_index")
            elif k < 0.85:
                f.flush()
                log.append("flush")
            else:
                f.close()
                f = h5py.File(path, "a")
                d = f["d"]
                log.append("reopen")
            for _ in range(4):
                text, idx = _random_subarray(rng, shape)
                op = str(rng.choice(list(OPS)))
                kind = rng.random()
                if kind < 0.6:
                    t = model.reshape(-1)[int(rng.integers(0, model.size))].item()
                    if isinstance(t, float) and np.isnan(t):
                        t_text = "nan"
                    elif isinstance(t, float) and np.isinf(t):
                        t_text = "inf" if t > 0 else "-inf"
                    else:
                        t_text = repr(t)
                elif kind < 0.9:
                    t = float(rng.integers(-30, 30)) + float(rng.choice([0, 0.5, 0.25]))
                    t_text = repr(t)
                else:
                    t, t_text = float("nan"), "nan"
                expr = f"d{text} {op} {t_text}"
                sub = model[idx]
                want = _numpy_holds(sub, op, t)
                where = f"run {run} ({dtype}, fill {fill}) after {log}: {expr}"
                assert tessera.query(f, expr, result="count") == int(want.sum()), where
                result = str(rng.choice(["coords", "mask", "positions", "values"]))
                got = tessera.query(f, expr, result=result)
                if result == "coords":
                    np.testing.assert_array_equal(got, _coords_of(idx, shape, want), err_msg=where)
                elif result == "mask":
                    np.testing.assert_array_equal(got, want, err_msg=where)
                elif result == "positions":
                    np.testing.assert_array_equal(got, np.flatnonzero(want).astype(np.uint64), err_msg=where)
                else:
                    np.testing.assert_array_equal(got, sub[want], err_msg=where)
        f.close()


def test_expressions_over_several_datasets(tessera_env, tmp_path):
    rng = np.random.default_rng(5)
    path = tmp_path / "climate.h5"
    with h5py.File(path, "w") as f:
        g = f.create_group("run1")
        T = g.create_dataset("temperature", data=(250 + rng.integers(0, 80, (64, 90)) / 2).astype("f4"),
                             chunks=(16, 45))
        P = g.create_dataset("pressure", data=rng.integers(900, 1100, (64, 90)).astype("i2"), chunks=(32, 90))
        V = f.create_dataset("vapor", data=rng.random(64 * 90), chunks=(1000,))
        tessera.index(T)
        tessera.index(V)
        t, p, v = T[()], P[()], V[()]
        cases = {
            "run1/temperature > 270": t > 270,
            "/run1/temperature[0:32, :] >= 270.5 && run1/pressure[32:64, :] < 1000":
                (t[:32] >= 270.5) & (p[32:] < 1000),
            '!(re"temp" <= 280) || re"pres" == 950': ~(t <= 280) | (p == 950),
            "(run1/pressure != 1000 && vapor < 0.5) || run1/temperature == 265":
                ((p != 1000) & (v.reshape(64, 90) < 0.5)) | (t == 265),
            "vapor[0:2880] < 0.25 && run1/temperature[::2, :] > 260":
                (v[:2880] < 0.25) & (t[::2] > 260).reshape(-1),
            "270 < run1/temperature": t > 270,
        }
        for expr, want in cases.items():
            assert tessera.query(f, expr, result="count") == int(want.sum()), expr
            mask = tessera.query(f, expr, result="mask")
            np.testing.assert_array_equal(mask.reshape(-1), want.reshape(-1), err_msg=expr)
        # From a group: names are relative to it.
        got = tessera.query(f["run1"], "temperature[10:20, 5] > 280", result="coords")
        np.testing.assert_array_equal(got, np.argwhere(t[10:20, 5:6] > 280) + [10, 5])
        # The selection result reads the hits.
        space = tessera.query(f, "run1/temperature > 285", result="selection")
        n = space.get_select_npoints()
        out = np.empty((n,), dtype="f4")
        T.id.read(h5py.h5s.create_simple((n,)), space, out)
        np.testing.assert_array_equal(out, t[t > 285])
        np.testing.assert_array_equal(tessera.query(f, "run1/temperature > 285", result="values"), t[t > 285])


def test_index_survives_consolidation_and_index_on_write(tessera_env, tmp_path):
    path = tmp_path / "c.h5"
    # Eight fragments, indexed, then merged by `tessera consolidate`.
    with fragments_as_written(), h5py.File(path, "w") as f:
        d = f.create_dataset("d", shape=(8, 256, 256), chunks=(1, 256, 256), dtype="f4")
        for i in range(8):
            d[i] = np.linspace(0, 100, 256 * 256, dtype="f4").reshape(256, 256) + i
            f.flush()
        calls = []
        tessera.index(d, progress=lambda done, total: calls.append((done, total)))
        assert calls and calls[-1][0] == calls[-1][1] == 8 * 256 * 256
        info = tessera.index_info(d)
        assert info.fragments == info.indexed == 8, info
        assert info.index_bytes < info.data_bytes * 0.3, info
        want = int((d[()] > 50).sum())
    subprocess.run([tool_path(), "consolidate", str(path)], check=True, capture_output=True)
    with h5py.File(path, "r") as f:
        info = tessera.index_info(f["d"])
        assert info.fragments == 1 and info.indexed == 1, "the merged fragment got its index"
        assert tessera.query(f, "d > 50", result="count") == want
    # index_on_write: a process whose connector string asks for it builds at every flush.
    code = ("import h5py, numpy as np, tessera; f = h5py.File(%r, 'w'); "
            "d = f.create_dataset('d', shape=(4, 128, 128), chunks=(1, 128, 128), dtype='i4'); "
            "[d.__setitem__(i, np.full((128, 128), i, 'i4')) or f.flush() for i in range(4)]; "
            "i = tessera.index_info(d); print(i.fragments, i.indexed)" % str(tmp_path / "w.h5"))
    env = dict(os.environ, HDF5_VOL_CONNECTOR="tessera index_on_write=1 auto_consolidate=0")
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
    assert out.stdout.split() == ["4", "4"], out.stdout + out.stderr


def test_progress_can_stop_a_build(tessera_env, tmp_path):
    with h5py.File(tmp_path / "p.h5", "w") as f:
        d = f.create_dataset("d", data=np.arange(400000, dtype="f8"), chunks=(65536,))
        with pytest.raises(tessera.TesseraError, match="stopped by its progress callback"):
            tessera.index(d, progress=lambda done, total: True)
        assert tessera.index_info(d).indexed == 0


def test_errors_name_what_is_wrong(tessera_env, tmp_path):
    with h5py.File(tmp_path / "e.h5", "w") as f:
        f.create_dataset("T", data=np.arange(10.0))
        f.create_dataset("S", data=np.array([b"ab", b"cd"]))
        cases = {
            "T >": "at character 4: expected a number",
            "T[0:5) > 1": "at character 6: expected ',' or ']'",
            "T = 1": "'=' alone is not one",
            "(T > 1": "to close the '(' at character 1",
            "nope > 1": "at character 1: no dataset 'nope'",
            "S > 1": "need integer or floating-point elements",
            "T > 1 && T[0:5] < 2": "has 5 elements but T has 10",
            "re\"[\" > 1": "bad regular expression",
        }
        for expr, says in cases.items():
            with pytest.raises(tessera.TesseraError, match=None) as e:
                tessera.query(f, expr)
            assert says in str(e.value), (expr, str(e.value))
        with pytest.raises(ValueError):
            tessera.query(f, "T > 1", result="nonsense")
        with pytest.raises(tessera.TesseraError, match="integer or floating-point"):
            tessera.index(f["S"])


def test_native_files_are_refused(tessera_env, tmp_path):
    path = tmp_path / "native.h5"
    env = {k: v for k, v in os.environ.items() if k != "HDF5_VOL_CONNECTOR"}
    code = "import h5py, numpy as np; h5py.File(%r, 'w').create_dataset('d', data=np.arange(8))" % str(path)
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    with h5py.File(path, "r") as f:
        with pytest.raises(tessera.TesseraError, match="opened with the 'native' connector"):
            tessera.query(f, "d > 3")
        with pytest.raises(tessera.TesseraError, match="needs a dataset stored by tessera"):
            tessera.index(f["d"])


MPI_SCRIPT = r"""
import sys, h5py, numpy as np, tessera
from mpi4py import MPI
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
f = h5py.File(sys.argv[1], "w", driver="mpio", comm=comm)
d = f.create_dataset("d", shape=(size * 4, 300, 200), chunks=(1, 300, 200), dtype="f4")
for i in range(4):  # each rank writes its own frames: fragments of its own
    k = rank * 4 + i
    d[k] = (np.arange(300 * 200, dtype="f4").reshape(300, 200) % 997) + k
    f.flush()
tessera.index(d)  # collective: each rank builds its share
info = tessera.index_info(d)
assert info.indexed == info.fragments and info.fragments >= size * 4, info
data = d[()]
for expr, want in [("d > 500", data > 500), ("d[1:5, 100:, ::3] <= 20", data[1:5, 100:, ::3] <= 20)]:
    assert tessera.query(f, expr, result="count") == int(want.sum()), expr
f.close()
print("ok", rank, flush=True)
"""


def test_collective_index_under_mpi(tessera_env, tmp_path):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    script = tmp_path / "mpi_index.py"
    script.write_text(MPI_SCRIPT)
    r = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "2", sys.executable, str(script),
                        str(tmp_path / "m.h5")], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.count("ok") == 2, r.stdout + r.stderr
