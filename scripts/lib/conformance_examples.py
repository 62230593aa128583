"""HDF5's own C example programs as a client conformance suite (scripts/conformance --examples).

The programs of HDF5Examples/C in HDF5's source package (kept by scripts/bootstrap in
<prefix>/share/hdf5-examples/C) are what a new user copies first: references, compounds
with variable-length members, data transforms, scale-offset and n-bit filters,
allocation times, groups, links.  Each folder runs as a sequence in one scratch
directory, in the order HDF5's own scripts use (TUTR's programs read each other's
files), once with native HDF5 and once with HDF5_VOL_CONNECTOR=tessera.  A program
passes when, under tessera,

  - it exits as it did natively (a signal is always a failure),
  - it prints the same lines, and
  - `h5dump` of every HDF5 file it created or changed prints the same text (object
    addresses inside old-style references are tessera's tokens, so the numbers after
    GROUP/DATASET/DATATYPE in reference values are replaced by a placeholder; nothing
    else is normalized) — but for the lines of a program that prints memory no HDF5
    call wrote (UNINITIALIZED_AFTER), whose numbers are masked on both sides.

The tessera run must produce tessera containers (directories): a plain HDF5 file
appearing there means HDF5 fell back to its native connector, which fails the program.
Programs that fail natively (szip is not built, a filter plugin is missing) are
reported as "native fails" and do not count.  Programs whose source selects the
deprecated 1.10 API (`H5_USE_110_API` in their #if's) run a second time built with it,
as "<name>-v110".
"""
from __future__ import annotations

import os
import re
import shutil
import select
import subprocess
import tempfile
import time
import sys
from pathlib import Path

# Run order per folder: HDF5's run-c-ex.sh order for TUTR (later programs read earlier
# programs' files); the other folders' programs are independent (sorted).
TUTR_ORDER = ["h5_crtdat", "h5_extend", "h5_rdwt", "h5_crtatt", "h5_crtgrp", "h5_crtgrpar",
              "h5_crtgrpd", "h5_subset", "h5_cmprss", "h5_write", "h5_read", "h5_extend_write",
              "h5_chunk_read", "h5_compound", "h5_group", "h5_select", "h5_attribute", "h5_mount",
              "h5_reference_deprec", "h5_ref_extern", "h5_ref_compat", "h5_drivers",
              "h5_ref2reg_deprec", "h5_extlink", "h5_elink_unix2win", "h5_shared_mesg",
              "h5_dtransform", "h5_interm_group"]
FOLDERS = ["H5T", "H5D", "H5G", "TUTR", "H5VDS"]

# Programs that cannot run on tessera by design, with the reason the docs print.
EXCLUDED = {
    "h5ex_g_iterate": "reads h5ex_g_iterate.h5, a native HDF5 file shipped with the example",
    "h5ex_g_traverse": "reads h5ex_g_traverse.h5, a native HDF5 file shipped with the example",
    "h5ex_g_visit": "reads h5ex_g_visit.h5, a native HDF5 file shipped with the example",
    "h5_debug_trace": "prints HDF5's API trace, which differs by connector by design",
    "h5ex_g_compact": "prints H5Fget_filesize: a tessera container's bytes differ from an HDF5 file's by design",
    "h5_drivers": "deletes the split driver's member files with remove(), which cannot delete a container "
                  "(a directory); tessera keeps a split file as one container under the metadata member's name",
}

# Programs that print memory no HDF5 call wrote, with the line after which they do and
# why: the numbers on the lines after it are masked on both sides (their layout is still
# compared), everything else — the other lines, the exit status, h5dump of the files —
# is compared as usual.  h5ex_vds-eiger maps printf-named source files that do not
# exist: natively the virtual dataset's extent is 0 x 10 x 10 as soon as it is created
# (h5dump: "( 0, 10, 10 ) / ( H5S_UNLIMITED, 10, 10 )"), so H5Dread with H5S_ALL reads no
# element and the program prints its uninitialized stack buffer.  h5tests/vol/test_vds.c
# reads the same mapping into a sentinel-filled buffer: native and tessera leave it
# untouched alike, and read the fill value where a selection names elements (issue 45).
UNINITIALIZED_AFTER = {
    "h5ex_vds-eiger": " VDS Data:",
}
NUMBER = re.compile(r" *-?\d+")  # with the padding of its printf width


