"""python -m tessera: run a program with tessera as its HDF5 connector (docs/install.md).

    python -m tessera run CMD [ARGS...]   # e.g. python -m tessera run python app.py
    python -m tessera run --client netCDF4 python app.py
    python -m tessera env                 # print the variables (eval "$(python -m tessera env)")
    python -m tessera check               # does this Python's h5py use tessera? (exit 1 if not)

`run` sets the variables and execs CMD; it imports no HDF5 client itself.  It refuses to
start CMD when the program's HDF5 would not load the plugin: when CMD is a Python
interpreter it first asks that interpreter, with the same environment, which connector a
new file gets in the libhdf5 of each HDF5 client installed there (h5py, netCDF4, tables:
each wheel bundles its own), and exits with the reason if one is not tessera — HDF5 alone
would silently write native files.  `--client NAME[,NAME]` checks only those (the ones
the program uses); `--client none` checks nothing.  The build is found as by
tessera.find_build (TESSERA_BUILD_DIR, HDF5_PLUGIN_PATH, or the repository's build/).
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from ._errors import TesseraError
from ._runtime import check, environment

PROBE = Path(__file__).resolve().parent / "_probe.py"


def _python_of(cmd: list[str]) -> str | None:
    """The Python interpreter CMD runs, if it is one (also behind mpirun/mpiexec -n N)."""
    i = 0
    if cmd and os.path.basename(cmd[0]) in ("mpirun", "mpiexec"):
        i = 1
        while i < len(cmd) and cmd[i].startswith("-"):
            i += 2 if cmd[i] in ("-n", "-np", "--np", "-N") else 1
    if i < len(cmd) and os.path.basename(cmd[i]).startswith("python"):
        return cmd[i]
    return None


def probe(python: str, env: dict, clients: list[str] | None = None) -> None:
    """Raises TesseraError with the interpreter's own reason unless the HDF5 of each of
    `clients` (default: each HDF5 client installed there), started with `env`, uses tessera."""
    r = subprocess.run([python, str(PROBE), *(clients or [])], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise TesseraError("%s cannot use tessera:\n%s" % (python, (r.stderr or r.stdout).strip()))


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__.strip())
        return 0
    try:
        if argv[0] == "env":
            for k, v in environment().items():
                print("export %s=%s" % (k, shlex.quote(v)))
            return 0
        if argv[0] == "check":
            s = check()
            print("tessera: HDF5 %s (%s) uses the tessera connector" % (s.hdf5_version, s.hdf5_path))
            return 0
        if argv[0] == "run":
            cmd, clients = argv[1:], None
            if cmd[:1] == ["--client"] and len(cmd) > 1:
                clients, cmd = [c for c in cmd[1].split(",") if c], cmd[2:]
            elif cmd[:1] and cmd[0].startswith("--client="):
                clients, cmd = [c for c in cmd[0].split("=", 1)[1].split(",") if c], cmd[1:]
            if not cmd:
                print("usage: python -m tessera run [--client NAME[,NAME]|none] CMD [ARGS...]", file=sys.stderr)
                return 2
            env = dict(os.environ)
            env.update(environment())
            py = _python_of(cmd)
            if py and clients != ["none"]:
                probe(py, env, clients)
            os.execvpe(cmd[0], cmd, env)
        print("unknown command %r (use: run | env | check)" % argv[0], file=sys.stderr)
        return 2
    except TesseraError as exc:
        print("tessera: %s" % exc, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
