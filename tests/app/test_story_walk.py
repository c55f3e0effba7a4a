"""Acceptance walk of the Story (issue 27) in a real browser at 1280×720: every gallery trace in the normal view,
stepping with the Next button, and a chosen few in the presenter view, stepping with the keyboard; no page
makes a request to a host other than the app or raises a JavaScript error. At each step:

- the step is addressable by URL (``step=N``); in the normal view "Step N of 5" shows, the last step's Next
  is disabled, the evidence step highlights the prompt, and each step of one trace (needle) is saved as a
  screenshot to test-artifacts/;
- the panel's main content lies wholly inside the first screen, nothing scrolled: step 1's question,
  reasoning and answer (and none of them scrolls inside its box), later steps' every figure;
- no two visible labels of a figure (tick labels, legend entries) are identical;
- every claim the caption shown makes about the top prompt sentence holds when recomputed from the trace file
  (`tests.story_claims`; `tests/test_story_gallery_claims.py` checks every caption of every trace without a
  browser, so the presenter view's captions are covered there);
- where the trace knows its evidence (gold), the evidence views show it: the sentence bars outline a gold
  bar, the highlighted prompt underlines gold tokens; Explore's heatmap and text view and the Hop graph show
  it too, for one gold trace of each task (they draw every trace with the same code).

The presenter view is walked for the traces that stress its layout most (`PRESENTER`): the longest trace of each
model and each model's first failure. Walking every trace in both views took 263 s of a worker.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import pytest

from flashtrace.analysis.facts import analyse
from flashtrace.analysis.failure import failure_of
from flashtrace.analysis.story import STEPS, TITLES, stored_check, story_panels
from flashtrace.store.gallery import gallery_path, list_gallery, load_gallery_trace

from flashtrace.viz.story import panel_figures

from ..story_claims import Claims
from .browser import ROOT, external, settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]
WIDTH, HEIGHT = 1280, 720
GOLD_RGB = "rgb(184, 134, 11)"  # viz.colors.GOLD
ARTIFACTS = ROOT / "test-artifacts"

# Every plotly figure on the page: its rectangle and its visible tick labels and legend entries.
FIGURES = """() => [...document.querySelectorAll('.js-plotly-plot')].map((gd) => {
    const r = gd.querySelector('svg.main-svg').getBoundingClientRect();
    const texts = [...gd.querySelectorAll('.xtick text, .ytick text, .legend .traces text')]
        .filter((t) => { const b = t.getBoundingClientRect(); return b.width > 0 && b.height > 0; })
        .map((t) => t.textContent.trim()).filter((t) => t);
    const gold = [...gd.querySelectorAll('.barlayer path')].some((p) => (p.style.stroke || '') === '%s');
    return {view: (gd._fullLayout.meta || {}).view, top: r.top, bottom: r.bottom, left: r.left, right: r.right,
            labels: texts, gold: gold, meta_gold: ((gd._fullLayout.meta || {}).gold || []).length};
})""" % GOLD_RGB

# Step 1's text blocks: rectangle, and whether the text scrolls inside its box.
TEXTS = """() => [...document.querySelectorAll('.ft-question, .ft-reasoning, .ft-answer')].map((e) => {
    const r = e.getBoundingClientRect(), body = e.querySelector('.ft-text-body');
    return {cls: e.className, top: r.top, bottom: r.bottom, scrolls: body.scrollHeight > body.clientHeight + 1};
})"""

SCROLLED = """() => Math.max(window.scrollY, ...[...document.querySelectorAll(
    '[data-testid="stMain"], [data-testid="stAppViewContainer"]')].map((e) => e.scrollTop))"""


def check_step(page, step: str, doc: dict, claims: Claims, problems: list[str], where: str) -> None:
    """Record what is wrong with the step as drawn now."""
    assert page.evaluate(SCROLLED) == 0, where
    if step == "question":
        texts = page.evaluate(TEXTS)
        assert len(texts) == (3 if any(t["role"] == "reasoning" for t in doc["tokens"]) else 2), (where, texts)
        problems += [f"{where}: {t['cls']} not fully on screen ({t['top']:.0f}–{t['bottom']:.0f})"
                     for t in texts if t["top"] < 0 or t["bottom"] > HEIGHT]
        problems += [f"{where}: {t['cls']} scrolls inside its box" for t in texts if t["scrolls"]]
        return
    figures = page.evaluate(FIGURES)
    for fig in figures:
        if fig["top"] < 0 or fig["bottom"] > HEIGHT or fig["left"] < 0 or fig["right"] > WIDTH:
            problems.append(f"{where}: {fig['view']} at {fig['top']:.0f}–{fig['bottom']:.0f} px, not fully on screen")
        twins = sorted({t for t in fig["labels"] if fig["labels"].count(t) > 1})
        if twins:
            problems.append(f"{where}: {fig['view']} shows identical labels {twins}")
        if doc["extra"].get("gallery", {}).get("gold") and fig["view"] in ("story_direct_sentences", "story_evidence"):
            if not (fig["gold"] and fig["meta_gold"]):
                problems.append(f"{where}: {fig['view']} shows no gold bar")
    caption = page.locator(".st-key-story_caption").inner_text()
    if claims.check(step, caption) is None and step != "check":
        problems.append(f"{where}: no claim about the top sentence found in {caption!r}")


def open_edited_version(page, trace) -> None:
    """A failure's edited version opens from its Story's link, and its answer is the one the failure step names."""
    record = trace.extra["gallery"]["edit_result"]
    page.get_by_role("button", name=f"Open {record['name']}").click()
    page.get_by_role("heading", name=TITLES["question"]).wait_for(timeout=60_000)
    page.wait_for_function(f"() => location.search.includes('gallery%3A{record['name']}') || "
                           f"location.search.includes('gallery:{record['name']}')", timeout=30_000)
    answer = page.locator(".ft-answer .ft-text-body").inner_text().strip()
    assert record["answer"] in answer, (record, answer)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"story-edited-{record['name']}.png"))


def check_normal_view(page, trace, number: int, step: str, name: str, steps: int = len(STEPS)) -> None:
    """What the normal view shows at each step besides the panel: "Step N of M", a drawn bar chart where
    the step has one (a precomputed check is drawn with no model), the highlighted prompt on the evidence
    step; one trace's steps, and each failure step, are saved as screenshots."""
    assert page.get_by_text(f"Step {number} of {steps}").count() == 1
    if step == "failure":
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"story-{name}-failure.png"))
    if step in ("direct", "hops", "evidence") or (step == "check" and stored_check(trace)):
        page.locator(".js-plotly-plot .barlayer").first.wait_for(timeout=30_000)
    if step == "evidence":
        assert page.locator(".ft-tok").count() > 10  # the prompt, highlighted
    if name == "needle":
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"story-{number}-{step}.png"))