def mask_uninitialized(name: str, out: str) -> str:
    """`out` with the numbers after the program's UNINITIALIZED_AFTER line masked."""
    marker = UNINITIALIZED_AFTER.get(name.removesuffix("-v110"))
    if marker is None:
        return out
    lines = out.split("\n")
    for i, line in enumerate(lines):
        if line == marker:
            return "\n".join(lines[:i + 1] + [NUMBER.sub(" #", x) for x in lines[i + 1:]])
    return out

REF_ADDR = re.compile(r"\b(GROUP|DATASET|DATATYPE|UNKNOWN) \d+ ")


def example_sources(root: Path):
    """(folder, name, source, extra cflags) for every program to run, in run order."""
    out = []
    for folder in FOLDERS:
        d = root / folder
        if not d.is_dir():
            continue
        srcs = {p.stem: p for p in d.glob("*.c")}
        names = [n for n in TUTR_ORDER if n in srcs] if folder == "TUTR" else sorted(srcs)
        names += sorted(set(srcs) - set(names))
        for n in names:
            out.append((folder, n, srcs[n], []))
            if "H5_USE_110_API" in srcs[n].read_text(errors="replace"):
                out.append((folder, n + "-v110", srcs[n], ["-DH5_USE_110_API"]))
    return out


def compile_all(prefix: Path, root: Path, bindir: Path):
    """Compiles every example (skipped when the binary is newer than its source);
    returns {name: error text} for those that do not compile."""
    bindir.mkdir(parents=True, exist_ok=True)
    cc = shutil.which("mpicc") or "cc"
    errors = {}
    for folder, name, src, flags in example_sources(root):
        exe = bindir / name
        if exe.exists() and exe.stat().st_mtime >= src.stat().st_mtime:
            continue
        cmd = [cc, "-O1", "-w", *flags, str(src), f"-I{prefix / 'include'}", f"-L{prefix / 'lib'}",
               f"-Wl,-rpath,{prefix / 'lib'}", "-lhdf5_hl", "-lhdf5", "-lm", "-o", str(exe)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            errors[name] = (r.stderr.strip().splitlines() or ["compile failed"])[0]
    return errors


MAX_OUTPUT = 4 << 20  # a runaway program (printing in a loop) must not fill memory


def _run(cmd, cwd, env, timeout):
    """(exit status or "timeout", stdout text, stderr text).  Stdout is read as it comes
    and the program stopped after MAX_OUTPUT bytes (h5dump of h5_shared_mesg's 3.6-million
    element datasets prints gigabytes): the compared text is then that prefix."""
    deadline = time.monotonic() + timeout
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=err)
        chunks, size, rc = [], 0, None
        os.set_blocking(proc.stdout.fileno(), False)
        while True:
            ready, _, _ = select.select([proc.stdout], [], [], 0.5)
            data = proc.stdout.read(1 << 16) if ready else None
            if data:
                chunks.append(data)
                size += len(data)
            if size > MAX_OUTPUT:
                proc.kill()
                proc.wait()
                rc = 0 if proc.returncode in (0, -9) else proc.returncode
                chunks = [b"".join(chunks)[:MAX_OUTPUT], b"\n<output truncated>\n"]
                break
            if data == b"" or (not ready and proc.poll() is not None):
                rc = proc.wait()
                break
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                rc = "timeout"
                break
        proc.stdout.close()
        err.seek(0)
        err_text = err.read(MAX_OUTPUT).decode(errors="replace")
    return rc, b"".join(chunks).decode(errors="replace"), err_text


TESSERA_MESSAGE = re.compile(r"tessera: (.*)")


def _tessera_says(stderr: str):
    """The first error message tessera put on the error stack (why it refused), or ""."""
    m = TESSERA_MESSAGE.search(stderr)
    return m.group(1).strip() if m else ""


def _exit_text(rc):
    if rc == "timeout":
        return "timed out"
    return f"killed by signal {-rc}" if rc < 0 else f"exit {rc}"


def _signature(p: Path):
    """What changes when a program writes an entry: size and mtime of the file, or of
    every file inside a tessera container (a directory)."""
    files = [p] if p.is_file() else sorted(q for q in p.rglob("*") if q.is_file())
    return tuple((str(q), q.stat().st_size, q.stat().st_mtime_ns) for q in files)


