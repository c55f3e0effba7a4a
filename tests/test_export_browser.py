"""An exported trace page with hostile token text: nothing unescaped, no network, no script errors."""

import shutil

import pytest

from flashtrace.analysis.graph import HopGraph
from flashtrace.run.tracing import attribute, prepare
from flashtrace.viz.graph import hop_graph_figure
from flashtrace.viz.report import trace_report_html
from tests.app.test_browser_pages import CHART_PROBLEMS
from tests.conftest import _load

# The heatmap's view buttons must not cover its title or colour keys (they did once, at the top-left).
MENU_OVERLAPS = """() => {
    const overlap = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
    const problems = [];
    document.querySelectorAll('.js-plotly-plot').forEach((gd) => {
        const others = [...gd.querySelectorAll('g.colorbar, .g-gtitle text')].map((e) => e.getBoundingClientRect())
            .filter((r) => r.width > 0 && r.height > 0);
        for (const button of gd.querySelectorAll('.updatemenu-button'))
            if (others.some((r) => overlap(button.getBoundingClientRect(), r)))
                problems.push(`view button "${button.textContent}" covers the title or a colour key`);
    });
    return problems;
}"""

HOSTILE = ['<script>alert(1)</script>', '" onmouseover="', '</textarea>', '{{7*7}}']
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def hostile_page(tmp_path_factory):
    prompt = "Mind these: " + " ".join(HOSTILE) + "\nTom has 3 cats and 2 dogs. How many pets?"
    trace = attribute(prepare(_load("tiny-llama"), prompt, "3 cats + 2 dogs = 5.\nAnswer: 5"), hops=1, steps=True)
    tokens = list(trace.tokens)
    for i, text in enumerate(HOSTILE):  # whole hostile strings as single tokens, not only split by the tokenizer
        pos = trace.positions("prompt")[i]
        tokens[pos] = tokens[pos].model_copy(update={"text": text})
    trace = trace.model_copy(update={"tokens": tokens, "title": "title " + " ".join(HOSTILE)})
    page = trace_report_html(trace, hop_graph_figure(HopGraph.from_trace(trace), trace))
    path = tmp_path_factory.mktemp("export") / "trace.html"
    path.write_text(page, encoding="utf-8")
    return path, page


def test_no_hostile_string_appears_unescaped(hostile_page):
    _, page = hostile_page
    for text in HOSTILE:
        assert text not in page, text


@pytest.mark.browser
@pytest.mark.slow
def test_page_loads_offline_without_requests_or_errors(hostile_page):
    from playwright.sync_api import sync_playwright

    path, _ = hostile_page
    requests, errors, dialogs = [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.on("request", lambda r: requests.append(r.url))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(path.as_uri())
            page.wait_for_selector(".plot-container", timeout=30_000)
            page.wait_for_timeout(500)
            assert page.locator(".plot-container").count() >= 2  # heatmap, mass per hop (and the graph)
            body = page.inner_text("body")
            drawn = []  # chart problems in the combined view and after switching to hop 1
            for view in ("combined", "hop 1"):
                page.locator(".updatemenu-button", has_text=view).first.click()
                page.wait_for_timeout(500)
                drawn += [f"{view}: {p}" for p in page.evaluate(CHART_PROBLEMS) + page.evaluate(MENU_OVERLAPS)]
        finally:
            browser.close()
    assert [u for u in requests if not u.startswith(("file:", "data:", "blob:"))] == []
    assert errors == [] and dialogs == []
    assert drawn == []
    assert "<script>alert(1)</script>" in body  # shown as text, never run
