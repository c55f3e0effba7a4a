"""Retake the README screenshots: ``.venv/bin/python docs/screenshots/take.py`` (needs chromium).

Starts the app on a free loopback port with an empty temporary library and captures, 1280 px wide (a
projector): Explore on the gallery's variable-tracking trace at hop 1 (folded rows, the answer outlined,
the colour scale shared across hops), the free-form trace's text view in the dark theme, the Hop graph,
Compare's "what each hop adds" on the long variable-tracking trace, the Story's third panel in the
presenter view (it fits 1280×720: no sidebar) and the Evaluation page on the committed SmolLM2 results of
the current default run (eval_smollm2_paper). Each picture holds the whole page (up to 1,600 px tall).
Name files to retake only those: ``take.py evaluation.png``.
"""

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.app.browser import app_server, launch, settle  # noqa: E402
from tests.app.test_browser_pages import FULL_HEIGHT  # noqa: E402

WIDTH, FIRST_SCREEN, MAX_HEIGHT = 1280, 720, 1600
SHOTS = [  # (file, URL path + query, colour scheme, something to wait for)
    ("explore.png", "Explore?trace=gallery:vartrack&hop=1", "light", ".heatmaplayer"),
    ("explore_text_dark.png", "Explore?trace=gallery:free-form&view=text&hop=1", "dark", ".ft-tokens"),
    ("hop_graph.png", "Hop_graph?trace=gallery:vartrack&node=S1", "light", ".heatmaplayer"),
    ("compare.png", "Compare?trace=gallery:long-vartrack", "light", ".heatmaplayer"),
    ("story.png", "Story?trace=gallery:long-vartrack&step=3&present=1", "light", ".barlayer"),
    ("evaluation.png", "Evaluation?run=eval_smollm2_paper&task=arithmetic", "light", ".main-svg"),
]


def main() -> int:
    from playwright.sync_api import sync_playwright

    with app_server({"FLASHTRACE_LIBRARY": tempfile.mkdtemp()}) as url, sync_playwright() as p:
        browser = launch(p)
        for name, path, scheme, selector in SHOTS:
            if sys.argv[1:] and name not in sys.argv[1:]:
                continue
            page = browser.new_page(viewport={"width": WIDTH, "height": FIRST_SCREEN}, color_scheme=scheme)
            page.goto(f"{url}/{path}", timeout=180_000)
            page.locator(selector).first.wait_for(timeout=180_000)
            settle(page, timeout=180_000)
            page.set_viewport_size({"width": WIDTH, "height": min(max(page.evaluate(FULL_HEIGHT), FIRST_SCREEN),
                                                                 MAX_HEIGHT)})
            page.wait_for_timeout(1500)
            page.screenshot(path=str(Path(__file__).parent / name))
            print(f"wrote docs/screenshots/{name}")
            page.close()
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