def _dumps(h5dump: Path, cwd: Path, env, timeout, cache, skip=()):
    """{entry: normalized h5dump text} for every *.h5 entry in cwd (but `skip`); an entry
    whose signature is unchanged since the last call reuses the text in `cache`."""
    out = {}
    for p in sorted(cwd.glob("*.h5")):
        if p.name in skip:
            continue
        sig = _signature(p)
        hit = cache.get(p)
        if hit and hit[0] == sig:
            out[p.name] = hit[1]
            continue
        rc, text, _ = _run([str(h5dump), p.name], cwd, env, timeout)
        text = REF_ADDR.sub(r"\1 <addr> ", text)
        out[p.name] = text if rc == 0 else f"h5dump {_exit_text(rc)}\n{text}"
        cache[p] = (sig, out[p.name])
    return out


def _first_diff(a: str, b: str):
    la, lb = a.splitlines(), b.splitlines()
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else "<end>"
        y = lb[i] if i < len(lb) else "<end>"
        if x != y:
            return f"line {i + 1}: native `{x.strip()[:80]}` vs tessera `{y.strip()[:80]}`"
    return ""


def run_examples(prefix: Path, build: Path, native_env, tessera_env, timeout=60):
    """Runs every example on both connectors; returns a list of result dicts
    {folder, name, status: passed|failed|native-fails|excluded, reason}."""
    root = prefix / "share" / "hdf5-examples" / "C"
    if not root.is_dir():
        return [{"folder": "-", "name": "-", "status": "failed",
                 "reason": f"no example programs in {root} (run scripts/bootstrap)"}]
    work = build / "conformance" / "examples"
    bindir = work / "bin"
    compile_errors = compile_all(prefix, root, bindir)
    h5dump = prefix / "bin" / "h5dump"
    results = []
    scratch = {}
    seen = {"native": {}, "tessera": {}}
    dump_cache = {}
    for folder, name, src, _ in example_sources(root):
        res = {"folder": folder, "name": name, "status": "passed", "reason": ""}
        results.append(res)
        base = name.removesuffix("-v110")
        if base in EXCLUDED:
            res.update(status="excluded", reason=EXCLUDED[base])
            continue
        if name in compile_errors:
            res.update(status="native-fails", reason="does not compile: " + compile_errors[name])
            continue
        # One scratch directory per folder and side (per API variant, so that the v110
        # build does not read the files of the default one).
        key = (folder, name.endswith("-v110"))
        if key not in scratch:
            scratch[key] = {}
            for side in ("native", "tessera"):
                d = work / "run" / f"{folder}{'-v110' if key[1] else ''}" / side
                shutil.rmtree(d, ignore_errors=True)
                d.mkdir(parents=True)
                # Programs that read input files shipped beside them find them here.
                for f in (root / folder).glob("*.h5"):
                    shutil.copy(f, d / f.name)
                scratch[key][side] = d
        dirs = scratch[key]
        rc_n, out_n, _ = _run([str(bindir / name)], dirs["native"], native_env, timeout)
        rc_t, out_t, err_t = _run([str(bindir / name)], dirs["tessera"], tessera_env, timeout)
        if rc_n != 0:
            res.update(status="native-fails", reason=f"natively: {_exit_text(rc_n)}: "
                       + (out_n.strip().splitlines() or [""])[-1][:100])
            continue
        problems = []
        if rc_t != 0:
            problems.append(f"tessera: {_exit_text(rc_t)}")
        out_n, out_t = mask_uninitialized(name, out_n), mask_uninitialized(name, out_t)
        if out_n != out_t:
            problems.append("stdout differs, " + _first_diff(out_n, out_t))
        plain = [p.name for p in dirs["tessera"].glob("*.h5")
                 if p.is_file() and not (root / folder / p.name).exists()]
        if plain:
            problems.append("native HDF5 file(s) written under tessera: " + ", ".join(plain))
        dn = _dumps(h5dump, dirs["native"], native_env, timeout, dump_cache)
        # h5dump 1.14.5 itself loops on some native files (h5_shared_mesg's): nothing to
        # compare with, so the tessera side is not dumped either.
        skip = {e for e, text in dn.items() if text.startswith("h5dump timed out")}
        dt = _dumps(h5dump, dirs["tessera"], tessera_env, timeout, dump_cache, skip)
        for entry in sorted((set(dn) | set(dt)) - skip):
            a, b = dn.get(entry, "<missing>"), dt.get(entry, "<missing>")
            changed = (seen["native"].get((key, entry)) != a or seen["tessera"].get((key, entry)) != b)
            seen["native"][(key, entry)], seen["tessera"][(key, entry)] = a, b
            if changed and a != b:
                problems.append(f"h5dump {entry} differs, " + _first_diff(a, b))
        if problems:
            said = _tessera_says(err_t)
            if said:
                problems.append(f"tessera said: {said[:160]}")
            res.update(status="failed", reason="; ".join(problems))
        print(f"  {folder}/{name}: {res['status']} {res['reason'][:150]}", file=sys.stderr, flush=True)
    return results


