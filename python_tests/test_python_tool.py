"""The tool's functions in the `tessera` Python package (python/tessera/_tool.py):
info, fragments, consolidate, vacuum, verify — on paths and on h5py objects.

Answers are compared with h5py's own view of the same data (through the connector) and
with a model of the writes; failures must be TesseraError carrying the engine's message.
"""
from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

import tessera
from conftest import fragments_as_written, native_env


def _write(path: Path, model: np.ndarray, flushes: int, rng) -> None:
    # A fragment per flush, for the consolidations below to merge.
    with fragments_as_written(), h5py.File(path, "w") as f:
        d = f.create_dataset("g/d", shape=model.shape, dtype=model.dtype, chunks=(32, 32), compression="gzip")
        d[...] = model
        f.flush()
        for _ in range(flushes):
            r, c = rng.integers(0, model.shape[0] - 4), rng.integers(0, model.shape[1] - 4)
            v = rng.integers(0, 100, size=(4, 4)).astype(model.dtype)
            d[r:r + 4, c:c + 4] = v
            model[r:r + 4, c:c + 4] = v
            f.flush()
        d.attrs["n"] = np.int32(flushes)
        f.create_dataset("v", data=np.array(["a", "bb"], dtype=object), dtype=h5py.string_dtype())
        f["s"] = h5py.SoftLink("/g/d")


def test_info_of_paths_and_h5py_objects_agrees_with_h5py(tessera_env, tmp_path):
    path = tmp_path / "c.h5"
    model = np.zeros((128, 96), dtype="<i4")
    _write(path, model, 3, np.random.default_rng(1))
    i = tessera.info(path)
    assert isinstance(i, tessera.ContainerInfo)
    assert [o.path for o in i.objects] == ["/", "/g", "/g/d", "/v"]
    assert i.links == (tessera.LinkInfo("/s", "soft", "/g/d"),)
    with h5py.File(path, "r") as f:
        d = f["g/d"]
        o = i["/g/d"]
        assert (o.shape, o.maxshape, o.chunks) == (d.shape, d.maxshape, d.chunks)
        assert o.datatype == "int32" and o.filters == ("deflate(4)",) and o.layout == "chunked"
        assert o.logical_bytes == d.size * d.dtype.itemsize and o.stored_bytes == d.id.get_storage_size()
        assert [a.name for a in o.attributes] == list(d.attrs) and o.attributes[0].shape == ()
        assert o.array.fragments == 4 and o.array.tile_extents == d.chunks and o.array.tile_filters == "zlib(4)"
        assert isinstance(o.array.first_time, dt.datetime) and o.array.first_time <= o.array.last_time
        assert i["/v"].logical_bytes is None and i["/v"].array.variable_length
        # The same through h5py objects: a file, a group, a dataset.
        assert tessera.info(f) == i
        assert [x.path for x in tessera.info(f["g"]).objects] == ["/g", "/g/d"]
        assert [x.path for x in tessera.info(d).objects] == ["/g/d"]
        assert tessera.info(path, "s")["/g/d"] == o
    assert i.datasets.keys() == {"/g/d", "/v"}
    assert i.totals["datasets"] == 2 and i.totals["fragments"] == 5


def test_fragments_and_consolidate_follow_a_model(tessera_env, tmp_path):
    path = tmp_path / "c.h5"
    rng = np.random.default_rng(2)
    model = rng.integers(0, 1000, size=(128, 96)).astype("<i4")
    t0 = time.time_ns()
    _write(path, model, 5, rng)
    with h5py.File(path, "r") as f:
        frs = tessera.fragments(f["g/d"])
        assert len(frs) == 6 and frs == tessera.fragments(str(path), "/g/d")
        assert [x.id for x in frs] == sorted(x.id for x in frs)
        assert frs[0].low == (0, 0) and frs[0].high == (127, 95) and frs[0].cells == model.size
        assert all(x.cells == 16 and x.kind in ("dense", "sparse") for x in frs[1:])
        assert all(t0 <= x.time_ns <= time.time_ns() for x in frs)
        assert sum(x.bytes for x in frs) == f["g/d"].id.get_storage_size()
        # Read-only h5py files may stay open: readers need no lock.
        report = tessera.consolidate(f["g/d"])
        assert "/g/d: 6 fragment(s) -> 1" in report
    merged = tessera.fragments(path, "g/d")
    assert len(merged) == 1 and set(merged[0].replaces) == {x.id for x in frs} and merged[0].generation == 1
    kept = [x for x in tessera.fragments(path, "g/d", include_replaced=True) if x.replaced]
    assert {x.id for x in kept} == {x.id for x in frs}
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["g/d"][...], model)
    assert "removed 6 replaced fragment(s)" in tessera.vacuum(path)
    assert tessera.fragments(path, "g/d", include_replaced=True) == merged
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["g/d"][...], model)


