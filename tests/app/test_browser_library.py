"""Real-browser check of the Library after a delete (issue 13, item 13): the selectbox, the rename field and
the delete box all show the trace that is now selected (the browser used to keep showing the deleted one
while rename, open and the still-ticked delete box pointed at the next)."""

import pytest

from flashtrace.store.gallery import load_gallery_trace
from flashtrace.store.library import LIBRARY_ENV, Library

from .browser import app_server, launch, settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_after_a_delete_every_widget_shows_the_next_trace(tmp_path):
    playwright = pytest.importorskip("playwright.sync_api")
    lib = Library(tmp_path / "library")
    trace = load_gallery_trace("arithmetic")
    for name in ("alpha", "beta", "gamma"):
        lib.save(trace, name)
    with app_server({LIBRARY_ENV: str(lib.root)}) as url, playwright.sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{url}/Library", timeout=90_000)
        page.get_by_role("heading", name="Library").wait_for(timeout=90_000)
        settle(page)
        selected = page.locator('[data-testid="stSelectbox"]').filter(has_text="Selected trace").locator("input")
        selected.click()
        page.get_by_role("option", name="beta", exact=True).click()
        settle(page)
        assert selected.input_value() == "beta"
        page.get_by_text("Yes, delete 'beta' for good").click()
        settle(page)
        page.get_by_role("button", name="Delete", exact=True).click()
        page.get_by_text("Deleted").wait_for(timeout=60_000)
        settle(page)
        page.screenshot(path=str(tmp_path / "library_after_delete.png"), full_page=True)
        remaining = sorted(e.name for e in lib.entries())
        assert remaining == ["alpha", "gamma"]
        shown = selected.input_value()
        assert shown in remaining
        assert page.get_by_label("Rename to", exact=True).input_value() == shown
        box = page.locator('[data-testid="stCheckbox"]').filter(has_text="for good")
        assert box.inner_text().strip() == f"Yes, delete '{shown}' for good"
        assert not box.locator("input").is_checked()
        browser.close()
