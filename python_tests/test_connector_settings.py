"""Engine settings through the connector (engine/context/options.h, vol/base/connector_info.h):
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


BUDGET_SCRIPT = textwrap.dedent("""
    import os, sys, h5py, numpy as np
    rng = np.random.default_rng(1)
    f = h5py.File(sys.argv[1], "w")
    ds = [f.create_dataset("d%d" % i, shape=(1024, 1024), dtype="i4") for i in range(4)]
    for r in range(3):
        for d in ds:
            flat = rng.choice(1024 * 1024, size=50000, replace=False)
            fs = d.id.get_space()
            fs.select_elements(np.stack([flat // 1024, flat % 1024], axis=1).astype(np.uint64))
            d.id.write(h5py.h5s.create_simple((50000,)), fs, flat.astype(np.int32))
    # Before the close: fragment files the write budget's background flushes wrote.
    print(sum(len(fs) for _, _, fs in os.walk(sys.argv[1])))
    f.close()
""")


def test_process_settings_from_the_connector_string_take_effect(tessera_env, tmp_path):
    """The process-wide settings (write budget, pools, tile cache) come from the first
    file's connector string — they used to be fixed by the environment before the string
    was read, so write_memory_mb given there did nothing. 12 point writes of 50,000 cells
    (about 1 MiB each) to 4 datasets: under the default 256 MiB budget nothing is flushed
    before the close; under write_memory_mb=1 the budget flushes in the background."""
    def files_before_close(name: str, connector: str) -> int:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TESSERA_")}
        env["HDF5_VOL_CONNECTOR"] = connector
        r = subprocess.run([sys.executable, "-c", BUDGET_SCRIPT, str(tmp_path / name)], env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        return int(r.stdout.split()[-1])

    roomy = files_before_close("roomy.h5", "tessera")
    tight = files_before_close("tight.h5", "tessera write_memory_mb=1")
    assert tight >= roomy + 4, (roomy, tight)
