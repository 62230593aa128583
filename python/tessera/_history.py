"""Reading a container as it was at a past commit (time travel; docs/tool.md).

    import tessera
    tessera.commits("run.h5")                     # [Commit(seq, time, fragments, arrays), ...]
    with tessera.open_as_of("run.h5", 12) as f:   # an h5py.File, read-only
        old = f["frames"][...]
    tessera.open_as_of("run.h5", datetime(2026, 11, 26, 10, 41, tzinfo=timezone.utc))

Every HDF5 flush or close that changed something is a commit.  A file opened as of one
reads exactly what that commit left — objects, attributes, extents, data — and cannot be
written.  A vacuum (tessera.vacuum) removes what only older commits need; reading those
then fails naming the missing file.
"""
from __future__ import annotations

import ctypes
import datetime as _dt
import os
from dataclasses import dataclass
from typing import List, Union

from ._errors import TesseraError, _stack_message
from ._lib import lib
from ._tool import _json

__all__ = ["Commit", "commits", "open_as_of"]

When = Union[int, str, _dt.datetime]


@dataclass(frozen=True)
class Commit:
    """One commit: its number, its time (UTC), the fragments and arrays it published."""
    seq: int
    time: _dt.datetime
    time_ns: int
    fragments: int
    arrays: int


def commits(path: Union[str, "os.PathLike[str]"]) -> List[Commit]:
    """The container's commits, oldest first (`tessera commits`)."""
    j = _json(["commits", os.fspath(path)], "commits")
    return [Commit(c["commit"], _dt.datetime.fromtimestamp(c["time_ns"] / 1e9, tz=_dt.timezone.utc), c["time_ns"],
                   c["fragments"], c["arrays"]) for c in j["commits"]]


def _when_text(when: When) -> str:
    if isinstance(when, bool):
        raise TypeError("open_as_of: `when` is a commit number, a datetime or a string")
    if isinstance(when, int):
        if when < 1:
            raise ValueError("open_as_of: commits are numbered from 1")
        return str(when)
    if isinstance(when, _dt.datetime):
        if when.tzinfo is None:
            raise ValueError("open_as_of: give an aware datetime (tzinfo=timezone.utc): commit times are UTC")
        ts = when.astimezone(_dt.timezone.utc)
        epoch = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
        d = ts - epoch
        return "@%d" % ((d.days * 86400 + d.seconds) * 10**9 + d.microseconds * 1000)
    if isinstance(when, str):
        return when.strip().replace(" ", "T", 1) if ":" in when else when.strip()
    raise TypeError("open_as_of: `when` is a commit number, a datetime or a string, not %s" % type(when).__name__)


def open_as_of(path: Union[str, "os.PathLike[str]"], when: When):
    """An h5py.File of the container `path` as it was at a past commit, read-only.

    when: the commit's number (see commits()), an aware datetime (the last commit at or
    before it), or a string: "12", "@<ns since the epoch>", "2026-11-26T10:41:09Z".
    Raises TesseraError when there is no such commit, or what it needs was vacuumed."""
    import h5py

    text = _when_text(when)
    l = lib()
    fn = l.tessera_Pset_as_of
    fn.argtypes = [ctypes.c_int64, ctypes.c_char_p]
    fn.restype = ctypes.c_int
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    if fn(fapl.id, text.encode()) < 0:
        raise TesseraError(_stack_message("tessera.open_as_of"))
    try:
        fid = h5py.h5f.open(os.fsencode(os.fspath(path)), h5py.h5f.ACC_RDONLY, fapl=fapl)
    except Exception as e:  # h5py maps HDF5's error to OSError/FileNotFoundError
        raise TesseraError("tessera.open_as_of(%r, %r): %s" % (os.fspath(path), when, e)) from None
    return h5py.File(fid)
