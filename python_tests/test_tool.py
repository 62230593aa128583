"""The `tessera` command line tool (tools/tessera, docs/tool.md), run as users run it.

Every answer of the tool is compared with something it did not compute itself:
- `info`: the same objects written to a native HDF5 file (in a child process without the
  connector) and read back natively by h5py — shapes, maximum shapes, chunks, types,
  filters, attributes, links;
- `fragments`: a model of the flushes the test made (one fragment per flush, its domain
  the bounding box of the cells written, its kind what was written), the files on disk;
- `consolidate` / `vacuum`: the data read back through h5py against a numpy model, the
  fragment files on disk, and a reader in another process that reads the whole time;
- `verify`: containers damaged on purpose (a flipped byte, a truncated or deleted
  fragment file, a damaged catalog record, a deleted heap file) must be reported, naming
  the damaged file and the dataset, with exit status 1; intact ones give 0.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

import tessera
from conftest import fragments_as_written, tool_path

OK, DAMAGED, FAILED, USAGE = 0, 1, 2, 64


def run(*args, check=None):
    p = subprocess.run([tool_path(), *map(str, args)], capture_output=True, text=True, timeout=300)
    if check is not None:
        assert p.returncode == check, f"tessera {' '.join(map(str, args))}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


def run_json(*args):
    p = run(*args, "--json", check=OK)
    return json.loads(p.stdout)


def native_env():
    env = dict(os.environ)
    env.pop("HDF5_VOL_CONNECTOR", None)
    return env


# One script writes the same objects natively (no connector in its environment) and as
# a container (under the connector); both are then read.
BUILD = textwrap.dedent(r"""
    import sys, h5py, numpy as np
    path = sys.argv[1]
    with h5py.File(path, "w") as f:
        g = f.create_group("grp")
        d = g.create_dataset("data", shape=(300, 200), maxshape=(None, 200), chunks=(30, 40), dtype="<f8",
                             compression="gzip", compression_opts=6, shuffle=True)
        d[...] = np.arange(60000, dtype="f8").reshape(300, 200)
        d.attrs["units"] = "m"
        d.attrs["scale"] = np.arange(3, dtype="<i2")
        f.create_dataset("small", data=np.arange(10, dtype="<i4"))
        f.create_dataset("u8", shape=(1000,), chunks=(100,), dtype="<u8", compression="lzf" if False else None)
        f.create_dataset("strs", data=np.array(["a", "bcd"], dtype=object), dtype=h5py.string_dtype())
        f.create_dataset("fixed", data=np.array([b"ab", b"cd"], dtype="S2"))
        f.create_dataset("be", data=np.arange(4, dtype=">i2"))
        f.create_dataset("empty", shape=(0, 5), maxshape=(None, 5), chunks=(4, 5), dtype="f4")
        f.create_dataset("scalar", data=np.float32(1.5))
        f["ctype"] = np.dtype([("a", "<i4"), ("b", "<f8")])
        f["grp/alias"] = d
        f["soft"] = h5py.SoftLink("/grp/data")
        f["ext"] = h5py.ExternalLink("other.h5", "/x")
        f.attrs["title"] = "run 7"