def test_size_tiered_from_python(tessera_env, tmp_path):
    path = tmp_path / "c.h5"
    rng = np.random.default_rng(3)
    model = np.zeros((256, 96), dtype="<i4")
    _write(path, model, 5, rng)
    tessera.consolidate(path, size_tiered=True, min_run=3, ratio=8)
    frs = tessera.fragments(path, "/g/d")
    assert len(frs) == 2 and len(frs[1].replaces) == 5
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["g/d"][...], model)


def test_verify_reports_damage_and_the_open_writer_is_flushed(tessera_env, tmp_path):
    path = tmp_path / "c.h5"
    model = np.zeros((256, 256), dtype="<f8")
    with h5py.File(path, "w") as f:
        d = f.create_dataset("d", shape=model.shape, dtype=model.dtype, chunks=(64, 64))
        d[...] = 1.5  # a file fragment, unflushed
        r = tessera.verify(f)  # flushes the writer first
        assert r and r.ok and r.checked["fragments"] == 1 and r.checked["bytes"] > model.nbytes
        assert len(tessera.fragments(d)) == 1
        with pytest.raises(tessera.TesseraError, match="open for writing in this process"):
            tessera.consolidate(f)
        with pytest.raises(tessera.TesseraError, match="open for writing in this process"):
            tessera.vacuum(d)
    frag = next(p for p in path.rglob("*.tfr"))
    b = bytearray(frag.read_bytes())
    b[len(b) // 2] ^= 0xFF
    frag.write_bytes(bytes(b))
    r = tessera.verify(path)
    assert not r and len(r.problems) == 1 and str(frag) in r.problems[0] and "(dataset /d)" in r.problems[0]


def test_errors_carry_the_engines_message(tessera_env, tmp_path):
    with pytest.raises(tessera.TesseraError, match="no such file"):
        tessera.info(tmp_path / "none.h5")
    path = tmp_path / "c.h5"
    with h5py.File(path, "w") as f:
        f["d"] = np.arange(5)
    with pytest.raises(tessera.TesseraError, match="no object 'x' in group '/'"):
        tessera.fragments(path, "/x")
    with pytest.raises(tessera.TesseraError, match="which dataset"):
        tessera.fragments(path)
    with pytest.raises(TypeError):
        tessera.info(42)
    f = h5py.File(path, "r")
    d = f["d"]
    f.close()
    with pytest.raises(tessera.TesseraError, match="closed"):
        tessera.fragments(d)
    # A native HDF5 file (opened natively: compat.md) is not a container.
    native = tmp_path / "n.h5"
    env = native_env()
    import subprocess, sys
    subprocess.run([sys.executable, "-c", f"import h5py; h5py.File({str(native)!r}, 'w')"], env=env, check=True)
    with pytest.raises(tessera.TesseraError, match="not a tessera container"):
        tessera.verify(native)
    assert tessera.tool_path().endswith("tessera")


def test_export_and_import_from_python(tessera_env, tmp_path):
    path = tmp_path / "c.h5"
    model = np.zeros((128, 96), dtype="<i4")
    _write(path, model, 2, np.random.default_rng(4))
    out = tmp_path / "n.h5"
    with h5py.File(path, "r") as f:
        assert "exported" in tessera.export(f, out)
    env = native_env()
    import subprocess, sys
    check = ("import h5py, numpy as np, sys; f = h5py.File(sys.argv[1], 'r'); "
             "print(f['g/d'].shape, int(f['g/d'][...].sum()), f['g/d'].attrs['n'], f.get('s', getlink=True).path)")
    native = subprocess.run([sys.executable, "-c", check, str(out)], env=env, capture_output=True, text=True, check=True)
    assert native.stdout.split() == ["(128,", "96)", str(int(model.sum())), "2", "/g/d"]
    with pytest.raises(tessera.TesseraError, match="exists"):
        tessera.export(path, out)
    tessera.export(path, out, force=True)
    again = tmp_path / "again.h5"
    assert "imported" in tessera.import_(out, again)
    with h5py.File(again, "r") as f:
        np.testing.assert_array_equal(f["g/d"][...], model)
    with pytest.raises(tessera.TesseraError, match="is a tessera container"):
        tessera.import_(again, tmp_path / "x.h5")
