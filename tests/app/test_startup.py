"""The first page stays light: Home's modules never import the engine (torch, transformers), and the page
icon is a file the app serves itself (a :material: or emoji icon makes the browser call a font host)."""

import subprocess
import sys

from flashtrace.app import ui

from .conftest import ROOT


def test_home_modules_do_not_import_the_engine():
    code = ("import sys, flashtrace, flashtrace.app.ui, flashtrace.app.state, flashtrace.store.gallery, flashtrace.store.library, "
            "flashtrace.analysis.story\n"
            "heavy = sorted(m for m in ('torch', 'transformers', 'accelerate', 'numba') if m in sys.modules)\n"
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_public_api_still_loads_the_engine_on_use():
    """The lazy names resolve to the engine's own functions on first use (not only to something callable)."""
    code = ("import sys, flashtrace\n"
            "from flashtrace.engine.models import load_model\n"
            "from flashtrace.run.tracing import attribute\n"
            "assert flashtrace.load_model is load_model and flashtrace.attribute is attribute\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"  # using them loaded the engine


def test_page_icon_is_a_local_file():
    assert ui.FAVICON.is_file() and ui.FAVICON.read_bytes().startswith(b"\x89PNG")
    source = (ROOT / "flashtrace" / "app" / "ui.py").read_text(encoding="utf-8")
    assert 'page_icon=":' not in source
