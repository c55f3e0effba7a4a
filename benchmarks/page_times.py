"""Every page's first load, and one interaction on each page that has one, for a ~300-token and a
~2,000-token gallery trace (issue 28 item 6: first loads <= 2 s once the server is warm, interactions <= 1 s).

How it measures (Playwright + Debian's chromium, one app server):

- warm-up: the server is started and every page is opened once on the small free-form trace, so the
  server's imports and the app's trace-independent caches are in place (reported apart);
- a page is *drawn* when Streamlit runs no script, the page's DOM has not changed for `QUIET_MS`
  (``tests.app.browser.wait_quiet``, the tests' own wait) and no request of the page (an element's script
  chunk) is in flight or was answered in that time; its time is that of the last change (a
  MutationObserver installed before the page's own scripts records it), so the quiet wait is not counted;
- first load: from the navigation's start (``performance.timeOrigin``) to the last change, opening
  ``/Page?trace=gallery:NAME`` by URL (a full page load: Streamlit's and Plotly's JavaScript are parsed
  again each time). The first page opened with a trace also reads its file;
- interaction: from the click (or key) to the last change, on the page just loaded.

Usage: ``.venv/bin/python benchmarks/page_times.py [--traces arithmetic,long-vartrack] [--repeats 3]
[--pages Explore,Compare]`` (``--pages``: only those pages, warm-up included).
Writes ``benchmarks/results/page_times.json`` and prints a table with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

QUIET_MS = 700  # the page's quiet wait (tests.app.browser.wait_quiet), longer than the tests' own


def _toggle(label: str):
    return lambda page: page.get_by_text(label, exact=True).first.click()


def _next(page) -> None:
    page.get_by_role("button", name="Next").first.click()


def _search(page) -> None:
    box = page.get_by_placeholder("words in the name", exact=False)
    box.fill("vartrack")
    box.press("Enter")


def _generate_mode(page) -> None:
    page.get_by_text("Generate with the model", exact=True).first.click()


PAGES = {  # URL path: (name in the table, the interaction timed on it or None)
    "": ("Home", None),
    "Trace": ("Trace", _generate_mode),
    "Explore": ("Explore", _toggle("Details")),
    "Hop_graph": ("Hop graph", _toggle("Show every input sentence")),
    "Compare": ("Compare", _toggle("Details")),
    "Library": ("Library", _search),
    "Evaluation": ("Evaluation", None),
    "Story": ("Story", _next),
    "Glossary": ("Glossary", None),
}


LAST_RESPONSE = "Math.max(0, ...performance.getEntriesByType('resource').map((e) => e.responseEnd))"
MORE_RESOURCE_TIMINGS = "performance.setResourceTimingBufferSize(5000)"  # the default 250 is under a page's chunks


def drawn_at(page, loading: set, timeout_ms: float = 120_000) -> float:
    """Milliseconds since the navigation started at which the page last changed, once it is drawn: quiet
    (``wait_quiet``), no request of the page in flight (`loading`, kept by `track_requests`) and none
    answered in the last `QUIET_MS`. Streamlit fetches an element's script chunk when the element first
    shows; while a large one (Plotly's, 4.7 MB) downloads and compiles on a loaded machine the page can stay
    unchanged for longer than the quiet wait, and the chart is drawn only after it."""
    from tests.app.browser import wait_quiet

    deadline = page.evaluate("performance.now()") + timeout_ms
    while True:
        last = wait_quiet(page, QUIET_MS, timeout_ms, selector="h1")
        now = page.evaluate("performance.now()")
        if now > deadline:
            raise TimeoutError(f"the page did not settle in {timeout_ms / 1000:.0f} s ({len(loading)} requests open)")
        if loading:
            page.wait_for_timeout(20)  # then wait for the quiet again, counted from after the request ended
        elif now - page.evaluate(LAST_RESPONSE) > QUIET_MS:
            return last


def track_requests(page) -> set:
    """The set of the page's HTTP requests in flight, kept up to date (Streamlit's websocket is not one)."""
    loading: set = set()
    page.on("request", lambda request: loading.add(request))  # Playwright wraps Python functions, not built-ins
    page.on("requestfinished", lambda request: loading.discard(request))
    page.on("requestfailed", lambda request: loading.discard(request))
    return loading


def first_load(page, loading: set, url: str) -> float:
    page.goto(url, timeout=120_000)
    return drawn_at(page, loading) / 1000


def interaction(page, loading: set, act) -> float:
    start = page.evaluate("performance.now()")
    act(page)
    page.wait_for_timeout(150)  # Streamlit shows its status widget only once the rerun has started
    return (drawn_at(page, loading) - start) / 1000


def measure(url: str, chromium, trace: str, repeats: int, pages: dict = PAGES) -> dict[str, dict[str, list[float]]]:
    """``{page: {"load": [s, ...], "interaction": [s, ...]}}``: `repeats` rounds over `pages` (default: every page)."""
    from tests.app.browser import OBSERVER

    out: dict[str, dict[str, list[float]]] = {}
    for round_ in range(repeats):
        page = chromium.new_page(viewport={"width": 1400, "height": 1000})
        page.add_init_script(OBSERVER)  # before the page's own scripts: the first change counts
        page.add_init_script(MORE_RESOURCE_TIMINGS)
        loading = track_requests(page)
        for path, (name, act) in pages.items():
            times = out.setdefault(name, {"load": [], "interaction": []})
            times["load"].append(first_load(page, loading, f"{url}/{path}?trace=gallery:{trace}"))
            if act is not None:
                times["interaction"].append(interaction(page, loading, act))
        page.close()
    return out


def pick_pages(parser: argparse.ArgumentParser, names: str) -> dict:
    """The entries of `PAGES` named (case-insensitive) in the comma-separated `names`; every page when empty."""
    wanted = {n.strip().lower() for n in names.split(",") if n.strip()}
    unknown = wanted - {name.lower() for name, _ in PAGES.values()}
    if unknown:
        parser.error(f"unknown pages {', '.join(sorted(unknown))}; the pages are "
                     + ", ".join(name for name, _ in PAGES.values()))
    return {path: entry for path, entry in PAGES.items() if not wanted or entry[0].lower() in wanted}


def main() -> int:
    from playwright.sync_api import sync_playwright

    from flashtrace.store.gallery import load_gallery_trace
    from tests.app.browser import app_server, launch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", default="arithmetic,long-vartrack", help="gallery traces (comma-separated)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds over every page (the first is a first visit)")
    parser.add_argument("--pages", default="", help="only these pages, by name in the table (comma-separated; "
                                                     "default: every page)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "page_times.json")
    args = parser.parse_args()
    pages = pick_pages(parser, args.pages)
    load_before = os.getloadavg()[0]
    results = {"load_before": load_before, "cpu_count": os.cpu_count(), "quiet_ms": QUIET_MS, "traces": {}}
    with app_server() as url, sync_playwright() as p:
        chromium = launch(p)
        results["warm_up"] = measure(url, chromium, "free-form", 1, pages)
        for trace in args.traces.split(","):
            n = load_gallery_trace(trace).n_tokens
            results["traces"][trace] = {"tokens": n, "pages": measure(url, chromium, trace, args.repeats, pages)}
        chromium.close()
    results["load_after"] = os.getloadavg()[0]
    report(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    return 0


def _cell(values: list[float]) -> str:
    return f"{values[0]:.2f} / {statistics.median(values):.2f}" if values else "-"


def report(results: dict) -> None:
    print(f"{results['cpu_count']} CPU cores, load average {results['load_before']:.1f} before, "
          f"{results['load_after']:.1f} after; seconds: first visit / median of the rounds\n")
    for trace, found in results["traces"].items():
        print(f"{trace} ({found['tokens']:,} tokens)\n\n| page | load s | interaction s |\n|---|---|---|")
        for name, times in found["pages"].items():
            print(f"| {name} | {_cell(times['load'])} | {_cell(times['interaction'])} |")
        worst_load = max(max(t["load"]) for t in found["pages"].values())
        worst_act = max((max(t["interaction"]) for t in found["pages"].values() if t["interaction"]), default=0)
        print(f"\nslowest load {worst_load:.2f} s (target 2), slowest interaction {worst_act:.2f} s (target 1)\n")


if __name__ == "__main__":
    sys.exit(main())