# The client-level features of issue 11 and the programs that exercise them (the "-v110"
# builds count with their base program).
FEATURES = [
    ("object, region and attribute references", re.compile(r"^(h5ex_t_(obj|reg)ref|h5_ref|h5_reference)")),
    ("compounds with variable-length and nested members", re.compile(r"^(h5ex_t_(cpx)?cmpd|h5_compound)")),
    ("variable-length strings and sequences", re.compile(r"^h5ex_t_(vl|vlen)")),
    ("data transforms", re.compile(r"^(h5ex_d_transform|h5_dtransform)")),
    ("filters (deflate, shuffle, checksum, scale-offset, n-bit, szip)",
     re.compile(r"^(h5ex_d_(gzip|shuffle|checksum|so|nbit|szip|unlimgzip)|h5_cmprss)")),
    ("allocation time and fill values", re.compile(r"^h5ex_d_(alloc|fillval)")),
    ("virtual datasets", re.compile(r"^h5ex_vds")),
    ("mounting files, user-defined links", re.compile(r"^(h5_mount|h5_extlink)")),
]


def feature_table(results):
    lines = ["| feature | programs | agree with native | differ |", "| --- | --- | --- | --- |"]
    for title, pat in FEATURES:
        rs = [r for r in results if pat.match(r["name"]) and r["status"] in ("passed", "failed")]
        if not rs:
            continue
        bad = [r["name"] for r in rs if r["status"] != "passed"]
        lines.append(f"| {title} | {len(rs)} | {len(rs) - len(bad)} | {', '.join(bad) or '—'} |")
    return lines + [""]


def markdown(results):
    counts = {}
    for r in results:
        c = counts.setdefault(r["folder"], {"passed": 0, "failed": 0, "native-fails": 0, "excluded": 0})
        c[r["status"]] += 1
    lines = ["### HDF5's example programs", "",
             "HDF5Examples/C from HDF5 1.14.5's source, each program run natively and on tessera;",
             "it passes when its exit status, its output and `h5dump` of the files it wrote are",
             "the same (`scripts/conformance --examples`); a program printing memory no HDF5 call",
             "wrote has the numbers after that point masked on both sides ("
             + ", ".join(f"`{n}` after `{m.strip()}`" for n, m in UNINITIALIZED_AFTER.items()) + ").", "",
             "| folder | passed | failed | fail natively | excluded |", "| --- | --- | --- | --- | --- |"]
    for folder, c in counts.items():
        lines.append(f"| {folder} | {c['passed']} | {c['failed']} | {c['native-fails']} | {c['excluded']} |")
    tot = {k: sum(c[k] for c in counts.values()) for k in ("passed", "failed", "native-fails", "excluded")}
    lines += [f"| **all** | **{tot['passed']}** | {tot['failed']} | {tot['native-fails']} | {tot['excluded']} |", ""]
    lines += ["#### By client feature", ""] + feature_table(results)
    rest = [r for r in results if r["status"] != "passed"]
    if rest:
        lines += ["#### Examples not passed", ""]
        for r in rest:
            reason = r["reason"].replace("|", "\\|")
            lines.append(f"- {r['status']}: {r['folder']}/{r['name']} — {reason}")
        lines.append("")
    return "\n".join(lines)
