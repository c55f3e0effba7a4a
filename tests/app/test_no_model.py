"""The gallery opens with no model loaded, and browsing works while another tab holds the model."""

import pytest

from flashtrace.app import state as app_state

from .conftest import no_problems


@pytest.fixture
def no_models(monkeypatch):
    app_state.cached_model.clear()

    def refuse(*_a, **_k):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(app_state, "load_model", refuse)


@pytest.mark.parametrize("page", ["pages/2_Explore.py", "pages/3_Hop_graph.py", "pages/4_Compare.py"])
def test_every_gallery_trace_opens_without_a_model(open_page, gallery_items, no_models, page):
    for item in gallery_items:
        at = open_page(page, trace=f"gallery:{item.name}")
        no_problems(at)
        assert at.get("plotly_chart"), item.name


def test_browsing_is_not_blocked_by_a_running_trace(open_page, gallery_items):
    lock = app_state.model_lock()
    assert lock.acquire(timeout=30)
    try:  # another tab holds the model: viewing traces still works
        at = open_page("pages/2_Explore.py", trace=f"gallery:{gallery_items[0].name}")
        no_problems(at)
        assert at.get("plotly_chart")
    finally:
        lock.release()