""")


def type_text(dt: np.dtype) -> str:
    """The tool's names of datatypes, computed from numpy's view of the native file."""
    vlen = h5py.check_string_dtype(dt)
    if vlen is not None and vlen.length is None:
        return "vlen string (%s)" % ("UTF-8" if vlen.encoding == "utf-8" else "ASCII")
    if dt.kind == "S":
        return "string[%d] (ASCII)" % dt.itemsize
    if dt.names:
        return "compound {" + ", ".join(f"{n}: {type_text(dt.fields[n][0])}" for n in dt.names) + "}"
    be = " (BE)" if dt.byteorder == ">" else ""
    kind = {"i": "int", "u": "uint", "f": "float"}[dt.kind]
    return f"{kind}{dt.itemsize * 8}{be}"


@pytest.fixture(params=["directory", "one_file"])
def pair(tessera_env, tmp_path, request):
    """(container, native file) holding the same objects; the container in either form
    (docs/format.md: a directory, or one regular file with the setting one_file=1)."""
    script = tmp_path / "build.py"
    script.write_text(BUILD)
    native = tmp_path / "native.h5"
    subprocess.run([sys.executable, str(script), str(native)], env=native_env(), check=True)
    container = tmp_path / "c.h5"
    one_file = request.param == "one_file"
    subprocess.run([sys.executable, str(script), str(container)], check=True,
                   env=dict(os.environ, TESSERA_ONE_FILE="1" if one_file else "0"))
    assert (container.is_file() if one_file else container.is_dir()) and native.is_file()
    return container, native


def test_info_matches_the_same_objects_read_natively(pair):
    container, native = pair
    info = run_json("info", container)
    objs = {o["path"]: o for o in info["objects"]}
    with h5py.File(native, "r") as f:
        seen = {}
        f.visititems(lambda name, o: seen.setdefault("/" + name, o) and None)
        # Hard-linked objects appear once, under the first path H5Ovisit finds (depth
        # first, names in order), their other links as aliases.
        assert set(objs) == {"/"} | set(seen)
        assert objs["/grp/alias"]["aliases"] == ["/grp/data"]
        for path, o in seen.items():
            got = objs[path]
            if isinstance(o, h5py.Group):
                assert got["kind"] == "group"
            elif isinstance(o, h5py.Datatype):
                assert got["kind"] == "datatype"
                assert got["datatype"] == type_text(o.dtype)
            else:
                assert got["kind"] == "dataset", path
                assert got["datatype"] == type_text(o.dtype), path
                if o.shape == ():
                    assert got["space"] == "scalar" and got["shape"] == []
                else:
                    assert tuple(got["shape"]) == o.shape, path
                    assert tuple(got["maxshape"]) == o.maxshape, path
                assert (tuple(got["chunk"]) if got["chunk"] else None) == o.chunks, path
                filters = []
                if o.shuffle:
                    filters.append("shuffle")
                if o.compression == "gzip":
                    filters.append("deflate(%d)" % o.compression_opts)
                assert got["filters"] == filters, path
                if h5py.check_string_dtype(o.dtype) is None or h5py.check_string_dtype(o.dtype).length:
                    assert got["logical_bytes"] == o.size * o.dtype.itemsize, path
            want_attrs = sorted(o.attrs)
            assert [a["name"] for a in got["attributes"]] == want_attrs, path
            for a in got["attributes"]:
                v = o.attrs.get_id(a["name"])
                assert tuple(a["shape"]) == v.shape, (path, a)
                assert a["datatype"] == type_text(v.dtype), (path, a)
        assert [a["name"] for a in objs["/"]["attributes"]] == sorted(f.attrs)
        links = {l["path"]: l for l in info["links"]}
        assert links["/soft"] == {"path": "/soft", "kind": "soft", "target": f.get("soft", getlink=True).path}
        el = f.get("ext", getlink=True)
        assert links["/ext"] == {"path": "/ext", "kind": "external", "target": f"{el.filename}:{el.path}"}
    t = info["totals"]
    assert (t["groups"], t["datasets"], t["datatypes"], t["soft_links"], t["external_links"]) == (2, 8, 1, 1, 1)
    # Bytes stored: what the files and records hold, as HDF5's storage size reports it.
    with h5py.File(container, "r") as f:
        assert objs["/grp/alias"]["stored_bytes"] == f["grp/data"].id.get_storage_size()
        assert objs["/grp/alias"]["stored_bytes"] < objs["/grp/alias"]["logical_bytes"]  # deflate
    # One object, and a path through a soft link.
    one = run_json("info", container, "/soft")
    assert [o["path"] for o in one["objects"]] == ["/grp/alias"]
    grp = run_json("info", container, "grp")
    assert [o["path"] for o in grp["objects"]] == ["/grp", "/grp/alias"]
    text = run("info", container, check=OK).stdout
    assert "/grp/alias  dataset" in text and "also at    /grp/data" in text
    assert "300 x 200 (max unlimited x 200)" in text


def test_info_and_fragments_refuse_bad_input(pair, tmp_path):
    container, native = pair
    p = run("info", native, check=FAILED)
    assert "not a tessera container" in p.stderr and "native HDF5" in p.stderr
    p = run("info", tmp_path / "nothing", check=FAILED)
    assert "no such file" in p.stderr
    p = run("info", container, "/grp/nope", check=FAILED)
    assert "no object 'nope' in group '/grp'" in p.stderr
    p = run("fragments", container, "/grp", check=FAILED)
    assert "not a dataset" in p.stderr
    p = run("info", container, "/ext/x", check=FAILED)
    assert "external link" in p.stderr
    run(check=USAGE)
    run("nosuchcommand", check=USAGE)
    run("fragments", container, check=USAGE)  # DATASET missing
    run("consolidate", container, "--min-run", "1", "--size-tiered", check=USAGE)
    assert run("--help", check=OK).stdout.count("consolidate") >= 1


def _frag_files(container: Path):
    return sorted(p for p in container.rglob("*.tfr") if not p.name.startswith("."))


def test_fragments_follow_a_model_of_the_flushes(tessera_env, tmp_path):
    path = tmp_path / "c.h5"
    flushes = []  # (low corner, high corner, cells, kind) per flush, in order
    t0 = time.time_ns()
    with h5py.File(path, "w") as f:
        d = f.create_dataset("d", shape=(400, 300), chunks=(100, 100), dtype="<f8", fillvalue=-1)
        d[0:200, 0:300] = 1.0  # whole tiles: one dense fragment, a file (480 KB)
        f.flush()
        flushes.append(([0, 0], [199, 299], 200 * 300, "dense"))
        d[250, 10] = 2.0  # scattered cells: one sparse fragment
        d[390, 290] = 3.0
        d[300, 5] = 4.0
        f.flush()
        flushes.append(([250, 5], [390, 290], 3, "sparse"))
        tessera.erase(d, (slice(0, 10), slice(0, 10)))
        f.flush()
        flushes.append(([0, 0], [9, 9], 100, None))
    t1 = time.time_ns()
    info = run_json("fragments", path, "/d")
    frags = info["fragments"]
    assert len(frags) == len(flushes)
    assert [f["id"] for f in frags] == sorted(f["id"] for f in frags)
    for got, (lo, hi, cells, kind) in zip(frags, flushes):
        assert got["domain"] == {"low": lo, "high": hi}
        assert got["cells"] == cells
        if kind:
            assert got["kind"] == kind
        assert t0 <= got["time_ns"] <= t1
        assert not got["replaced"] and got["replaces"] == []
    assert "erase" in frags[2]["kind"] or "fill" in frags[2]["kind"]
    # Bytes: each file's size on disk, each inline record's bytes in the catalog.
    files = {p.stem: p.stat().st_size for p in _frag_files(path)}
    for got in frags:
        if got["inline"]:
            assert got["id"] not in files
        else:
            assert files[got["id"]] == got["bytes"]
    with h5py.File(path, "r") as f:
        assert sum(g["bytes"] for g in frags) == f["d"].id.get_storage_size()
    table = run("fragments", path, "d", check=OK).stdout.splitlines()
    assert len(table) == 1 + len(flushes) + 1 and table[-1].startswith("3 fragment(s)")


def _write_random(d, model, rng, n, f):
    for _ in range(n):
        r0, c0 = rng.integers(0, model.shape[0] - 8), rng.integers(0, model.shape[1] - 8)
        h, w = rng.integers(1, 8, size=2)
        v = rng.integers(0, 1 << 30, size=(h, w)).astype(model.dtype)
        d[r0:r0 + h, c0:c0 + w] = v
        model[r0:r0 + h, c0:c0 + w] = v
        f.flush()


def test_consolidate_and_vacuum_keep_the_data(tessera_env, tmp_path):
    rng = np.random.default_rng(18)
    path = tmp_path / "c.h5"
    model = np.zeros((512, 256), dtype="<i8")
    with fragments_as_written(), h5py.File(path, "w") as f:  # the 13 fragments counted below
        d = f.create_dataset("d", shape=model.shape, dtype=model.dtype, chunks=(64, 64))
        d[...] = model  # whole: a file fragment
        f.flush()
        _write_random(d, model, rng, 12, f)
        f.create_dataset("e", shape=(100,), chunks=(10,), dtype="i4")
        f["e"][:] = 7
    before = run_json("fragments", path, "d")["fragments"]
    assert len(before) == 13
    p = run("consolidate", path, "d", check=OK)
    assert "/d: 13 fragment(s) -> 1" in p.stdout and "tessera vacuum" in p.stdout
    frags = run_json("fragments", path, "d")["fragments"]
    assert len(frags) == 1 and sorted(frags[0]["replaces"]) == sorted(f["id"] for f in before)
    everything = run_json("fragments", path, "d", "--all")["fragments"]
    assert sum(f["replaced"] for f in everything) == 13
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["d"][...], model)
    assert run_json("info", path, "d")["objects"][0]["array"]["fragments"]["replaced"] == 13
    files_before = set(_frag_files(path))
    p = run("vacuum", path, check=OK)
    assert "/d: removed 13 fragment(s)" in p.stdout
    files_after = set(_frag_files(path))
    assert files_after < files_before and len(files_after) == 1
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["d"][...], model)
        assert (f["e"][...] == 7).all()
    assert run_json("verify", path)["ok"]
    assert "removed 0 replaced fragment(s)" in run("vacuum", path, check=OK).stdout


def test_size_tiered_consolidation_merges_runs_of_similar_size(tessera_env, tmp_path):
    path = tmp_path / "c.h5"
    model = np.zeros((1024, 256), dtype="<f8")
    with fragments_as_written(), h5py.File(path, "w") as f:  # the runs the tool's policy merges
        d = f.create_dataset("d", shape=model.shape, dtype=model.dtype, chunks=(128, 256))
        d[...] = np.arange(model.size, dtype="f8").reshape(model.shape)  # one large fragment
        model[...] = d[...]
        f.flush()
        for i in range(6):  # six small ones of one size
            d[i * 10, :] = i
            model[i * 10, :] = i
            f.flush()
    assert len(run_json("fragments", path, "d")["fragments"]) == 7
    run("consolidate", path, "--size-tiered", check=OK)
    frags = run_json("fragments", path, "d")["fragments"]
    assert len(frags) == 2, frags  # the large one alone, the six small ones merged
    assert frags[0]["cells"] == model.size and len(frags[1]["replaces"]) == 6
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["d"][...], model)


READER = textwrap.dedent(r"""
    import sys, time, h5py, numpy as np
    path, want, stop = sys.argv[1], np.load(sys.argv[2]), sys.argv[3]
    import os
    n = 0
    while not os.path.exists(stop) or n == 0:
        with h5py.File(path, "r") as f:
            got = f["d"][...]
        if not np.array_equal(got, want):
            print("WRONG DATA after", n, "reads"); sys.exit(1)
        n += 1
    print("reads", n)
