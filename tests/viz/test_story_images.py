"""The Story's PNG and SVG exports cut nothing off (issue 27): every figure of two gallery Stories drawn by
kaleido, the SVG measured in chromium (every text inside the image, with room to spare) and the PNG's
outermost pixels blank (nothing runs into the edge). A figure drawn to clip shows the check can fail."""

from __future__ import annotations

import io

import plotly.graph_objects as go
import pytest

from flashtrace.analysis.story import story_panels
from flashtrace.store.gallery import load_gallery_trace
from flashtrace.viz.export import figure_image, image_export_problem
from flashtrace.viz.story import panel_figures

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# texts of the SVG whose box is not inside the image by at least one pixel
CUT = """() => {
    const svg = document.querySelector('svg'), box = svg.getBoundingClientRect();
    return [...svg.querySelectorAll('text')].filter((t) => t.textContent.trim()).map((t) => [t.textContent,
        t.getBoundingClientRect()]).filter(([, r]) => r.width > 0 && (r.left < box.left + 1 || r.right > box.right - 1
        || r.top < box.top + 1 || r.bottom > box.bottom - 1)).map(([t]) => t);
}"""


def cut_texts(page, fig: go.Figure) -> list[str]:
    svg = figure_image(fig, "svg").decode("utf-8")
    page.set_content(f'<html><body style="margin:0">{svg}</body></html>')
    return page.evaluate(CUT)


def touches_edge(fig: go.Figure) -> bool:
    """Whether any of the PNG's two outermost rows or columns of pixels holds something other than paper."""
    from PIL import Image

    image = Image.open(io.BytesIO(figure_image(fig, "png", scale=1))).convert("RGB")
    w, h = image.size
    edge = [(x, y) for x in range(w) for y in (0, 1, h - 2, h - 1)]
    edge += [(x, y) for y in range(h) for x in (0, 1, w - 2, w - 1)]
    return any(image.getpixel(xy) != (255, 255, 255) for xy in edge)


@pytest.fixture
def kaleido_server():
    """One kaleido browser for every image of the test, instead of one started per image (the images are
    the same; test_export.py draws through the one-shot path)."""
    if image_export_problem():
        pytest.skip(image_export_problem())
    import kaleido

    kaleido.start_sync_server(silence_warnings=True)
    yield
    kaleido.stop_sync_server(silence_warnings=True)


@pytest.mark.filterwarnings("ignore:The kopts argument is ignored")  # plotly's request headers: no download here
def test_story_figures_export_without_cut_labels(kaleido_server):
    playwright = pytest.importorskip("playwright.sync_api")
    from tests.app.browser import launch

    clipped = go.Figure(go.Bar(y=["a label far too long for no margin at all"], x=[1], orientation="h"))
    clipped.update_layout(margin={"l": 0, "r": 0, "t": 0, "b": 0}, yaxis={"automargin": False}, height=200)
    problems = []
    with playwright.sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page()
        assert cut_texts(page, clipped) and touches_edge(clipped)  # the checks see a cut label
        for name in ("long-vartrack", "arithmetic"):
            trace = load_gallery_trace(name)
            for panel in story_panels(trace):
                for fig in panel_figures(trace, panel):
                    view = fig.layout.meta["view"]
                    problems += [f"{name} {view} SVG: {text!r} cut off" for text in cut_texts(page, fig)]
                    if touches_edge(fig):
                        problems.append(f"{name} {view} PNG: something runs into the edge")
        browser.close()
    assert problems == []
