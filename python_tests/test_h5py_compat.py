"""h5py's v1-API operations on tessera, through the compat preload library.

h5py is compiled against HDF5's 1.10 API: listing a group, keys(), visit(), `'a/b' in f`,
links.get_info, Group.get(getclass=True) and object references call H5Literate1,
H5Lget_info1, H5Oget_info*1, H5Ovisit1, H5Oopen_by_addr, H5Rcreate, H5Rdereference2 ...
which HDF5 1.14 refuses for non-native connectors.  libtessera_compat.so (vol/compat,
docs/compat.md), preloaded by scripts/tessera-env, serves them for tessera files.

Each test runs one scenario on a tessera file in this process (environment from
scripts/tessera-env: HDF5_VOL_CONNECTOR=tessera and LD_PRELOAD) and the same scenario in
child processes on native HDF5 — once with the library still preloaded (it must not
change native behaviour), once without it — and compares the results.

The module doubles as the child program:  python test_h5py_compat.py SCENARIO DIR
prints the scenario's result as JSON.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

import h5py

from conftest import without_compat

COMPAT_LIB = "libtessera_compat.so"


# --------------------------------------------------------------------------- scenarios
def _build(path: Path) -> None:
    with h5py.File(path, "w") as f:
        a = f.create_group("a")
        b = a.create_group("b")
        b.create_dataset("d1", data=np.arange(6, dtype="i4"))
        a["hard"] = b["d1"]                        # second hard link to one object
        a["soft"] = h5py.SoftLink("/a/b")
        a["dangling"] = h5py.SoftLink("/nowhere")
        f.create_dataset("top", data=np.linspace(0.0, 1.0, 5))
        z = f.create_group("z")
        z.attrs["note"] = 7
        z.attrs["title"] = "zed"
        f.create_group("x/y/w")                    # intermediate groups


def scenario_navigation(d: Path) -> dict:
    """Listing, membership, visiting, get(getclass/getlink), link and object info."""
    path = d / "nav.h5"
    _build(path)
    out: dict = {}
    for mode in ("r", "r+"):
        with h5py.File(path, mode) as f:
            r: dict = {}
            r["list_f"] = list(f)
            r["keys_f"] = list(f.keys())
            r["list_a"] = list(f["a"])
            r["keys_a"] = list(f["a"].keys())
            r["len_a"] = len(f["a"])
            r["items_a"] = [(k, type(v).__name__) for k, v in f["a"].items() if k != "dangling"]
            r["values_top"] = [type(v).__name__ for v in f.values()]
            r["in"] = {p: (p in f) for p in ("a", "a/b", "a/b/d1", "/a/b/d1", "a/hard",
                                              "a/soft", "a/soft/d1", "a/dangling", "a/nope",
                                              "nope/x", "x/y/w", "z/note")}
            r["in_group"] = {p: (p in f["a"]) for p in ("b", "b/d1", "soft/d1", "zz")}
            names: list = []
            f.visit(names.append)
            r["visit"] = names
            items: list = []
            f.visititems(lambda n, o: items.append((n, type(o).__name__)))
            r["visititems"] = items
            sub: list = []
            f["a"].visit(sub.append)
            r["visit_a"] = sub
            stop = f.visit(lambda n: n if n.endswith("d1") else None)
            r["visit_stop"] = stop
            try:
                links: list = []
                f.visit_links(links.append)                # h5py >= 3.11
                r["visit_links"] = links
            except AttributeError:
                r["visit_links"] = None
            a = f["a"]
            r["getclass"] = {n: getattr(a.get(n, getclass=True), "__name__", None)
                             for n in ("b", "hard", "soft", "missing")}
            r["getlink_class"] = {n: getattr(a.get(n, getclass=True, getlink=True), "__name__", None)
                                  for n in ("b", "soft", "dangling")}
            sl = a.get("soft", getlink=True)
            r["softlink"] = [type(sl).__name__, sl.path]
            r["hardlink"] = type(a.get("hard", getlink=True)).__name__
            r["get_missing"] = a.get("missing") is None
            gl = a.id.links
            r["links_get_info"] = {n: int(gl.get_info(n.encode()).type)
                                   for n in ("b", "hard", "soft", "dangling")}
            r["link_val"] = gl.get_val(b"soft").decode()
            info = h5py.h5o.get_info(f["a/b/d1"].id)
            r["oinfo_d1"] = [int(info.type), int(info.rc), int(info.num_attrs)]
            zi = h5py.h5o.get_info(f.id, b"z")
            r["oinfo_z"] = [int(zi.type), int(zi.rc), int(zi.num_attrs)]
            r["same_object"] = (h5py.h5o.get_info(f.id, b"a/hard").addr
                                == h5py.h5o.get_info(f.id, b"a/b/d1").addr)
            r["distinct_objects"] = (h5py.h5o.get_info(f.id, b"a/b").addr
                                     != h5py.h5o.get_info(f.id, b"a/b/d1").addr)
            r["z_attrs"] = sorted(f["z"].attrs.keys())
            r["d1"] = f["a/soft/d1"][()].tolist()
            if mode == "r+":
                f["a"].create_group("c")
                del f["top"]
                r["after_edit"] = [list(f), list(f["a"])]
            out[mode] = r
    return out


def scenario_track_order(d: Path) -> dict:
    """Creation-order iteration (H5Literate1 with H5_INDEX_CRT_ORDER)."""
    path = d / "order.h5"
    names = ["zeta", "alpha", "mid", "beta"]
    with h5py.File(path, "w", track_order=True) as f:
        g = f.create_group("g", track_order=True)
        for n in names:
            g.create_group(n)
            f.create_dataset(n, data=[1])
    with h5py.File(path, "r") as f:
        g = f["g"]
        return {"root": list(f), "g": list(g), "g_reversed": list(reversed(g)),
                "visit": (lambda acc: (g.visit(acc.append), acc)[1])([])}


def scenario_references(d: Path) -> dict:
    """Old-style object references: obj.ref, f[ref], stored in a dataset and read back."""
    path = d / "refs.h5"
    _build(path)
    out: dict = {}
    with h5py.File(path, "r+") as f:
        dref = f["a/b/d1"].ref
        gref = f["z"].ref
        out["bool"] = [bool(dref), bool(h5py.Reference())]
        out["deref_dataset"] = [type(f[dref]).__name__, f[dref][()].tolist(),
                                f[dref].name in ("/a/b/d1", "/a/hard")]
        out["deref_group"] = [type(f[gref]).__name__, f[gref].name, int(f[gref].attrs["note"])]
        href = f["a/hard"].ref                   # the same object through its other link
        out["same_ref_two_paths"] = [f[href] == f[dref],
                                     h5py.h5o.get_info(f[href].id).addr
                                     == h5py.h5o.get_info(f[dref].id).addr]
        out["obj_type"] = [int(h5py.h5r.get_obj_type(r, f.id)) for r in (dref, gref)]
        out["ref_name"] = h5py.h5r.get_name(gref, f.id).decode()
        out["deref_from_group"] = list(f["a"][dref].shape)
        f.create_dataset("refs", data=[dref, gref], dtype=h5py.ref_dtype)
        f["z"].attrs["points_to"] = dref
    with h5py.File(path, "r") as f:
        stored = f["refs"][()]
        out["stored"] = [type(f[r]).__name__ for r in stored]
        out["stored_data"] = f[stored[0]][()].tolist()
        out["attr_ref"] = f[f["z"].attrs["points_to"]][()].tolist()
    return out


SCENARIOS = {
    "navigation": scenario_navigation,
    "track_order": scenario_track_order,
    "references": scenario_references,
}


# --------------------------------------------------------------------------- helpers
def _normalise(value):
    return json.loads(json.dumps(value))




def _native_env(preload: bool) -> dict:
    env = dict(os.environ)
    env.pop("HDF5_VOL_CONNECTOR", None)
    if not preload:
        without_compat(env)
    return env


def _run_child(scenario: str, d: Path, env: dict) -> dict:
    d.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), scenario, str(d)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"child ({scenario}) failed:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _compare(scenario: str, tmp_path: Path) -> None:
    tess_dir = tmp_path / "tessera"
    tess_dir.mkdir()
    tessera = _normalise(SCENARIOS[scenario](tess_dir))
    native_preloaded = _run_child(scenario, tmp_path / "native_preloaded", _native_env(True))
    native_plain = _run_child(scenario, tmp_path / "native_plain", _native_env(False))
    assert native_preloaded == native_plain, (
        "the preloaded library changed native behaviour:\n"
        f"with: {native_preloaded}\nwithout: {native_plain}")
    diffs = _diff(native_plain, tessera)
    assert not diffs, "tessera differs from native:\n" + "\n".join(diffs)


def _diff(native, tessera, where="") -> list:
    if isinstance(native, dict) and isinstance(tessera, dict):
        out = []
        for k in sorted(set(native) | set(tessera)):
            out += _diff(native.get(k, "<missing>"), tessera.get(k, "<missing>"), f"{where}/{k}")
        return out
    return [] if native == tessera else [f"  {where}: native={native!r} tessera={tessera!r}"]


# --------------------------------------------------------------------------- tests
def test_compat_library_is_preloaded(tessera_env):
    maps = Path("/proc/self/maps").read_text()
    assert COMPAT_LIB in maps, (
        f"{COMPAT_LIB} is not preloaded (LD_PRELOAD={os.environ.get('LD_PRELOAD')!r}); "
        "build it (scripts/test) and run under scripts/tessera-env")


def test_files_here_are_tessera(tessera_env, hdf5, tmp_path):
    path = tmp_path / "probe.h5"
    with h5py.File(path, "w") as f:
        fapl = f.id.get_access_plist()
        assert hdf5.connector_name(fapl.id) == "tessera"
    assert path.is_dir(), "a tessera container is a directory"


def test_navigation_matches_native(tessera_env, tmp_path):
    _compare("navigation", tmp_path)


def test_track_order_matches_native(tessera_env, tmp_path):
    _compare("track_order", tmp_path)


def test_object_references_match_native(tessera_env, tmp_path):
    _compare("references", tmp_path)


def test_without_the_library_tessera_fails(tessera_env, tmp_path):
    """The same scenario without LD_PRELOAD fails on tessera (HDF5 refuses the v1 calls):
    the passing runs above are the library's work, not an accident of the environment."""
    env = without_compat(dict(os.environ))
    d = tmp_path / "no_preload"
    d.mkdir()
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "navigation", str(d)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0, "tessera navigation worked without the compat library?"
    assert "only meant to be used with the native VOL connector" in proc.stderr, proc.stderr


