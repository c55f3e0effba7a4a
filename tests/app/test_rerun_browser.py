"""Edit and re-run in a real browser (Debian's chromium): in the Story of a gallery trace (made with the tiny
model, so the run takes seconds), remove the top sentence, see the new answer, the log-probability change
and the difference heatmap, export the pair, and open the export with every non-file request blocked:
none is attempted and all three charts draw. Screenshots go to test-artifacts/."""

from contextlib import contextmanager
from pathlib import Path

import pytest

from flashtrace.analysis.diff import default_edit, editable
from flashtrace.engine.models import load_model
from flashtrace.run.tracing import attribute, prepare
from flashtrace.store.gallery import GALLERY_ENV
from flashtrace.store.library import LIBRARY_ENV

from .browser import ROOT, app_server, settle
from .test_interventions_panel import PROMPT, RESPONSE

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="module")
def gallery(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gallery")
    trace = attribute(prepare(load_model("tiny-llama"), PROMPT, RESPONSE), hops=1, steps=True, title="Balls")
    trace.save(folder / "balls.json")
    return folder, trace


OVERLAPS = """() => [...document.querySelectorAll('.js-plotly-plot')].filter(
  plot => plot.querySelector('.heatmaplayer')).map(plot => {
    const boxes = [...plot.querySelectorAll('.heatmaplayer text')].map(t => t.getBoundingClientRect())
      .filter(b => b.width > 0);
    let overlaps = 0;
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], b = boxes[j];
      if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1) overlaps++;
    }
    return [boxes.length, overlaps];
  })"""


def _label_overlaps(page) -> list[list[int]]:
    """Per heatmap on the page: [token labels drawn, pairs of labels that overlap]."""
    return page.evaluate(OVERLAPS)


def _offline(browser, path: Path) -> tuple[list[str], int]:
    """Open `path` in a fresh browser context (nothing cached) that blocks every request but file:// ones;
    the requests attempted and the number of charts drawn."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    attempted = []
    try:
        page = context.new_page()

        def block(route):
            if route.request.url.startswith("file://"):
                route.continue_()
            else:
                attempted.append(route.request.url)
                route.abort()

        page.route("**/*", block)
        page.goto(path.as_uri())
        page.wait_for_selector("body[data-ft-ready='1']", timeout=30_000)
        drawn = page.locator(".ft-figure.js-plotly-plot").count()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "rerun-export.png"), full_page=True)
    finally:
        context.close()
    return attempted, drawn


@contextmanager
def _edit_panel(tmp_path, folder, browser):
    """The app on the tiny gallery in a new page of `browser` (the module's chromium), at the Story's step 4
    with the edit-and-re-run panel open: yields the page."""
    env = {GALLERY_ENV: str(folder), LIBRARY_ENV: str(tmp_path / "library")}
    with app_server(env) as url:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        try:
            page.goto(f"{url}/Story?trace=gallery:balls&step=4", timeout=90_000)
            page.get_by_text("Prove it live: edit and re-run").wait_for(timeout=90_000)
            settle(page)
            page.get_by_text("Prove it live: edit and re-run").click()
            yield page
        finally:
            page.close()


def test_remove_the_top_sentence_in_the_story_and_export_the_pair(tmp_path, gallery, browser):
    folder, trace = gallery
    top = default_edit(trace)
    with _edit_panel(tmp_path, folder, browser) as page:
        page.get_by_role("button", name="Edit and re-run", exact=True).wait_for(timeout=30_000)
        settle(page)
        chosen = page.locator('[data-testid="stMultiSelect"]').inner_text()
        assert editable(trace)[top][:20] in chosen and f"{top}:" not in chosen  # the top evidence sentence, no id
        page.get_by_role("button", name="Edit and re-run", exact=True).click()
        try:
            page.locator('[data-testid="stMetric"]').first.wait_for(timeout=120_000)
        except Exception:
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "rerun-failure.png"), full_page=True)
            raise AssertionError(page.inner_text("body")[-3000:])
        settle(page)
        new_answer = page.locator(".st-key-rerun_new_answer").inner_text()
        assert new_answer.startswith("The answer the model now writes (greedy)"), new_answer
        assert page.locator('[data-testid="stMetricDelta"]').inner_text().endswith("nats")
        page.get_by_text("Difference: edited minus original").wait_for(timeout=30_000)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "rerun-story.png"), full_page=True)
        heatmaps = _label_overlaps(page)  # the original's, the edited trace's and the difference: labels apart
        assert len(heatmaps) >= 3 and all(drawn > 0 and overlaps == 0 for drawn, overlaps in heatmaps), heatmaps
        with page.expect_download(timeout=60_000) as download:
            page.get_by_role("button", name="Pair (offline HTML)").click()
        exported = tmp_path / "pair.html"
        download.value.save_as(exported)
        text = exported.read_text(encoding="utf-8")
        assert "log-probability after" in text and "new answer (greedy)" in text
        attempted, drawn = _offline(browser, exported)
    assert attempted == []
    assert drawn == 3  # the original's heatmap, the edited trace's and the difference


def test_cancel_stops_the_re_run_and_keeps_nothing(tmp_path, gallery, browser):
    folder, _trace = gallery
    with _edit_panel(tmp_path, folder, browser) as page:
        box = page.locator('[data-testid="stNumberInputField"]')
        box.wait_for(timeout=30_000)
        box.fill("1024")  # the longest generation: a run long enough to cancel
        box.press("Enter")
        page.get_by_text("write up to 1024 new tokens").wait_for(timeout=30_000)
        settle(page)
        page.get_by_role("button", name="Edit and re-run", exact=True).click()
        page.get_by_role("button", name="Cancel").wait_for(timeout=60_000)
        page.wait_for_timeout(500)  # into the run (scoring is instant with the tiny model; generation follows)
        page.get_by_role("button", name="Cancel").click()
        page.get_by_role("button", name="Cancel").wait_for(state="detached", timeout=30_000)
        page.get_by_text("Cancelled: nothing was kept").wait_for(timeout=30_000)
        assert page.locator('[data-testid="stMetric"]').count() == 0  # no result kept
