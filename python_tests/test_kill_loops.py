"""The short variant of scripts/kill_loops (docs/reliability.md, "Kill loops"): a few dozen
SIGKILLs of engine writers (writes, flushes, consolidations, background flushes, automatic
merges) and a few
of MPI ranks of a parallel h5py writer, each followed by a reopen checked against a model.
The long variant (1,000+ kills) is run by hand and recorded in the docs.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_kill_loops_short():
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "kill_loops"), "--short"],
                       capture_output=True, text=True, timeout=900, env=dict(os.environ))
    assert p.returncode == 0, p.stdout[-6000:] + p.stderr[-3000:]
    last = p.stdout.strip().splitlines()[-1]
    assert " 0 failures" in last, p.stdout
    kills = int(last.split(":")[1].split()[0])
    assert kills >= 38, p.stdout  # 5 x 8 engine kills + 4 MPI kills
