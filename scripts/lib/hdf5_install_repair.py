#!/usr/bin/env python3
"""Make HDF5's CMake package in a scripts/bootstrap prefix describe what is installed.

scripts/bootstrap builds only the HDF5 programs tessera uses, but HDF5's export set
(<prefix>/cmake/hdf5-targets*.cmake) names every program its configure enabled
(testhdf5, t_bigio, mirror_server, h5jam, ...).  CMake checks every imported file at
find_package time, so `find_package(HDF5)` failed in any consumer project with "The
imported target "testhdf5" references the file .../bin/h5_api_test_testhdf5 but this
file does not exist".

This drops from the export set the imported executables whose files are absent, and
nothing else: a missing library is an incomplete install and fails.  It is idempotent
and rewrites files only when something changes, so bootstrap runs it both after a
fresh install and on a reused cache (which it repairs without rebuilding HDF5).

Usage: hdf5_install_repair.py PREFIX     prints what it dropped, or "ok"
"""
import os
import re
import sys
from pathlib import Path

BLOCK_HEAD = re.compile(r'^# Import target "([^"]+)" for configuration', re.M)
TAIL_MARK = "# Commands beyond this point"
LOCATION = re.compile(r'IMPORTED_LOCATION_\w+ "([^"]+)"')


def write_if_changed(path, text):
    if path.read_text() == text:
        return
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def split_blocks(text):
    """(head, [(target, block)], tail) of a per-configuration targets file."""
    starts = [m.start() for m in BLOCK_HEAD.finditer(text)]
    if not starts:
        return text, [], ""
    end = text.find(TAIL_MARK, starts[-1])
    if end < 0:
        sys.exit(f"hdf5_install_repair: no '{TAIL_MARK}' line; unknown file layout")
    blocks = []
    for i, s in enumerate(starts):
        e = starts[i + 1] if i + 1 < len(starts) else end
        blocks.append((BLOCK_HEAD.match(text, s).group(1), text[s:e]))
    return text[:starts[0]], blocks, text[end:]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    prefix = Path(sys.argv[1]).resolve()
    cmake_dir = prefix / "cmake"
    main_file = cmake_dir / "hdf5-targets.cmake"
    if not main_file.is_file():
        sys.exit(f"hdf5_install_repair: {main_file} not found; not an HDF5 CMake install")
    main_text = main_file.read_text()
    executables = set(re.findall(r"^add_executable\((\S+) IMPORTED\)", main_text, re.M))

    located = set()
    for config_file in sorted(cmake_dir.glob("hdf5-targets-*.cmake")):
        head, blocks, tail = split_blocks(config_file.read_text())
        kept = []
        for target, block in blocks:
            files = [f.replace("${_IMPORT_PREFIX}", str(prefix)) for f in LOCATION.findall(block)]
            missing = [f for f in files if not os.path.exists(f)]
            if not missing:
                kept.append(block)
                located.add(target)
            elif target not in executables:
                sys.exit(f"hdf5_install_repair: library target {target} lacks {missing[0]}: "
                         "the HDF5 install is incomplete; delete the prefix and rerun scripts/bootstrap")
        write_if_changed(config_file, head + "".join(kept) + tail)

    # Also an executable whose block an interrupted earlier run already removed.
    dropped = executables - located
    if dropped:
        def drop_expected(m):
            names = [n for n in m.group(2).split() if n not in dropped]
            return m.group(1) + " ".join(names) + m.group(3)
        main_text = re.sub(r"(foreach\(_cmake_expected_target IN ITEMS )([^)]*)(\))",
                           drop_expected, main_text, count=1)
        for t in dropped:
            main_text = main_text.replace(
                f"# Create imported target {t}\nadd_executable({t} IMPORTED)\n\n", "")
        write_if_changed(main_file, main_text)
        print("dropped from HDF5's CMake export set (not installed): " + " ".join(sorted(dropped)))
    else:
        print("ok")


if __name__ == "__main__":
    main()
