"""Real-browser test: a Streamlit server started here on a free loopback port, driven by Playwright with
Debian's chromium. Screenshots go to test-artifacts/ (light and dark theme)."""

import re

import pytest

from flashtrace.store.library import LIBRARY_ENV, Library

from .browser import ROOT, app_server, settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``(base url, library folder)`` of a fresh app server with an empty temporary library."""
    library = tmp_path_factory.mktemp("library")
    with app_server({LIBRARY_ENV: str(library)}) as url:
        yield url, library


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def click_graph_node(page, node: str) -> None:
    """Click the hop-graph marker of `node` at its pixel position (read from Plotly's own layout)."""
    box = page.evaluate("""(node) => {
        for (const gd of document.querySelectorAll('.js-plotly-plot')) {
            const fl = gd._fullLayout;
            if (!fl || !fl.meta || fl.meta.view !== 'hop_graph') continue;
            for (const tr of gd._fullData) {
                const i = (tr.customdata || []).indexOf(node);
                if (tr.mode === 'markers+text' && i >= 0) {
                    const r = gd.getBoundingClientRect();
                    return {x: r.left + fl._size.l + fl.xaxis.l2p(tr.x[i]), y: r.top + fl._size.t + fl.yaxis.l2p(tr.y[i])};
                }
            }
        }
        return null;
    }""", node)
    assert box, f"node {node} not found in the hop graph"
    page.mouse.click(box["x"], box["y"])


def test_gallery_explore_graph_and_a_tiny_run(server, browser):
    url, library = server
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    page.goto(url, timeout=90_000)
    page.get_by_role("heading", name="FlashTrace Studio").wait_for(timeout=90_000)
    settle(page)
    assert page.get_by_text("Variable tracking", exact=True).count() >= 1
    shot(page, "home")

    # open a gallery trace from its card: the heatmap shows
    page.locator('a[href*="Explore"][href*="gallery%3Avartrack"], a[href*="Explore"][href*="gallery:vartrack"]').first.click()
    page.get_by_role("heading", name="Explore a trace").wait_for(timeout=60_000)
    settle(page)
    page.locator(".js-plotly-plot .heatmaplayer").first.wait_for(timeout=30_000)
    assert page.locator(".js-plotly-plot .barlayer").count() == 0  # the mass chart is drawn when opened
    page.get_by_text("Attribution mass per hop (chart)", exact=True).click()
    page.locator(".js-plotly-plot .barlayer").first.wait_for(timeout=30_000)
    settle(page)
    assert "trace=gallery" in page.evaluate("() => window.location.href")
    shot(page, "explore")

    # the hop graph of the same trace; clicking a step node shows that step's heatmap
    page.goto(f"{url}/Hop_graph?trace=gallery:vartrack", timeout=60_000)
    page.get_by_role("heading", name="Hop graph").wait_for(timeout=60_000)
    settle(page)
    page.locator(".js-plotly-plot .scatterlayer").first.wait_for(timeout=30_000)
    heading = page.get_by_role("heading", name=re.compile(r"^Reasoning step · "))  # ids only with Details on
    for _attempt in range(3):  # a click landing while the page is still rerunning can be dropped by the frontend
        click_graph_node(page, "S1")
        try:
            heading.wait_for(timeout=20_000)
            break
        except Exception:  # noqa: BLE001 - retried, then asserted below
            settle(page)
    heading.wait_for(timeout=30_000)
    settle(page)
    assert page.locator(".js-plotly-plot .heatmaplayer").count() >= 1
    assert "node=step-2" in page.evaluate("() => window.location.href")  # S1, the second step, named as shown
    shot(page, "hop_graph")

    # a short trace with a tiny model, saved to the library
    page.goto(f"{url}/Trace", timeout=60_000)
    page.get_by_role("heading", name="Run a trace").wait_for(timeout=60_000)
    settle(page)
    page.locator('[data-testid="stSelectbox"]').first.click()
    page.get_by_role("option", name="tiny-llama", exact=True).click()
    settle(page)
    page.get_by_label("Prompt").fill("Tom has 3 cats and 2 dogs. How many pets does he have?")
    page.get_by_label("Response (reasoning, then the answer)").fill("3 + 2 = 5.\nAnswer: 5")
    page.keyboard.press("Control+Enter")
    settle(page)
    page.get_by_role("button", name="Run trace").click()
    page.get_by_text("Saved to the library as").wait_for(timeout=120_000)
    settle(page)
    shot(page, "trace_run")
    assert len([e for e in Library(library).entries() if e.readable]) == 1
    assert not errors, errors
    page.close()


def test_dark_theme_explore_and_graph(server, browser):
    url, _library = server
    context = browser.new_context(color_scheme="dark", viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.goto(f"{url}/Explore?trace=gallery:free-form&view=text", timeout=90_000)
    page.get_by_role("heading", name="Explore a trace").wait_for(timeout=90_000)
    settle(page)
    page.locator(".ft-tok").nth(100).wait_for(state="attached", timeout=30_000)  # every token rendered (folded runs too)
    assert page.locator(".ft-tok").count() == 150
    page.locator(".ft-topk").first.wait_for(timeout=30_000)  # the top-k table
    settle(page)
    shot(page, "explore_text_dark")
    page.goto(f"{url}/Hop_graph?trace=gallery:free-form&node=A", timeout=90_000)
    page.get_by_role("heading", name=re.compile(r"^Answer · ")).wait_for(timeout=90_000)
    settle(page)
    shot(page, "hop_graph_dark")
    context.close()
