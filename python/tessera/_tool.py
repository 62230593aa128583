"""The `tessera` command line tool from Python (docs/tool.md): inspect, check, consolidate
and vacuum containers.

    import h5py, tessera
    tessera.info("run.h5").datasets["/frames"].shape        # or info(h5py_file)
    tessera.fragments(f["frames"])                          # [Fragment(...), ...]
    report = tessera.verify("run.h5");  report.ok, report.problems
    tessera.consolidate("run.h5");  tessera.vacuum("run.h5")
    tessera.export("run.h5", "run-native.h5");  tessera.import_("native.h5", "run2.h5")

Each function takes a path (str or os.PathLike) or an h5py object (a file, group or
dataset of a container opened through the tessera connector).  An h5py file open for
writing in this process is flushed first, so what it wrote is seen; consolidate and
vacuum need the container's writer lock, which such a file holds: close it (or open it
read-only) first.  Failures raise TesseraError carrying the tool's message (the engine's,
naming the file or object).

The work is done by the `tessera` program of the same build (looked for in
$TESSERA_TOOL, then <dir>/../tools/tessera for each <dir> of $HDF5_PLUGIN_PATH, then
the PATH, then the repository's build/tools), one process per call: nothing of the
container is loaded into this process.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ._errors import TesseraError

__all__ = [
    "AttributeInfo", "ArrayInfo", "ObjectInfo", "LinkInfo", "ContainerInfo", "Fragment", "VerifyReport",
    "info", "fragments", "consolidate", "vacuum", "verify", "export", "import_", "tool_path",
]

PathOrObject = Union[str, "os.PathLike[str]", Any]  # Any: an h5py File, Group or Dataset


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class AttributeInfo:
    """An attribute: its name, datatype (as the tool names it, e.g. "float64",
    "vlen string (UTF-8)"), dataspace kind ("simple", "scalar", "null") and shape."""
    name: str
    datatype: str
    space: str
    shape: Tuple[int, ...]


@dataclass(frozen=True)
class ArrayInfo:
    """How tessera stores a dataset: tiling, order, tile filters, and its fragments."""
    compact: bool                 # one catalog record of all cells, no fragments
    variable_length: bool         # values in heap files (strings, vlen sequences)
    tile_extents: Tuple[int, ...]
    tile_order: str               # "row-major", "column-major", "z-order", "hilbert", "multimap" (docs/layouts.md)
    cell_order: str               # "row-major" / "column-major"
    tile_filters: str             # e.g. "shuffle, zlib(6)", "none"
    fragments: int
    inline_fragments: int         # fragments kept as catalog records
    fragment_bytes: int
    min_fragment_bytes: int
    max_fragment_bytes: int
    fragment_kinds: Dict[str, int]
    first_time: Optional[_dt.datetime]  # time range of the fragments' timestamps (UTC)
    last_time: Optional[_dt.datetime]
    replaced_fragments: int       # merged by a consolidation, kept until vacuum()
    replaced_bytes: int
    multimap_cube: Optional[Tuple[int, ...]] = None  # tile order "multimap": the basic cube, in tiles
    # Live fragments in another layout than the dataset's (written before a conversion,
    # consolidate(layout=...)), per layout name, e.g. {"row-major": 3}.
    fragment_layouts: Dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ObjectInfo:
    """A group, dataset or committed datatype.  Dataset fields are None for the others."""
    path: str
    kind: str                     # "group", "dataset", "datatype"
    aliases: Tuple[str, ...]      # its other hard-link paths
    attributes: Tuple[AttributeInfo, ...]
    datatype: Optional[str] = None
    space: Optional[str] = None
    shape: Optional[Tuple[int, ...]] = None
    maxshape: Optional[Tuple[Optional[int], ...]] = None  # None per unlimited dimension
    element_bytes: Optional[int] = None
    layout: Optional[str] = None  # "chunked", "contiguous", "compact", "virtual", "external"
    chunks: Optional[Tuple[int, ...]] = None
    filters: Tuple[str, ...] = ()  # HDF5 filters, e.g. ("shuffle", "deflate(6)")
    logical_bytes: Optional[int] = None  # None for variable-length data
    stored_bytes: Optional[int] = None
    array: Optional[ArrayInfo] = None


@dataclass(frozen=True)
class LinkInfo:
    path: str
    kind: str    # "soft" or "external"
    target: str  # soft: the path; external: "FILE:OBJECT"


@dataclass(frozen=True)
class ContainerInfo:
    """What `tessera info` reports: objects in path order (the root first), soft and
    external links, and totals ("groups", "datasets", "datatypes", "soft_links",
    "external_links", "fragments", "stored_bytes", "replaced_bytes", "logical_bytes",
    "catalog_bytes")."""
    container: str
    objects: Tuple[ObjectInfo, ...]
    links: Tuple[LinkInfo, ...]
    totals: Dict[str, int]

    @property
    def datasets(self) -> Dict[str, ObjectInfo]:
        """The datasets by path."""
        return {o.path: o for o in self.objects if o.kind == "dataset"}

    def __getitem__(self, path: str) -> ObjectInfo:
        for o in self.objects:
            if o.path == path or path in o.aliases:
                return o
        raise KeyError(path)


@dataclass(frozen=True)
class Fragment:
    """One fragment of a dataset (oldest first: newer ones win where they overlap)."""
    id: str                  # "<timestamp>-<rank>-<sequence>-<generation>" (hex)
    time: _dt.datetime       # its timestamp, UTC
    time_ns: int
    writer_rank: int
    generation: int          # 0: written; n: the result of n merges
    kind: str                # "dense", "sparse", "erase", "fill", "extent" or a combination
    low: Optional[Tuple[int, ...]]   # bounding box of its cells (None: no cells)
    high: Optional[Tuple[int, ...]]
    cells: int
    bytes: int
    inline: bool             # a catalog record, not a file
    location: str            # the file, or the catalog record
    replaces: Tuple[str, ...]  # ids this merge replaced
    replaced: bool           # itself replaced (kept until vacuum(); fragments(include_replaced=True))
    layout: str = ""         # its tiles' and cells' layout, e.g. "hilbert" (docs/layouts.md)


@dataclass(frozen=True)
class VerifyReport:
    """What `tessera verify` found.  True when nothing is damaged."""
    container: str
    ok: bool
    problems: Tuple[str, ...]
    notes: Tuple[str, ...]   # not damage: an unfinished publish a writer will finish, ...
    checked: Dict[str, int]  # objects, links, attributes, arrays, fragments, tiles, bytes, ...

    def __bool__(self) -> bool:
        return self.ok


# --------------------------------------------------------------------------- the tool
def tool_path() -> str:
    """The `tessera` program these functions run (see the module's docstring)."""
    env = os.environ.get("TESSERA_TOOL")
    if env:
        return env
    tried = []
    for d in filter(None, os.environ.get("HDF5_PLUGIN_PATH", "").split(":")):
        p = Path(d).parent / "tools" / "tessera"
        if p.is_file():
            return str(p)
        tried.append(str(p))
    w = shutil.which("tessera")
    if w:
        return w
    p = Path(__file__).resolve().parent.parent.parent / "build" / "tools" / "tessera"
    if p.is_file():
        return str(p)
    tried.append(str(p))
    raise TesseraError("the tessera tool was not found (build tessera, or set TESSERA_TOOL); looked in: "
                       + ", ".join(tried + ["PATH"]))


def _target(obj: PathOrObject, what: str) -> Tuple[str, Optional[str], Any]:
    """(container path, object path or None, the h5py file or None)."""
    if isinstance(obj, (str, os.PathLike)):
        return os.fspath(obj), None, None
    oid = getattr(obj, "id", None)
    if oid is None or not hasattr(oid, "valid") or not hasattr(type(obj), "file"):
        raise TypeError(f"tessera.{what}: expected a path or an h5py File, Group or Dataset, not {type(obj).__name__}")
    if not oid.valid:
        raise TesseraError(f"tessera.{what}: the h5py object is closed (or its file is)")
    f = obj.file
    name = obj.name
    if f.mode == "r+":
        f.flush()  # make what this process wrote visible to the tool
    return f.filename, (None if name in (None, "/") else name), f


def _run(args: Sequence[str], what: str, ok_codes: Sequence[int] = (0,)) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)  # the tool needs no compat library (and no sanitizer runtime)
    p = subprocess.run([tool_path(), *args], capture_output=True, text=True, env=env)
    if p.returncode not in ok_codes:
        msg = p.stderr.strip()
        if msg.startswith("tessera: "):
            msg = msg[len("tessera: "):]
        raise TesseraError(f"tessera.{what}: {msg or 'the tool failed with exit status %d' % p.returncode}")
    return p