REGION_SCENARIO = textwrap.dedent('''
    import pickle, sys
    import h5py, numpy as np
    path, out_path = sys.argv[1], sys.argv[2]
    with h5py.File(path, "w") as f:
        d = f.create_dataset("d", data=np.arange(60).reshape(6, 10))
        refs = [d.regionref[2:5, 1:7], d.regionref[0, ::3], d.regionref[...]]
        f.create_dataset("refs", data=refs, dtype=h5py.regionref_dtype)
        f.attrs["one"] = d.regionref[4:, 8:]
        g = f.create_group("g")
        f.create_dataset("objrefs", data=[d.ref, g.ref, f.ref], dtype=h5py.ref_dtype)
    out = {}
    with h5py.File(path, "r") as f:
        d = f["d"]
        for i, r in enumerate(f["refs"][...]):
            out[f"ref{i}"] = (d[r], f[r].name, d.regionref.shape(r), d.regionref.selection(r))
        r = f.attrs["one"]
        out["attr"] = (d[r], d.regionref.shape(r))
        out["objrefs"] = [f[r].name for r in f["objrefs"][...]]
    with open(out_path, "wb") as fh:
        pickle.dump(out, fh)
''')


def test_region_references_same_as_native(tessera_env, tmp_path):
    """h5py's region references (old-style hdset_reg_ref_t through the compat library) and
    object references, stored in a dataset and an attribute, read back after reopening."""
    from test_h5py_datasets import assert_same, run_scenario

    native = run_scenario(tmp_path, True, REGION_SCENARIO)
    tess = run_scenario(tmp_path, False, REGION_SCENARIO)
    assert_same(native, tess)
    assert native["ref0"][0].shape == (3, 6) and native["objrefs"] == ["/d", "/g", "/"]