def walk(page, url: str, name: str, present: bool, problems: list[str]) -> None:
    doc = json.loads(gallery_path(name).read_text(encoding="utf-8"))
    claims = Claims(doc)
    trace = TRACES[name]
    panels = story_panels(trace)  # the five steps, and a failure's sixth
    drawn = [len(panel_figures(trace, panel)) for panel in panels]  # figures each step draws
    keys = [p.key for p in panels]
    page.goto(f"{url}/Story?trace=gallery:{name}&step=1" + ("&present=1" if present else ""), timeout=90_000)
    for number, step in enumerate(keys, start=1):
        page.get_by_role("heading", name=TITLES[step]).wait_for(timeout=60_000)
        settle(page)
        bars = f"() => document.querySelectorAll('.js-plotly-plot .barlayer').length == {drawn[number - 1]}"
        page.wait_for_function(bars, timeout=30_000)
        assert f"step={number}" in page.url
        where = f"{name} step {number}{' (presenter)' if present else ''}"
        if not present:
            check_normal_view(page, trace, number, step, name, len(keys))
        check_step(page, step, doc, claims, problems, where)
        if step == "evidence" and not present and doc["extra"].get("gallery", {}).get("gold"):
            page.get_by_text("The whole prompt, highlighted").click()
            gold = page.locator(".ft-tokens .ft-gold").first
            gold.wait_for(timeout=30_000)
            gold.scroll_into_view_if_needed()
            if not gold.is_visible():
                problems.append(f"{where}: no gold token visible in the highlighted prompt")
            page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTo(0, 0)")
        if present:
            page.keyboard.press("ArrowRight")
        elif number < len(keys):
            page.get_by_role("button", name="Next").click()
        else:
            assert page.get_by_role("button", name="Next").is_disabled()
    if "failure" in keys and not present and "edit_result" in doc["extra"]["gallery"]:  # an original with its edit
        open_edited_version(page, trace)


# one test per gallery trace and view, so that pytest-xdist can share the walks between its workers
GALLERY = [item.name for item in list_gallery()]
TRACES = {name: load_gallery_trace(name) for name in GALLERY}


def _fails(name: str) -> bool:
    """Whether the trace's Story has a failure step (an honest failure: `analysis.failure`)."""
    return failure_of(TRACES[name], analyse(TRACES[name])) is not None


WITH_GOLD = [name for name in GALLERY if TRACES[name].extra.get("gallery", {}).get("gold")]


def _presenter_walks() -> list[str]:
    """Per model, its longest trace (the most text to fit) and its first failure (the extra step)."""
    chosen: list[str] = []
    for model in dict.fromkeys(t.model.name for t in TRACES.values()):
        mine = [n for n in GALLERY if TRACES[n].model.name == model]
        chosen.append(max(mine, key=lambda n: len(TRACES[n].tokens)))
        chosen += [n for n in mine if _fails(n)][:1]
    return list(dict.fromkeys(chosen))


def _gold_per_task() -> list[str]:
    """The first gold trace of each gallery task."""
    return list({TRACES[n].extra["gallery"].get("task"): n for n in reversed(WITH_GOLD)}.values())[::-1]


PRESENTER = _presenter_walks()
GOLD_VIEWS = _gold_per_task()


