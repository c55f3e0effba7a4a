"""Acceptance in a real browser: every page at 1280×720 and 1920×1080, light and dark theme.

One app server and one browser page for the whole test; each app page is loaded once and then resized
and switched to dark in place (Streamlit follows the browser's colour scheme), so the run stays short on
a 2-core CI machine. Screenshots (full page) go to ``test-artifacts/pages/``. Every request the browser
makes is recorded: none may go to a host other than the app's 127.0.0.1. On every page and in every
state: no Streamlit exception or error box, no JavaScript error, no developer toolbar ("Deploy"), no chart
whose legend overlaps its axis labels, whose colour keys overlap, or whose labels are cut off, and no table
hiding columns behind a horizontal scroll; on Explore (heatmap and text view) the outlined target, the
answer, lies inside the first screen.
"""

from urllib.parse import urlsplit

import pytest

from flashtrace.store.gallery import load_gallery_trace
from flashtrace.store.library import LIBRARY_ENV, Library

from .browser import ROOT, app_server, launch, settle, wait_quiet

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ARTIFACTS = ROOT / "test-artifacts" / "pages"
SIZES = [(1280, 720), (1920, 1080)]
RELAYOUT_MS = 400  # quiet after a resize or a new colour scheme, in which the charts re-lay out
PAGES = [  # (name, URL path + query, heading to wait for, selector that shows the page drew)
    ("home", "", "FlashTrace Studio", '[data-testid="stPageLink"]'),
    ("trace", "Trace", "Run a trace", '[data-testid="stTextArea"]'),
    ("explore", "Explore?trace=gallery:vartrack", "Explore a trace", ".heatmaplayer"),
    ("explore_text", "Explore?trace=gallery:free-form&view=text&hop=1", "Explore a trace", ".ft-tokens"),
    ("hop_graph", "Hop_graph?trace=gallery:vartrack&node=S1", "Hop graph", ".scatterlayer"),
    ("compare", "Compare?trace=gallery:vartrack", "Compare", ".js-plotly-plot"),
    ("library", "Library", "Library", '[data-testid="stDataFrame"]'),
    ("evaluation", "Evaluation?run=eval_smollm2&task=arithmetic", "Evaluation", ".js-plotly-plot"),
    ("story", "Story?trace=gallery:vartrack&step=3", "The story of a trace", ".barlayer"),
    ("glossary", "Glossary#rho", "Glossary", '[data-testid="stHeading"]'),
]

# For each chart: legend entries that intersect tick labels, axis titles or notes (annotations), colour keys
# (colour bars) that intersect each other, a chart title that intersects any of them, and tick labels / axis
# titles / legend entries / notes / colour-key texts that stick out of the chart's own SVG (cut off).
CHART_PROBLEMS = """() => {
    const problems = [];
    const overlap = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
    const visible = (r) => r.width > 0 && r.height > 0;
    document.querySelectorAll('.js-plotly-plot').forEach((gd, n) => {
        const svg = gd.querySelector('svg.main-svg');
        if (!svg) return;
        const box = svg.getBoundingClientRect();
        const name = (gd._fullLayout && gd._fullLayout.meta && gd._fullLayout.meta.view) || `chart ${n}`;
        const labels = [...gd.querySelectorAll('.xtick text, .ytick text, .g-xtitle text, .g-ytitle text')]
            .map((e) => [e.textContent, e.getBoundingClientRect()]).filter(([, r]) => visible(r));
        const legends = [...gd.querySelectorAll('.legend .traces')].map((e) => [e.textContent, e.getBoundingClientRect()])
            .filter(([, r]) => visible(r));
        for (const [text, r] of labels.concat(legends)) {
            if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)
                problems.push(`${name}: "${text}" is cut off`);
        }
        const notes = [...gd.querySelectorAll('.annotation-text')].map((e) => [e.textContent, e.getBoundingClientRect()])
            .filter(([, r]) => visible(r));
        for (const [text, r] of notes)
            if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)
                problems.push(`${name}: note "${text}" is cut off`);
        for (const [lt, lr] of legends)
            for (const [t, r] of labels.concat(notes))
                if (overlap(lr, r)) problems.push(`${name}: legend "${lt}" overlaps "${t}"`);
        const keys = [...gd.querySelectorAll('g.colorbar')].filter((e) => visible(e.getBoundingClientRect()))
            .map((e) => [(e.querySelector('.cbtitle text') || {}).textContent || 'colour key', e]);
        keys.forEach(([kt, e], i) => {
            for (const t of e.querySelectorAll('text')) {
                const r = t.getBoundingClientRect();
                if (visible(r) && (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1))
                    problems.push(`${name}: colour key "${kt}": "${t.textContent}" is cut off`);
            }
            for (const [ot, o] of keys.slice(i + 1))
                if (overlap(e.getBoundingClientRect(), o.getBoundingClientRect()))
                    problems.push(`${name}: colour keys "${kt}" and "${ot}" overlap`);
        });
        const title = gd.querySelector('.g-gtitle text');
        if (title && visible(title.getBoundingClientRect()))
            for (const [t, r] of labels.concat(legends, notes, keys.map(([kt, e]) => [`colour key ${kt}`, e.getBoundingClientRect()])))
                if (overlap(title.getBoundingClientRect(), r)) problems.push(`${name}: title overlaps "${t}"`);
    });
    return problems;
}"""

