"""How long the app takes to show its first page, and the long gallery trace's heatmap and hop graph.

Four measurements, median of `--repeats` runs each:
0. home (Playwright + chromium): from starting ``streamlit run app.py`` to the Home page's heading being
   visible in the browser (server start, imports, first script run), with every request the page makes to
   a host other than 127.0.0.1 counted (there should be none);
1. figures: load the trace JSON, build the token heatmap and the hop graph (HopGraph + Plotly figure), and
   serialise both to JSON as Streamlit does;
2. pages (AppTest, no browser): a fresh session running the Explore page and the Hop graph page;
3. browser (Playwright + chromium): with the app open on a small gallery trace, choosing the long trace in
   the trace list until its heatmap / graph is drawn (in-app), and a full page load of the same URL (which
   also re-parses Streamlit's and Plotly's JavaScript); the server's one-time import of torch and
   transformers is reported apart.

Usage: ``.venv/bin/python benchmarks/app_render.py [--trace long-vartrack] [--repeats 5] [--no-browser]
[--home-only]``.
Writes ``benchmarks/results/app_render.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def summary(times: list[float]) -> tuple[float, float]:
    """``(median, best)`` of repeated timings: the machine is shared, so the best shows the undisturbed cost."""
    return statistics.median(times), min(times)


def timed(fn, repeats: int) -> tuple[float, float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return summary(times)


def figures(name: str) -> None:
    from flashtrace.store.gallery import gallery_path
    from flashtrace.analysis.graph import HopGraph
    from flashtrace.analysis.schema import Trace
    from flashtrace.viz import token_heatmap
    from flashtrace.viz.graph import hop_graph_figure

    trace = Trace.load(gallery_path(name))
    token_heatmap(trace).to_json()  # the whole trace in one heatmap (the app draws one window of it)
    hop_graph_figure(HopGraph.from_trace(trace, 0.05), trace).to_json()


def pages(name: str) -> None:
    from streamlit.testing.v1 import AppTest

    for page in ("pages/2_Explore.py", "pages/3_Hop_graph.py"):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.query_params["trace"] = f"gallery:{name}"
        at.run()
        at.switch_page(page).run()
        assert not at.exception and len(at.get("plotly_chart")) >= 1, at.exception


def _wait_for_figure(page, view: str, n_traces_key: str, expected: int) -> None:
    """Wait until the chart whose layout meta view is `view` shows `expected` (heatmap rows or graph nodes)."""
    page.wait_for_function("""([view, key, expected]) => {
        for (const gd of document.querySelectorAll('.js-plotly-plot')) {
            const meta = gd.layout && gd.layout.meta;
            if (!meta || meta.view !== view || !gd._fullData) continue;
            const count = key === 'rows' ? gd.data[0].z.length
                : gd.data.filter(t => t.mode === 'markers+text').reduce((n, t) => n + t.customdata.length, 0);
            if (count === expected) return true;
        }
        return false;
    }""", arg=[view, n_traces_key, expected], timeout=60_000)


def _choose_trace(page, label: str) -> None:
    page.locator('[data-testid="stSelectbox"]').first.click()
    page.get_by_role("option", name=label, exact=True).click()


def home(repeats: int) -> tuple[dict[str, tuple[float, float]], list[str]]:
    """Seconds from server start to the Home heading in the browser, and the external requests seen."""
    from urllib.parse import urlparse

    from playwright.sync_api import sync_playwright

    from tests.app.browser import app_server, launch

    times, external = [], []
    with sync_playwright() as p:
        chromium = launch(p)
        for _ in range(repeats):
            page = chromium.new_page(viewport={"width": 1280, "height": 720})
            page.on("request", lambda r: external.append(r.url) if urlparse(r.url).hostname not in
                    ("127.0.0.1", None) and not r.url.startswith(("data:", "blob:")) else None)
            start = time.perf_counter()
            with app_server() as url:
                page.goto(url, timeout=180_000)
                page.get_by_role("heading", name="FlashTrace Studio").wait_for(timeout=180_000)
                times.append(time.perf_counter() - start)
                page.wait_for_timeout(1500)  # late requests (favicon, fonts) still count
            page.close()
        chromium.close()
    return {"home: server start to Home heading (browser)": summary(times)}, sorted(set(external))


def browser(name: str, repeats: int) -> dict[str, tuple[float, float]]:
    """In-app timings: with the app open on a small gallery trace, pick `name` in the trace list and wait
    until its heatmap (Explore) or graph (Hop graph) is drawn. Full page loads are reported too."""
    from playwright.sync_api import sync_playwright

    from flashtrace.store.gallery import load_gallery_trace
    from flashtrace.analysis.graph import HopGraph
    from flashtrace.viz import token_heatmap, view_values
    from flashtrace.viz.heatmap import heatmap_windows, window_of
    from tests.app.browser import app_server, launch, settle

    trace = load_gallery_trace(name)
    windows = heatmap_windows(trace.n_tokens)
    window = windows[window_of(windows, view_values(trace), trace.positions("prompt"))]
    # what the pages draw first: Explore with every token (`tokens=all`: the largest heatmap of the window),
    # the Hop graph at its default 80 % influence with weak input sentences folded
    rows = len(token_heatmap(trace, token_range=window).data[0].z)
    nodes = HopGraph.from_trace(trace, 0.0).pruned(node_threshold=0.8, fold=True).graph.number_of_nodes()
    label = f"Gallery · {trace.title}"
    out = {}
    with app_server() as url, sync_playwright() as p:
        chromium = launch(p)
        page = chromium.new_page(viewport={"width": 1400, "height": 1000})
        start = time.perf_counter()
        page.goto(url, timeout=180_000)
        page.get_by_role("heading", name="FlashTrace Studio").wait_for(timeout=180_000)
        settle(page, timeout=180_000)
        warm = time.perf_counter() - start
        out["server warm-up (first page, imports)"] = (warm, warm)
        for what, path, query, view, key, expected in (
                ("Explore heatmap", "Explore", "&tokens=all", "token_heatmap", "rows", rows),
                ("Hop graph", "Hop_graph", "", "hop_graph", "nodes", nodes)):
            in_app, reload = [], []
            for _ in range(repeats):
                page.goto(f"{url}/{path}?trace=gallery:free-form{query}", timeout=60_000)
                settle(page)
                start = time.perf_counter()
                _choose_trace(page, label)
                _wait_for_figure(page, view, key, expected)
                in_app.append(time.perf_counter() - start)
                start = time.perf_counter()
                page.goto(f"{url}/{path}?trace=gallery:{name}{query}", timeout=60_000)
                _wait_for_figure(page, view, key, expected)
                reload.append(time.perf_counter() - start)
            out[f"browser, in the app: {what}"] = summary(in_app)
            out[f"browser, full page load: {what}"] = summary(reload)
        chromium.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default="long-vartrack", help="gallery trace to open")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-browser", action="store_true", help="skip the Playwright measurements")
    parser.add_argument("--home-only", action="store_true", help="only the time from server start to Home")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "app_render.json")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    from flashtrace.store.gallery import load_gallery_trace

    n_tokens = load_gallery_trace(args.trace).n_tokens
    results, external = {}, []
    if not args.no_browser:
        found, external = home(args.repeats)
        results.update(found)
    if args.home_only:
        return report(args, n_tokens, results, external)
    results |= {"figures: load + heatmap + graph + JSON": timed(lambda: figures(args.trace), args.repeats)}
    pages(args.trace)  # first AppTest run imports the app's modules; not timed
    results["AppTest: Explore + Hop graph pages"] = timed(lambda: pages(args.trace), args.repeats)
    if not args.no_browser:
        results.update(browser(args.trace, args.repeats))
    return report(args, n_tokens, results, external)


def report(args, n_tokens: int, results: dict[str, tuple[float, float]], external: list[str]) -> int:
    """Print the table (with the load average: timings on a busy machine are not comparable) and write JSON."""
    load = os.getloadavg()[0]
    print(f"gallery trace '{args.trace}' ({n_tokens:,} tokens), {args.repeats} repeats, {os.cpu_count()} CPU cores, "
          f"load average {load:.1f} at the end\n")
    print(f"| {'measurement':<48} | median s | best s |\n|{'-' * 50}|----------|--------|")
    for label, (median, best) in results.items():
        print(f"| {label:<48} | {median:8.2f} | {best:6.2f} |")
    if not args.no_browser:
        print(f"\nrequests to hosts other than 127.0.0.1: {len(external)}" + "".join(f"\n  {u}" for u in external))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"trace": args.trace, "n_tokens": n_tokens, "repeats": args.repeats,
                                    "cpu_count": os.cpu_count(), "load_average": load, "external_requests": external,
                                    "seconds": {k: {"median": m, "best": b} for k, (m, b) in results.items()}},
                                   indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
