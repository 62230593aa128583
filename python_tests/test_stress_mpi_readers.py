"""The short variant of scripts/stress_mpi_readers (docs/reliability.md, "Outside readers
during MPI epochs"): serial reader processes read a parallel file over and over while an
`mpirun` job commits epochs (collective writes, small independent writes through the share
logs, a gzip dataset, an extent that grows and shrinks), and once a rank is SIGKILLed and
the job resumed; every read is checked against the writer's model (each cell's generation
and place, the extent of that generation, never an older state).  The long run (minutes,
more kills, -n 4) is run by hand and recorded in the docs.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "stress_mpi_readers"


def _run(*args):
    p = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ))
    assert p.returncode == 0, p.stdout[-6000:] + p.stderr[-3000:]
    counts = p.stdout.strip().splitlines()[-2]
    assert " 0 violations, 0 failed reads, 0 other problems: OK" in p.stdout.strip().splitlines()[-1], p.stdout
    return counts, p.stdout


def test_outside_readers_while_two_ranks_commit_epochs_and_one_is_killed():
    counts, out = _run("--short")
    assert " 1 kills" in counts, out
    epochs = int(re.search(r"(\d+) epochs committed", counts).group(1))
    reads = int(re.search(r"(\d+) dataset reads checked", counts).group(1))
    assert epochs >= 3 and reads >= 100, out  # enough ran to mean something


@pytest.mark.parametrize("np_", [4])
def test_outside_readers_while_four_ranks_commit_epochs(np_):
    counts, out = _run("--np", str(np_), "--seconds", "6", "--readers", "2")
    reads = int(re.search(r"(\d+) dataset reads checked", counts).group(1))
    assert reads >= 100, out