if __name__ == "__main__":
    _name, _dir = sys.argv[1], Path(sys.argv[2])
    print(json.dumps(SCENARIOS[_name](_dir)))


NATIVE_ENV_STRIP = ("HDF5_VOL_CONNECTOR", "LD_PRELOAD", "HDF5_PLUGIN_PATH")


def test_native_files_open_natively(tessera_env, tmp_path):
    """With tessera the default, an existing native HDF5 file opens with the native
    connector (the compat library's H5Fopen): a program's old inputs stay readable and
    writable in place, while the files it creates are tessera containers."""
    old = tmp_path / "old.h5"
    env = {k: v for k, v in os.environ.items() if k not in NATIVE_ENV_STRIP}
    subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import sys, h5py, numpy as np
        with h5py.File(sys.argv[1], "w", userblock_size=512) as f:
            f.create_dataset("a/x", data=np.arange(12, dtype=">i2").reshape(3, 4))
            f["a"].attrs["unit"] = "m"
        """), str(old)], env=env, check=True)
    with h5py.File(old, "r") as f:
        assert f["a/x"][()].tolist() == np.arange(12).reshape(3, 4).tolist()
        assert f["a"].attrs["unit"] == "m"
        assert sorted(f["a"]) == ["x"]
        hdf5 = __import__("conftest").HDF5()
        assert hdf5.connector_name(f.id.get_access_plist().id) == "native"
    with h5py.File(old, "a") as f:                 # written in place, natively
        f["a/x"][0, 0] = 99
        f.create_dataset("y", data=[1.5])
    assert old.is_file()
    r = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import sys, h5py
        with h5py.File(sys.argv[1], "r") as f:
            print(int(f["a/x"][0, 0]), float(f["y"][0]))
        """), str(old)], env=env, capture_output=True, text=True, check=True)
    assert r.stdout.split() == ["99", "1.5"]
    new = tmp_path / "new.h5"
    with h5py.File(new, "w") as f:
        f["z"] = [1]
    assert new.is_dir()                             # new files: tessera containers
    with h5py.File(new, "r") as f:                  # and a container still opens with tessera
        assert f["z"][0] == 1