@pytest.fixture(scope="module")
def screen(browser):
    """One 1280×720 page for the module's walks, each opening its trace by URL: a page's first load starts a
    renderer and compiles the app's scripts (seconds of CPU); a reload in the same tab reuses both. The walks only
    read gallery traces, so nothing one leaves behind changes the next."""
    page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    yield page
    page.close()


@pytest.fixture
def watched(screen):
    """`screen` (``.page``), with the requests it makes to another host (``.outside``) and its JavaScript errors
    (``.errors``) collected for one test; the collectors are removed afterwards."""
    outside, errors = [], []  # requests to another host, JavaScript errors

    def request(r):
        if external(r.url):
            outside.append(r.url)

    def error(e):
        errors.append(str(e))

    screen.on("request", request)
    screen.on("pageerror", error)
    yield SimpleNamespace(page=screen, outside=outside, errors=errors)
    screen.remove_listener("request", request)
    screen.remove_listener("pageerror", error)


def test_the_gallery_has_stories_to_walk():
    assert len(GALLERY) >= 6 and len(WITH_GOLD) >= 6, (GALLERY, WITH_GOLD)
    failures = [n for n in GALLERY if _fails(n)]
    assert failures and set(failures[:1]) <= set(PRESENTER), (failures, PRESENTER)
    assert max(GALLERY, key=lambda n: len(TRACES[n].tokens)) in PRESENTER
    tasks = {TRACES[n].extra["gallery"].get("task") for n in WITH_GOLD}
    assert {TRACES[n].extra["gallery"].get("task") for n in GOLD_VIEWS} == tasks and len(GOLD_VIEWS) == len(tasks)


WALKS = [(name, False) for name in GALLERY] + [(name, True) for name in PRESENTER]


@pytest.mark.parametrize(("name", "present"), WALKS, ids=[f"{n}-{'presenter' if p else 'normal'}" for n, p in WALKS])
def test_every_gallery_story_fits_the_screen_and_tells_the_truth(gallery_app, name, present, watched):
    problems: list[str] = []
    walk(watched.page, gallery_app, name, present, problems)
    assert problems == [], "\n".join(problems)
    assert watched.outside == []
    assert watched.errors == []


# A view's gold, as drawn: the figure's meta.gold, and marks stroked in gold (heatmap outlines, graph rings).
GOLD_DRAWN = """() => [...document.querySelectorAll('.js-plotly-plot')].map((gd) => ({
    view: (gd._fullLayout.meta || {}).view, listed: ((gd._fullLayout.meta || {}).gold || []).length,
    marks: [...gd.querySelectorAll('.shapelayer path, .scatterlayer .point')]
        .filter((p) => (p.style.stroke || '') === '%s' && p.getBoundingClientRect().width > 0).length}))""" % GOLD_RGB


def query(page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def gold_drawn(page, view: str) -> list[dict]:
    """Once `view`'s chart is drawn and the page settled: that chart's gold, as drawn."""
    page.wait_for_function(f"() => [...document.querySelectorAll('.js-plotly-plot')].some((gd) => "
                           f"gd.querySelector('.main-svg') && (gd._fullLayout.meta || {{}}).view === '{view}')",
                           timeout=60_000)
    settle(page)
    return [f for f in page.evaluate(GOLD_DRAWN) if f["view"] == view]


@pytest.mark.parametrize("name", GOLD_VIEWS)
def test_gold_is_visible_on_every_evidence_view(gallery_app, name, screen):
    """Explore's heatmap (outlined cells) and text view (underlined tokens) and the Hop graph (ringed nodes)
    of one gallery trace per task that knows its evidence show it, as the Story does (the walk above). The trace is
    opened once by URL on Explore; its text view and its Hop graph are reached from there as a reader does (the
    View control, the link to the Hop graph), without reloading the app."""
    problems: list[str] = []
    url, page = gallery_app, screen
    page.goto(f"{url}/Explore?trace=gallery:{name}", timeout=90_000)
    drawn = gold_drawn(page, "token_heatmap")
    if not (drawn and drawn[0]["listed"] and drawn[0]["marks"]):
        problems.append(f"{name}: Explore draws no gold ({drawn})")
    page.get_by_role("radio", name="text", exact=True).click()  # the View control
    page.locator(".ft-tokens").first.wait_for(timeout=60_000)
    settle(page)
    assert query(page) == {"trace": [f"gallery:{name}"], "view": ["text"]}, page.url
    underlined = page.locator(".ft-tokens .ft-gold")
    if not underlined.count() or not underlined.first.is_visible():
        problems.append(f"{name}: Explore's text view underlines no gold token")
    page.locator('a[href*="Hop_graph?trace="]').first.click()
    drawn = gold_drawn(page, "hop_graph")
    assert "/Hop_graph?" in page.url and query(page)["trace"] == [f"gallery:{name}"], page.url
    if not (drawn and drawn[0]["listed"] and drawn[0]["marks"]):
        problems.append(f"{name}: Hop graph draws no gold ({drawn})")
    assert problems == [], "\n".join(problems)
