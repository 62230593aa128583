"""scripts/bench/report: benchmark logs -> a markdown section and PNG charts.

Synthetic logs with known numbers go in; the section must hold exactly those numbers,
the charts must be PNG images, and a second run must replace the section, not add one.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPORT = Path(__file__).resolve().parent.parent / "scripts" / "bench" / "report"
PNG = b"\x89PNG\r\n\x1a\n"


def run(*args):
    return subprocess.run([sys.executable, str(REPORT), *map(str, args)], capture_output=True, text=True)


def test_logs_become_tables_and_charts(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "h5-20260101-100000.log").write_text(
        "# header\nRESULT\tload (c)\t2.0\t1.0\ts\t2\tmean of 2\nRESULT\tread Tile, warm\t0.5\t1.0\tms\t0.5\t\n")
    (logs / "h5-20260102-100000.log").write_text(
        "RESULT\tload (c)\t3.0\t1.0\ts\t3\tmean of 2\nRESULT\tread Tile, warm\t0.8\t1.0\tms\t0.8\t\n"
        "CHECK\tx\ta\ta\tok\ta\n")
    (logs / "h5-parallel-20260102-110000.log").write_text(
        "INFO\tnp\t1\nRESULT\t(1) load\t0.5\t0.25\ts\t2\tnote a\nRESULT\t(2b) probe\taccepted\taccepted\t-\t-\tx\n"
        "INFO\tnp\t2\nRESULT\t(1) load\t0.6\t0.2\ts\t3\tnote b\n")
    rec = {"bench": "export_import", "gib": 1.0, "filter": "none", "write_median": 400.0, "read_median": 3000.0,
           "copy_median": 1200.0, "export_median": 1000.0, "import_median": 960.0, "export_vs_copy": 0.83,
           "import_vs_copy": 0.8}
    (logs / "ei.jsonl").write_text(json.dumps(rec) + "\n")
    out = tmp_path / "bench.md"
    out.write_text("# Benchmarks\n\nhand-written text\n")
    charts = tmp_path / "img"
    p = run("--logs", logs, "--out", out, "--charts", charts)
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    assert text.startswith("# Benchmarks\n\nhand-written text\n")
    assert text.count("<!-- report:begin -->") == 1 and text.count("<!-- report:end -->") == 1
    # The latest serial run's numbers, the parallel run per np, the export record.
    assert "| load (c) | 3 | 1 | s | 3 | mean of 2 |" in text
    assert "| read Tile, warm | 0.8 | 1 | ms | 0.8 |  |" in text
    assert "| load (c) | 2 |" not in text  # an older run: only in the history chart
    assert "| 1 | (1) load | 0.5 | 0.25 | s | 2 | note a |" in text
    assert "| 2 | (1) load | 0.6 | 0.2 | s | 3 | note b |" in text
    assert "| 1 | (2b) probe | accepted | accepted | - | - | x |" in text
    assert "| 1 GiB, none | 400 | 3000 | 1200 | 1000 | 960 | 0.83 | 0.80 |" in text
    for name in ("connector.png", "connector-history.png", "parallel.png", "export-import.png"):
        data = (charts / name).read_bytes()
        assert data.startswith(PNG) and len(data) > 5000, name
        assert f"](img/{name})" in text
    # Again: the section is replaced, the rest kept.
    (logs / "h5-20260103-100000.log").write_text("RESULT\tload (c)\t4.0\t1.0\ts\t4\tnew\n")
    assert run("--logs", logs, "--out", out, "--charts", charts).returncode == 0
    text2 = out.read_text()
    assert text2.count("<!-- report:begin -->") == 1 and "| load (c) | 4 | 1 | s | 4 | new |" in text2
    assert text2.startswith("# Benchmarks\n\nhand-written text\n")


def test_nothing_to_report_is_an_error(tmp_path):
    (tmp_path / "logs").mkdir()
    p = run("--logs", tmp_path / "logs", "--out", tmp_path / "b.md", "--charts", tmp_path / "c")
    assert p.returncode == 2 and "no benchmark results" in p.stderr
    p = run("--logs", tmp_path / "none", "--out", tmp_path / "b.md")
    assert p.returncode == 2 and "no log directory" in p.stderr