def _json(args: Sequence[str], what: str, ok_codes: Sequence[int] = (0,)) -> Dict[str, Any]:
    p = _run(list(args) + ["--json"], what, ok_codes)
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError as e:
        raise TesseraError(f"tessera.{what}: unreadable output of the tool ({e})") from None


def _time(ns: Optional[int]) -> Optional[_dt.datetime]:
    if ns is None:
        return None
    return _dt.datetime.fromtimestamp(ns / 1e9, tz=_dt.timezone.utc)


def _tuple(v) -> Optional[Tuple]:
    return None if v is None else tuple(v)


def _object(o: Dict[str, Any]) -> ObjectInfo:
    attrs = tuple(AttributeInfo(a["name"], a["datatype"], a["space"], tuple(a["shape"])) for a in o["attributes"])
    base = dict(path=o["path"], kind=o["kind"], aliases=tuple(o["aliases"]), attributes=attrs)
    if o["kind"] == "datatype":
        return ObjectInfo(**base, datatype=o.get("datatype"))
    if o["kind"] != "dataset":
        return ObjectInfo(**base)
    arr = None
    a = o.get("array")
    if a:
        fr = a["fragments"]
        arr = ArrayInfo(compact=a["compact"], variable_length=a["variable_length"],
                        tile_extents=tuple(a["tile_extents"]), tile_order=a["tile_order"], cell_order=a["cell_order"],
                        tile_filters=a["tile_filters"], fragments=fr["count"], inline_fragments=fr["inline"],
                        fragment_bytes=fr["bytes"], min_fragment_bytes=fr["min_bytes"],
                        max_fragment_bytes=fr["max_bytes"], fragment_kinds=dict(fr["kinds"]),
                        first_time=_time(fr["first_time_ns"]), last_time=_time(fr["last_time_ns"]),
                        replaced_fragments=fr["replaced"], replaced_bytes=fr["replaced_bytes"],
                        multimap_cube=_tuple(a.get("multimap_cube")),
                        fragment_layouts=dict(a.get("fragment_layouts", {})))
    return ObjectInfo(**base, datatype=o["datatype"], space=o["space"], shape=tuple(o["shape"]),
                      maxshape=tuple(o["maxshape"]), element_bytes=o["element_bytes"], layout=o["layout"],
                      chunks=_tuple(o["chunk"]), filters=tuple(o["filters"]), logical_bytes=o["logical_bytes"],
                      stored_bytes=o["stored_bytes"], array=arr)


