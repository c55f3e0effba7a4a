"""Retake the README screenshots: ``.venv/bin/python docs/screenshots/take.py`` (needs chromium).

Starts the app on a free loopback port with an empty temporary library and captures the Explore and
Hop graph views of the gallery's variable-tracking trace (light theme), the text view (dark theme) and
the Evaluation page on the committed SmolLM2 results. Name files to retake only those:
``take.py evaluation.png``.
"""

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.app.browser import app_server, launch, settle  # noqa: E402

SHOTS = [  # (file, URL path + query, colour scheme, something to wait for)
    ("explore.png", "Explore?trace=gallery:vartrack", "light", ".heatmaplayer"),
    ("hop_graph.png", "Hop_graph?trace=gallery:vartrack&node=S1", "light", ".heatmaplayer"),
    ("explore_text_dark.png", "Explore?trace=gallery:free-form&view=text&hop=1", "dark", ".ft-tok"),
    ("evaluation.png", "Evaluation?run=eval_smollm2&task=arithmetic", "light", ".main-svg"),
]


def main() -> int:
    from playwright.sync_api import sync_playwright

    with app_server({"FLASHTRACE_LIBRARY": tempfile.mkdtemp()}) as url, sync_playwright() as p:
        browser = launch(p)
        for name, path, scheme, selector in SHOTS:
            if sys.argv[1:] and name not in sys.argv[1:]:
                continue
            page = browser.new_page(viewport={"width": 1400, "height": 1500}, color_scheme=scheme)
            page.goto(f"{url}/{path}", timeout=180_000)
            page.locator(selector).first.wait_for(timeout=180_000)
            settle(page, timeout=180_000)
            page.wait_for_timeout(1500)
            page.screenshot(path=str(Path(__file__).parent / name))
            print(f"wrote docs/screenshots/{name}")
            page.close()
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
