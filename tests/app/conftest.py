import json
from pathlib import Path

import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from flashtrace.store.gallery import list_gallery
from flashtrace.store.library import LIBRARY_ENV

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


@pytest.fixture
def library_dir(tmp_path, monkeypatch):
    """An empty temporary library the app reads and writes."""
    folder = tmp_path / "library"
    monkeypatch.setenv(LIBRARY_ENV, str(folder))
    return folder


@pytest.fixture
def open_page(library_dir):
    """``open_page(page, **query)``: run the home page, then switch to `page` with `query` in the URL."""
    def run(page: str | None = None, **query) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=90)
        at.run()
        assert not at.exception, at.exception
        for key, value in query.items():
            at.query_params[key] = value
        if page:
            at.switch_page(page).run()
        return at

    return run


@pytest.fixture(scope="package")
def gallery_app(tmp_path_factory):
    """Base URL of one app server shared by the browser tests that only read gallery traces (one start
    instead of one per test); its library folder is empty and must stay so."""
    from .browser import app_server

    folder = tmp_path_factory.mktemp("gallery-app") / "library"
    with app_server({LIBRARY_ENV: str(folder)}) as url:
        yield url
    assert not list(folder.glob("*.json")), "a test sharing the gallery app server saved a trace"


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium through Playwright, one for a module's browser tests (starting it costs seconds);
    each test opens its own pages and closes them. Every test of such a module takes it: Playwright's sync
    API allows one instance at a time."""
    playwright = pytest.importorskip("playwright.sync_api")
    from .browser import launch

    with playwright.sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


@pytest.fixture(scope="session")
def gallery_items():
    items = list_gallery()
    assert len(items) >= 6, "the gallery is missing; rebuild it with `flashtrace gallery`"
    return items


def charts(at: AppTest) -> dict[str, dict]:
    """Plotly figure JSON of every chart on the page, by the view name in its layout meta."""
    out = {}
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        out[spec["layout"].get("meta", {}).get("view", f"chart{len(out)}")] = spec
    return out


def figure(spec: dict) -> go.Figure:
    return go.Figure(spec)


def no_problems(at: AppTest) -> None:
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def literal(markdown: str) -> str:
    """What `ui.plain`-escaped Markdown shows: backslash escapes and word joiners removed."""
    import re

    from flashtrace.app.ui import WORD_JOINER

    return re.sub(r"\\(.)", r"\1", markdown).replace(WORD_JOINER, "").replace("  \n", "\n")
