"""Export where you look: Explore, Hop graph and Story each offer the current view as an offline HTML page
and its chart as PNG/SVG (files made on click; the Story browser test downloads them)."""

import pytest

from flashtrace.app.export import file_stem
from flashtrace.viz.export import image_export_problem

from .conftest import no_problems


@pytest.mark.parametrize("page, query", [("pages/2_Explore.py", {"view": "heatmap"}),
                                         ("pages/2_Explore.py", {"view": "text"}),
                                         ("pages/3_Hop_graph.py", {}), ("pages/7_Story.py", {"step": "3"})])
def test_pages_offer_html_png_and_svg_of_the_view(open_page, page, query):
    at = open_page(page, trace="gallery:free-form", **query)
    no_problems(at)
    buttons = {b.proto.label: b.proto for b in at.get("download_button")}
    assert {"HTML (offline page)", "PNG (main chart)", "SVG (main chart)"} <= set(buttons)
    assert not buttons["HTML (offline page)"].disabled and buttons["HTML (offline page)"].deferred_file_id
    has_chart = query.get("view") != "text"
    images_possible = image_export_problem() is None
    for fmt in ("PNG", "SVG"):
        button = buttons[f"{fmt} (main chart)"]
        assert button.disabled == (not (has_chart and images_possible))
        if button.disabled:
            assert "Not available here" in button.help  # says why, never a dead button


def test_file_stem_is_safe():
    assert file_stem("../a b/<c>") == "a-b-c"
    assert file_stem("") == "flashtrace"
