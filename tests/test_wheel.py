"""`pip install` then `flashtrace app`, outside the checkout: the wheel carries the app (app.py, pages/,
.streamlit/) and the gallery. Builds the wheel, installs it into a fresh virtualenv that reuses this
environment's pinned packages (no download), serves the app from a folder far from the checkout and
opens its home page in Chromium."""

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.app.browser import free_port, launch, serving, settle

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.browser]


def _run(*cmd, **kwargs):
    return subprocess.run([str(c) for c in cmd], check=True, capture_output=True, text=True, timeout=300, **kwargs)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    _run(sys.executable, "-m", "pip", "wheel", ROOT, "--no-deps", "--no-build-isolation", "-q", "-w", tmp / "dist")
    wheel = next((tmp / "dist").glob("flashtrace_studio-*.whl"))
    venv = tmp / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").stdout.strip())
    # from a folder outside the checkout, so pip does not take the build's egg-info for an installed copy
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "-q", wheel, cwd=tmp,
         env=_clean_env())
    assert (site / "flashtrace" / "_app" / "app.py").is_file()
    # then let the new environment see this one's packages (torch, streamlit, ...) after its own
    (site / "reuse-test-env.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return venv, tmp


def _clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FLASHTRACE_GALLERY", "VIRTUAL_ENV")}
    return {**env, **extra}


def test_the_installed_package_is_the_wheel_not_the_checkout(installed):
    venv, tmp = installed
    out = _run(venv / "bin" / "python", "-c",
               "import flashtrace, flashtrace.store.gallery as g; print(flashtrace.__file__); print(g.gallery_dir())",
               cwd=tmp, env=_clean_env()).stdout.split()
    assert out[0].startswith(str(venv)) and out[1].startswith(str(venv)), out
    assert (Path(out[1]) / "index.json").is_file()


def test_flashtrace_app_serves_the_gallery_outside_the_checkout(installed):
    venv, tmp = installed
    port = free_port()
    index = json.loads((ROOT / "assets" / "gallery" / "index.json").read_text())
    titles = [item["title"] for item in (index["items"] if isinstance(index, dict) else index)]
    command = [str(venv / "bin" / "flashtrace"), "app", "--headless", "--port", str(port), "--address", "127.0.0.1"]
    with serving(command, port, tmp, _clean_env(FLASHTRACE_LIBRARY=str(tmp / "library")), timeout=120) as url:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = launch(p)
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.goto(url)
            page.get_by_role("heading", name="FlashTrace Studio").wait_for(timeout=90_000)
            settle(page)
            body = page.inner_text("body")
            browser.close()
        assert "Traceback" not in body
        assert all(title in body for title in titles[:3]), body[:2000]
