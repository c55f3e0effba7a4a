"""The set-up checks `make test` runs first: a missing browser stops the run at once with one line
saying what to do (never two errors after minutes of tests)."""

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "ensure-chromium"


def _env(**extra):
    return {**os.environ, **extra}


def test_missing_chromium_without_a_way_to_install_stops_with_one_line():
    out = subprocess.run([str(SCRIPT)], capture_output=True, text=True, timeout=30,
                         env=_env(CHROMIUM="/nonexistent/chromium", APT_GET="/nonexistent/apt-get"))
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "apt-get install -y chromium" in lines[0] and "/nonexistent/chromium" in lines[0]


def test_present_chromium_passes_silently(tmp_path):
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    out = subprocess.run([str(SCRIPT)], capture_output=True, text=True, timeout=30,
                         env=_env(CHROMIUM=str(fake), APT_GET="/nonexistent/apt-get"))
    assert out.returncode == 0 and out.stderr == ""


def test_make_test_stops_before_any_setup_or_test():
    out = subprocess.run(["make", "-C", str(ROOT), "test"], capture_output=True, text=True, timeout=60,
                         env=_env(CHROMIUM="/nonexistent/chromium", APT_GET="/nonexistent/apt-get"))
    assert out.returncode != 0
    assert "apt-get install -y chromium" in out.stderr
    assert "pytest" not in out.stdout and "pip install" not in out.stdout
