"""Retake the README screenshots: ``.venv/bin/python docs/screenshots/take.py`` (needs chromium).

Starts the app on a free loopback port with an empty temporary library and captures the Explore and
Hop graph views of the gallery's variable-tracking trace (light theme) and the text view (dark theme).
"""

import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.app.test_browser import CHROMIUM, CHROMIUM_ARGS, _free_port, settle  # noqa: E402

SHOTS = [  # (file, URL path + query, colour scheme, something to wait for)
    ("explore.png", "Explore?trace=gallery:vartrack", "light", ".heatmaplayer"),
    ("hop_graph.png", "Hop_graph?trace=gallery:vartrack&node=S1", "light", ".heatmaplayer"),
    ("explore_text_dark.png", "Explore?trace=gallery:free-form&view=text&hop=1", "dark", ".ft-tok"),
]


def main() -> int:
    from playwright.sync_api import sync_playwright

    port = _free_port()
    env = {**os.environ, "FLASHTRACE_LIBRARY": tempfile.mkdtemp()}
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                             "--server.address", "127.0.0.1", "--server.port", str(port),
                             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(180):
            try:
                urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for name, path, scheme, selector in SHOTS:
                page = browser.new_page(viewport={"width": 1400, "height": 1500}, color_scheme=scheme)
                page.goto(f"{url}/{path}", timeout=180_000)
                page.locator(selector).first.wait_for(timeout=180_000)
                settle(page, timeout=180_000)
                page.wait_for_timeout(1500)
                page.screenshot(path=str(Path(__file__).parent / name))
                print(f"wrote docs/screenshots/{name}")
                page.close()
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    return 0


if __name__ == "__main__":
    sys.exit(main())
