"""Engine settings through the connector (engine/options.h, vol/connector_info.h):
HDF5_VOL_CONNECTOR="tessera key=value ..." and TESSERA_* environment variables reach the
engine, a bad or unknown setting is an HDF5 error at the open that names it (and creates
nothing), and a setting takes effect: inline_fragment_kb=0 stores even a tiny dataset's
fragment as a file instead of a catalog record."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent("""
    import sys, h5py
    try:
        with h5py.File(sys.argv[1], "w") as f:
            f.create_dataset("x", data=list(range(10)), chunks=(10,))  # chunked: fragments, not a compact record
        print("OK")
    except Exception as e:
        print("ERROR", e)
""")


def run(tmp_path: Path, name: str, connector: str, **env_extra) -> str:
    env = dict(os.environ)
    env["HDF5_VOL_CONNECTOR"] = connector
    env.update(env_extra)
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / name)], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def fragment_files(container: Path) -> list[str]:
    return [p.name for p in container.rglob("*.tfr")]


def test_settings_reach_the_engine(tessera_env, tmp_path):
    assert run(tmp_path, "default.h5", "tessera") == "OK"
    assert fragment_files(tmp_path / "default.h5") == []       # small fragments are catalog records
    assert run(tmp_path, "files.h5", "tessera inline_fragment_kb=0 threads=2") == "OK"
    assert len(fragment_files(tmp_path / "files.h5")) == 1     # ... unless inline fragments are off
    assert run(tmp_path, "env.h5", "tessera", TESSERA_INLINE_FRAGMENT_KB="0") == "OK"
    assert len(fragment_files(tmp_path / "env.h5")) == 1
    # The connector string wins over the environment.
    assert run(tmp_path, "both.h5", "tessera inline_fragment_kb=64", TESSERA_INLINE_FRAGMENT_KB="0") == "OK"
    assert fragment_files(tmp_path / "both.h5") == []


def test_bad_settings_are_errors_naming_them(tessera_env, tmp_path):
    out = run(tmp_path, "bad.h5", "tessera write_buffer_mb=-1")
    assert out.startswith("ERROR") and "write_buffer_mb=-1" in out and "expected an integer" in out, out
    assert not (tmp_path / "bad.h5").exists()                  # nothing created
    out = run(tmp_path, "typo.h5", "tessera thread=4")
    assert "unknown setting 'thread'" in out and "threads" in out, out
    out = run(tmp_path, "env.h5", "tessera", TESSERA_THREADS="-1")
    assert "TESSERA_THREADS" in out and "expected an integer" in out, out