# --------------------------------------------------------------------------- the API
def info(obj: PathOrObject, name: Optional[str] = None) -> ContainerInfo:
    """What a container holds (`tessera info`): every object with its attributes, each
    dataset's type, shape, layout, filters, tiling and fragments, links and totals.

    obj: a container path, or an h5py file/group/dataset (a group or dataset limits the
    answer to it, as `name` does: a path inside the container)."""
    path, own, _ = _target(obj, "info")
    args = ["info", path]
    if name is not None or own is not None:
        args.append(name if name is not None else own)
    j = _json(args, "info")
    return ContainerInfo(container=j["container"], objects=tuple(_object(o) for o in j["objects"]),
                         links=tuple(LinkInfo(l["path"], l["kind"], l["target"]) for l in j["links"]),
                         totals=dict(j["totals"]))


def fragments(obj: PathOrObject, dataset: Optional[str] = None, include_replaced: bool = False) -> List[Fragment]:
    """A dataset's fragments, oldest first (`tessera fragments`).

    obj: an h5py dataset, or a container path with `dataset` (a path inside it).
    include_replaced=True adds the fragments a consolidation replaced that are kept until
    vacuum() (their `replaced` is True)."""
    path, name, _ = _target(obj, "fragments")
    ds = dataset if dataset is not None else name
    if ds is None:
        raise TesseraError("tessera.fragments: which dataset? (pass an h5py dataset, or dataset='/path')")
    args = ["fragments", path, ds] + (["--all"] if include_replaced else [])
    j = _json(args, "fragments")
    out = []
    for f in j["fragments"]:
        dom = f["domain"]
        out.append(Fragment(id=f["id"], time=_time(f["time_ns"]), time_ns=f["time_ns"], writer_rank=f["writer_rank"],
                            generation=f["generation"], kind=f["kind"], low=_tuple(dom and dom["low"]),
                            high=_tuple(dom and dom["high"]), cells=f["cells"], bytes=f["bytes"], inline=f["inline"],
                            location=f["location"], replaces=tuple(f["replaces"]), replaced=f["replaced"],
                            layout=f.get("layout", "")))
    return out