# Streamlit's dataframes scroll sideways when their columns do not fit: such a table hides columns.
HIDDEN_COLUMNS = """() => [...document.querySelectorAll('[data-testid="stDataFrame"] .dvn-scroller')]
    .filter((e) => e.scrollWidth > e.clientWidth + 2).map((e) => `${e.scrollWidth}px of columns in ${e.clientWidth}px`)"""

FULL_HEIGHT = """() => Math.max(...[...document.querySelectorAll('[data-testid="stMain"], [data-testid="stAppViewContainer"]')]
    .map((e) => e.scrollHeight), document.documentElement.scrollHeight)"""

# Explore: the bottom edge of the target (the answer) as drawn, in viewport pixels: the heatmap's green
# outlines or the text view's outlined tokens (the legend's sample left out). None when nothing is drawn.
TARGET_BOTTOM = """() => {
    const boxes = [...document.querySelectorAll('.js-plotly-plot .shapelayer path')]
        .filter((p) => (p.getAttribute('style') || '').includes('rgb(22, 163, 74)'))
        .concat([...document.querySelectorAll('.ft-tokens .ft-target')]).map((e) => e.getBoundingClientRect());
    return boxes.length ? Math.max(...boxes.map((r) => r.bottom)) : null;
}"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """Base URL of one app server whose library holds one saved trace (so the Library shows its table)."""
    folder = tmp_path_factory.mktemp("library")
    Library(folder).save(load_gallery_trace("arithmetic"), "saved-arithmetic")
    with app_server({LIBRARY_ENV: str(folder)}) as url:
        yield url


def check_page(page, name: str, problems: list[str]) -> None:
    """Record what is wrong on the page as drawn now."""
    for testid in ("stException", "stAlertContentError"):
        if page.locator(f'[data-testid="{testid}"]').count():
            problems.append(f"{name}: {testid}: {page.locator(f'[data-testid={testid}]').first.inner_text()[:200]}")
    if page.get_by_role("button", name="Deploy").count():  # the app is for viewers (client.toolbarMode)
        problems.append(f"{name}: Streamlit's developer toolbar (Deploy) is shown")
    problems.extend(f"{name}: {p}" for p in page.evaluate(CHART_PROBLEMS))
    problems.extend(f"{name}: table hides columns ({p})" for p in page.evaluate(HIDDEN_COLUMNS))
    if name.startswith("explore"):  # the answer shows in the first screen, without scrolling anything
        bottom, height = page.evaluate(TARGET_BOTTOM), page.viewport_size["height"]
        if bottom is None or bottom > height:
            problems.append(f"{name}: the target is not in the first screen (bottom at {bottom} of {height} px)")


def shot(page, stem: str, width: int, height: int) -> None:
    """What the viewport shows, then the whole page at the same width (Streamlit scrolls its main area
    itself, so a full-page screenshot alone would stop at the viewport)."""
    page.screenshot(path=str(ARTIFACTS / f"{stem}.png"))
    full = page.evaluate(FULL_HEIGHT)
    if full > height:
        page.set_viewport_size({"width": width, "height": min(full, 8000)})
        wait_quiet(page, RELAYOUT_MS)
        page.screenshot(path=str(ARTIFACTS / f"{stem}_full.png"))
        page.set_viewport_size({"width": width, "height": height})  # the next check waits after its resize


def test_every_page_at_both_sizes_in_both_themes_without_external_requests(server):
    playwright = pytest.importorskip("playwright.sync_api")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    app_host = urlsplit(server).hostname
    requests, problems, errors = [], [], []
    with playwright.sync_playwright() as p:
        browser = launch(p)
        context = browser.new_context(viewport={"width": SIZES[0][0], "height": SIZES[0][1]}, color_scheme="light")
        context.on("request", lambda r: requests.append(r.url))
        page = context.new_page()
        page.on("websocket", lambda ws: requests.append(ws.url))
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        for name, path, heading, ready in PAGES:
            page.set_viewport_size({"width": SIZES[0][0], "height": SIZES[0][1]})
            page.emulate_media(color_scheme="light")
            page.goto(f"{server}/{path}", timeout=120_000)
            page.get_by_role("heading", name=heading).first.wait_for(timeout=120_000)
            page.locator(ready).first.wait_for(timeout=120_000)
            settle(page, timeout=120_000)
            for scheme in ("light", "dark"):
                page.emulate_media(color_scheme=scheme)
                for width, height in (SIZES if scheme == "light" else SIZES[::-1]):
                    if (scheme, (width, height)) != ("light", SIZES[0]):  # else: as loaded and settled just now
                        page.set_viewport_size({"width": width, "height": height})
                        wait_quiet(page, RELAYOUT_MS)  # charts re-lay out on resize and on a new colour scheme
                    check_page(page, f"{name} {width}x{height} {scheme}", problems)
                    shot(page, f"{name}_{width}x{height}_{scheme}", width, height)
        browser.close()
    outside = sorted({u for u in requests if urlsplit(u).scheme not in ("data", "blob", "about")
                      and urlsplit(u).hostname != app_host})
    assert requests, "no requests were recorded"
    failures = [f"request to another host: {u}" for u in outside] + [f"page error: {e}" for e in errors] + problems
    assert not failures, "\n".join(failures)
    assert all((ARTIFACTS / f"{n}_{w}x{h}_{s}.png").exists() for n, *_x in PAGES for w, h in SIZES
               for s in ("light", "dark"))
