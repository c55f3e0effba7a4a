"""Standalone HTML export (partial plotly.js bundle, offline, small) and PNG/SVG through kaleido."""

import gzip
import hashlib
import re
import time
import warnings
from importlib import resources

import plotly.graph_objects as go

import pytest

from flashtrace.store.gallery import load_gallery_trace
from flashtrace.analysis.graph import HopGraph
from flashtrace.viz.export import (BUNDLE, bundle_base64, figure_image, image_export_problem, image_session,
                                   standalone_html)
from flashtrace.viz.graph import hop_graph_figure
from flashtrace.viz.report import static_graph, trace_report_html

URL = re.compile(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/", re.I)


@pytest.fixture(scope="module")
def free_form_page():
    trace = load_gallery_trace("free-form")
    assert 140 <= trace.n_tokens <= 160  # the "150-token trace" of the size budget
    return trace_report_html(trace)


def test_vendored_bundle_is_the_cartesian_plotly_js_of_plotly_py():
    import plotly
    from plotly.offline import get_plotlyjs

    root = resources.files("flashtrace.viz").joinpath("vendor")
    js = gzip.decompress(root.joinpath(BUNDLE).read_bytes()).decode()
    assert js.startswith("/**\n* plotly.js (cartesian - minified) v4.1.1")
    assert hashlib.sha256(js.encode()).hexdigest() == "79542150855a52c567260e3137095dbe2b744e6d702a5cabe67da246942fba7a"
    assert "plotly.js v4.1.1" in get_plotlyjs()[:200] and plotly.__version__.startswith("7.")  # same plotly.js
    assert "MIT License" in root.joinpath("LICENSE-plotly.js.txt").read_text()


def test_report_of_a_150_token_trace_is_small_offline_and_promises_no_clicks(free_form_page):
    size = len(free_form_page.encode())
    assert size <= 1_500_000, size  # was 4.97 MB with all of plotly.js
    assert not URL.search(free_form_page)  # no network address anywhere, not even in figure JSON
    assert "click a node" not in free_form_page.lower()
    assert free_form_page.count('data-ft-figure="') == 3  # heatmap, mass per hop, hop graph
    assert bundle_base64() in free_form_page


def test_static_graph_drops_every_click_hint():
    trace = load_gallery_trace("long-vartrack")
    fig = hop_graph_figure(HopGraph.from_trace(trace, 0.0).pruned(node_threshold=0.8, fold=True), trace)
    hovers = [h for tr in fig.data for h in (tr.hovertext or [])]
    assert any("click" in h for h in hovers)  # the app's folded node says how to open it ...
    static = static_graph(fig)
    assert "click" not in static.layout.title.text.lower()
    page = standalone_html("graph", [static]).lower()
    assert "click it" not in page and "switch on" not in page  # ... the static page does not
    assert any("input sentences folded together" in h for tr in static.data for h in (tr.hovertext or []))


def test_standalone_html_escapes_text_and_script_breakouts():
    fig = go.Figure(go.Bar(x=["</script><script>alert(1)</script>"], y=[1], name="{{7*7}}"))
    page = standalone_html("<b>title</b>", ["<p>ok</p>", fig], intro="<i>intro</i>")
    assert "</script><script>alert(1)" not in page and "{{7*7}}" not in page
    assert "&lt;b&gt;title&lt;/b&gt;" in page and "&lt;i&gt;intro&lt;/i&gt;" in page
    assert page.count("<script") == page.count("</script>")
    with pytest.raises(ValueError, match="scatter3d"):
        standalone_html("t", [go.Figure(go.Scatter3d(x=[1], y=[1], z=[1]))])


def test_figure_image_png_and_svg():
    if image_export_problem():
        pytest.skip(image_export_problem())  # the message is what the app shows instead
    fig = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]))
    png = figure_image(fig, "png", 400, 300, scale=1)
    svg = figure_image(fig, "svg", 400, 300)
    assert png.startswith(b"\x89PNG") and b"<svg" in svg[:500]
    with pytest.raises(ValueError):
        figure_image(fig, "gif")


def test_image_session_draws_with_one_browser_and_closes_it():
    """Eval's charts draw several images in one session: a browser kept open across them (an inner session
    leaves the outer one's browser open) and closed when the outer block ends, also after an error."""
    if image_export_problem():
        pytest.skip(image_export_problem())
    import kaleido

    server = kaleido._global_server  # noqa: SLF001
    fig = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]))
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with image_session():
            assert server.is_running()
            with image_session():
                first = figure_image(fig, "png", 300, 200, scale=1)
            assert server.is_running()
            second = figure_image(fig, "png", 300, 200, scale=1)
    assert not server.is_running()
    assert not [w for w in said if "kopts" in str(w.message)]  # plotly's note does not leak into eval's output
    assert first.startswith(b"\x89PNG") and second.startswith(b"\x89PNG")
    with pytest.raises(RuntimeError, match="boom"), image_session():
        raise RuntimeError("boom")
    assert not server.is_running()


@pytest.mark.browser
@pytest.mark.slow
def test_report_opens_offline_in_chromium_quickly(free_form_page, tmp_path):
    from playwright.sync_api import sync_playwright

    from tests.app.browser import launch

    path = tmp_path / "free-form.html"
    path.write_text(free_form_page, encoding="utf-8")
    requests, errors, times = [], [], []
    with sync_playwright() as p:
        browser = launch(p)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.on("request", lambda r: requests.append(r.url))
            page.on("pageerror", lambda e: errors.append(str(e)))
            for _ in range(2):  # the first open also warms the browser up
                start = time.perf_counter()
                page.goto(path.as_uri())
                page.wait_for_selector("body[data-ft-ready='1']", timeout=30_000)
                times.append(time.perf_counter() - start)
            assert page.locator(".plot-container").count() == 3
        finally:
            browser.close()
    print(f"standalone page opened in {times[-1]:.2f} s (first open {times[0]:.2f} s)")
    assert [u for u in requests if not u.startswith(("file:", "data:", "blob:"))] == []
    assert errors == []
    assert times[-1] < 6.0  # generous on a shared CI machine; about 0.5 s measured on an idle one
