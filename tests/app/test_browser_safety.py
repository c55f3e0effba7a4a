"""Real-browser check that data is never rendered as Markdown or HTML (issue 13, item 8).

A library trace whose title, model name, family, method and segment ids hold Markdown images, links,
colour directives and raw HTML pointing at a local listener, an unreadable file whose error repeats such
text, and a ``?trace=`` link made of it: every page that shows them must make no request to the listener,
hold no link or image pointing at it, and show the text literally."""

from __future__ import annotations

import http.server
import threading
from urllib.parse import quote

import pytest

from flashtrace.store.gallery import load_gallery_trace
from flashtrace.store.library import LIBRARY_ENV, Library
from flashtrace.app.ui import WORD_JOINER

from .browser import app_server, launch, settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def listener():
    """``(port, requests)``: a loopback HTTP server that records every path asked of it."""
    seen: list[str] = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the stdlib's name
            seen.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], seen
    server.shutdown()


def hostile(port: int) -> dict[str, str]:
    base = f"http://127.0.0.1:{port}"
    return {"title": f"![x]({base}/title.png) [Click here]({base}/login) <img src={base}/img.png>",
            "model": f"![m]({base}/model.png) :red[ALERT]",
            "family": f"[Click here]({base}/family)",
            "method": f"<img src={base}/method.png> **m**",
            "segment": ":red[S1]",
            "url": f"lib:![u]({base}/url.png)"}


def test_hostile_trace_fields_show_as_literal_text(tmp_path, listener):
    playwright = pytest.importorskip("playwright.sync_api")
    port, seen = listener
    bad = hostile(port)
    base = load_gallery_trace("arithmetic")
    renamed = {s.id: (bad["segment"] if s.id == "S1" else s.id) for s in base.segments}  # a reasoning step
    trace = base.model_copy(update={
        "title": bad["title"], "model": base.model.model_copy(update={"name": bad["model"], "family": bad["family"]}),
        "settings": base.settings.model_copy(update={"method": bad["method"]}),
        "segments": [s.model_copy(update={"id": renamed[s.id]}) for s in base.segments],
        "steps": base.steps.model_copy(update={"vectors": {renamed[k]: v for k, v in base.steps.vectors.items()}}),
        "interventions": base.interventions.model_copy(update={"edits": [  # its edits name the segments too
            e.model_copy(update={"segments": [renamed[i] for i in e.segments]}) for e in base.interventions.edits]})})
    library = tmp_path / "library"
    name = Library(library).save(trace, "hostile_name_")
    (library / "broken.json").write_text('{"schema_version": "![e](http://127.0.0.1:%d/error.png) :red[E]"}' % port)

    pages = {"home": ("", [bad["model"]]),
             "library": ("Library", [":red[E]", "error.png"]),  # the title sits in the table (a canvas)
             "explore": (f"Explore?trace=lib:{name}", [bad["model"], bad["family"], bad["method"]]),
             "bad link": (f"Explore?trace={bad['url']}", [bad["url"]]),
             "compare": (f"Compare?trace=lib:{name}", [bad["model"]]),
             "hop graph": (f"Hop_graph?trace=lib:{name}&node={quote(bad['segment'])}&details=1",  # ids shown
                           [bad["segment"] + ": "]),
             "story": (f"Story?trace=lib:{name}", [bad["model"]])}
    with app_server({LIBRARY_ENV: str(library)}) as url, playwright.sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        for label, (path, literals) in pages.items():
            page.goto(f"{url}/{path}", timeout=90_000)
            page.locator('[data-testid="stSidebar"]').wait_for(timeout=90_000)
            settle(page)
            if label == "compare":
                page.get_by_role("tab", name="Methods").click()
                settle(page)
            page.screenshot(path=str(tmp_path / f"{label.replace(' ', '_')}.png"), full_page=True)
            text = page.locator("body").inner_text().replace(WORD_JOINER, "")
            for literal in literals:
                assert literal in text, (label, literal)
            leaks = page.evaluate("""(port) => [...document.querySelectorAll('a[href], img[src]')]
                .map(e => e.getAttribute('href') || e.getAttribute('src') || '')
                .filter(u => u.includes(':' + port))""", port)
            assert leaks == [], (label, leaks)
        browser.close()
    assert seen == []  # no page made the browser fetch anything from the listener