""")


def test_vacuum_while_another_process_reads(tessera_env, tmp_path):
    rng = np.random.default_rng(7)
    path = tmp_path / "c.h5"
    model = rng.integers(0, 1000, size=(256, 256)).astype("<i4")
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=model, chunks=(32, 32))
    np.save(tmp_path / "want.npy", model)
    (tmp_path / "reader.py").write_text(READER)
    stop = tmp_path / "stop"
    reader = subprocess.Popen([sys.executable, str(tmp_path / "reader.py"), str(path), str(tmp_path / "want.npy"),
                               str(stop)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for round_ in range(6):
            # New fragments holding the values the data already has, then merge and remove.
            with h5py.File(path, "a") as f:
                d = f["d"]
                for k in range(3):
                    r0, c0 = (round_ * 37 + k * 50) % 200, (k * 71 + round_ * 13) % 200
                    d[r0:r0 + 40, c0:c0 + 40] = model[r0:r0 + 40, c0:c0 + 40]
                    f.flush()
            run("consolidate", path, check=OK)
            run("vacuum", path, check=OK)
    finally:
        stop.write_text("")
        out, _ = reader.communicate(timeout=120)
    assert reader.returncode == 0, out
    assert out.startswith("reads")


def test_writers_lock_out_consolidate_and_vacuum(tessera_env, tmp_path):
    path = tmp_path / "c.h5"
    with h5py.File(path, "w") as f:
        f["d"] = np.arange(10)
    with h5py.File(path, "a"):
        for cmd in ("consolidate", "vacuum"):
            p = run(cmd, path, check=FAILED)
            assert "open for writing by another process" in p.stderr
        assert run("verify", path).returncode == OK  # readers need no lock
        assert run("info", path).returncode == OK


# --------------------------------------------------------------------------- verify
def _damaged_copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


@pytest.fixture
def written(tessera_env, tmp_path):
    path = tmp_path / "orig.h5"
    rng = np.random.default_rng(3)
    with h5py.File(path, "w") as f:
        big = f.create_dataset("big", shape=(256, 256), chunks=(64, 64), dtype="<f8", compression="gzip")
        big[...] = rng.random((256, 256))
        f.flush()
        big[10:20, 10:20] = 5.0
        f.create_dataset("small", data=np.arange(50, dtype="i2"), chunks=(10,))
        f.create_dataset("names", data=np.array(["x" * (i + 1) for i in range(300)], dtype=object),
                         dtype=h5py.string_dtype(), chunks=(100,))
        f["g/alias"] = big
    return path


def _verify(path):
    p = run("verify", path)
    return p.returncode, p.stdout, p.stderr


def test_verify_accepts_an_intact_container(written):
    rc, out, err = _verify(written)
    assert rc == OK, out + err
    assert "result     OK" in out
    j = run_json("verify", written)
    assert j["ok"] and j["problems"] == []
    assert j["checked"]["fragments"] >= 3 and j["checked"]["variable_length_values"] == 300


def _big_file(path: Path) -> Path:
    files = sorted(_frag_files(path), key=lambda p: p.stat().st_size)
    return files[-1]  # the whole write of /big


def test_verify_finds_a_flipped_byte(written, tmp_path):
    c = _damaged_copy(written, tmp_path / "flip.h5")
    f = _big_file(c)
    b = bytearray(f.read_bytes())
    b[len(b) // 3] ^= 0x5A
    f.write_bytes(bytes(b))
    rc, out, err = _verify(c)
    assert rc == DAMAGED, out + err
    assert str(f) in out and "checksum" in out and "(dataset /big)" in out
    # A read of that tile fails too, rather than returning other bytes.
    with h5py.File(c, "r") as h:
        with pytest.raises(OSError):
            h["big"][...]


def test_verify_finds_a_truncated_fragment(written, tmp_path):
    c = _damaged_copy(written, tmp_path / "trunc.h5")
    f = _big_file(c)
    with open(f, "r+b") as fh:
        fh.truncate(f.stat().st_size - 100)
    rc, out, err = _verify(c)
    assert rc == DAMAGED, out + err
    assert str(f) in out


def test_verify_finds_a_deleted_fragment(written, tmp_path):
    c = _damaged_copy(written, tmp_path / "del.h5")
    f = _big_file(c)
    f.unlink()
    rc, out, err = _verify(c)
    assert rc == DAMAGED, out + err
    assert "missing" in out and f.name in out and "(dataset /big)" in out
    j = json.loads(run("verify", c, "--json").stdout)
    assert not j["ok"] and any(f.name in p for p in j["problems"])
    # Readers get an error naming the file, never the fill value in its place.
    with h5py.File(c, "r") as h:
        with pytest.raises(Exception, match="missing"):
            h["big"][...]


def test_verify_finds_a_damaged_catalog_record(written, tmp_path):
    c = _damaged_copy(written, tmp_path / "cat.h5")
    log = c / "catalog.log"
    b = bytearray(log.read_bytes())
    b[40] ^= 0x01  # inside the first record: not a torn tail
    log.write_bytes(bytes(b))
    rc, out, err = _verify(c)
    assert rc == DAMAGED, out + err
    assert "catalog.log" in out and "corrupt record" in out


def test_verify_finds_a_deleted_heap(written, tmp_path):
    c = _damaged_copy(written, tmp_path / "heap.h5")
    heaps = list(c.rglob("*.thp"))
    assert heaps
    heaps[0].unlink()
    rc, out, err = _verify(c)
    assert rc == DAMAGED, out + err
    assert heaps[0].name in out and "(dataset /names)" in out


def test_verify_notes_an_interrupted_publish_without_calling_it_damage(written, tmp_path):
    c = _damaged_copy(written, tmp_path / "tmp.h5")
    frag_dir = _big_file(c).parent
    (frag_dir / ".0000000000000001-00000000-00000000-00000000.123.0.tmp").write_bytes(b"partial")
    rc, out, err = _verify(c)
    assert rc == OK, out + err
    assert "note" in out and "temporary file" in out


def test_verify_refuses_what_is_not_a_container(written, tmp_path):
    native = tmp_path / "n.h5"
    subprocess.run([sys.executable, "-c", f"import h5py; h5py.File({str(native)!r}, 'w')"], env=native_env(), check=True)
    rc, out, err = _verify(native)
    assert rc == FAILED and "native HDF5" in err
    rc, out, err = _verify(tmp_path / "none")
    assert rc == FAILED and "no such file" in err
    (tmp_path / "emptydir").mkdir()
    rc, out, err = _verify(tmp_path / "emptydir")
    assert rc == FAILED and "not a tessera container" in err