def _writer_args(obj: PathOrObject, dataset: Optional[str], what: str) -> List[str]:
    """[what, container, (dataset)] for a command that takes the writer lock."""
    path, name, f = _target(obj, what)
    if f is not None and f.mode == "r+":
        raise TesseraError(f"tessera.{what}: {f.filename!r} is open for writing in this process, and {what} needs "
                           "the container's writer lock: close the file (or open it read-only) first")
    ds = dataset if dataset is not None else name
    return [what, path] + ([ds] if ds is not None else [])


def consolidate(obj: PathOrObject, dataset: Optional[str] = None, size_tiered: bool = False,
                min_run: int = 4, ratio: float = 4.0, layout: Optional[str] = None) -> str:
    """Merges each dataset's fragments into one (`tessera consolidate`), or with
    size_tiered=True only runs of at least `min_run` fragments whose sizes are within
    `ratio` of each other.  layout="hilbert" (any name tessera.create_dataset takes)
    rewrites the fragments in that layout and makes it the dataset's layout for new
    writes (docs/layouts.md); without it a merge keeps the layout.  Reads return the same
    before and after.  The merged fragments are kept until vacuum().  An h5py dataset (or
    `dataset`) limits it to one dataset.  Returns the tool's report (one line per
    dataset)."""
    args = _writer_args(obj, dataset, "consolidate")
    if size_tiered:
        args += ["--size-tiered", "--min-run", str(int(min_run)), "--ratio", repr(float(ratio))]
    if layout is not None:
        args += ["--layout", str(layout)]
    return _run(["-q"] + args, "consolidate").stdout


def vacuum(obj: PathOrObject, dataset: Optional[str] = None) -> str:
    """Removes the fragments a consolidation replaced (`tessera vacuum`); safe while other
    processes read the container.  Returns the tool's report."""
    return _run(["-q"] + _writer_args(obj, dataset, "vacuum"), "vacuum").stdout


def verify(obj: PathOrObject) -> VerifyReport:
    """Checks every checksum of the container and that every committed piece is present
    (`tessera verify`).  Damage is reported in the result (ok=False, problems naming the
    files and datasets), not raised; TesseraError when it could not check at all (not a
    container)."""
    path, _, _ = _target(obj, "verify")
    j = _json(["-q", "verify", path], "verify", ok_codes=(0, 1))
    return VerifyReport(container=j["container"], ok=j["ok"], problems=tuple(j["problems"]), notes=tuple(j["notes"]),
                        checked=dict(j["checked"]))


def export(obj: PathOrObject, out: Union[str, "os.PathLike[str]"], force: bool = False) -> str:
    """Writes a container's contents to a native HDF5 file (`tessera export`): groups,
    links, attributes, committed datatypes, datasets with their chunking, filters and
    fill values, and their data.  force=True replaces `out` if it exists.  Returns the
    tool's report."""
    path, _, _ = _target(obj, "export")
    args = ["export", path, os.fspath(out)] + (["--force"] if force else [])
    return _run(["-q"] + args, "export").stdout


def import_(native: Union[str, "os.PathLike[str]"], container: Union[str, "os.PathLike[str]"],
            force: bool = False) -> str:
    """Makes a container from a native HDF5 file (`tessera import`), everything it holds.
    force=True replaces an existing container.  Returns the tool's report."""
    args = ["import", os.fspath(native), os.fspath(container)] + (["--force"] if force else [])
    return _run(["-q"] + args, "import_").stdout
