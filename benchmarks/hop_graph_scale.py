"""The hop graph at scale (issue 28 item 5): long chains of thought open on the Hop graph page.

Synthetic traces (`flashtrace.run.bench.synthetic.long_reasoning_trace`: one-token steps over a long prompt,
every step and the answer with a step vector over everything before it, so an edge from every earlier
segment). For each:

1. parts, in a fresh process: reading the trace file (`Trace.load`), building the graph (`HopGraph.from_trace`),
   pruning it as the page does, drawing it and serialising the figure as Streamlit does; the process's peak
   resident memory;
2. the page (Playwright + Debian's chromium, a fresh server per trace, warmed on the Hop graph page of a small
   gallery trace first, so the page's modules are imported): from opening
   ``/Hop_graph?trace=lib:NAME`` to the graph drawn, the first visit (the trace not yet read) and a second one;
   the server's memory added by the first visit (peak resident memory after it, less what it held before).

Usage: ``.venv/bin/python benchmarks/hop_graph_scale.py [--cases 800,1000] [--no-browser]``.
Writes ``benchmarks/results/hop_graph_scale.json``; prints a table with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CASES = {  # name: (tokens, steps, tokens per prompt sentence)
    "800": (1_600, 800, 1),  # the trace: 1,600 tokens, 800 one-token steps, ~960,000 edges
    "1000": (10_000, 1_000, 9),  # 10,000 tokens, 1,000 steps, 1,000 prompt sentences
    "1000-fine": (10_000, 1_000, 1),  # the same with one-token prompt sentences: ~9.5 million edges
}


def parts(path: str) -> dict:
    """Seconds of each step the page takes for the trace at `path`, and the peak memory (run in a child)."""
    import resource

    from flashtrace.analysis.graph import HopGraph
    from flashtrace.analysis.schema import Trace
    from flashtrace.viz.graph import hop_graph_figure

    out, start = {}, time.perf_counter()
    trace = Trace.load(path)
    out["load_s"], start = time.perf_counter() - start, time.perf_counter()
    full = HopGraph.from_trace(trace)
    out["build_s"], start = time.perf_counter() - start, time.perf_counter()
    graph = full.pruned(node_threshold=0.8, fold=True)
    out["prune_s"], start = time.perf_counter() - start, time.perf_counter()
    hop_graph_figure(graph, trace).to_json()
    out["draw_s"] = time.perf_counter() - start
    out.update(edges=full.edges.count, kept_edges=full.graph.number_of_edges(), drawn_nodes=len(graph.graph),
               drawn_edges=graph.graph.number_of_edges(),
               peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return out


def _graph_drawn(page) -> None:
    page.wait_for_function("""() => Array.from(document.querySelectorAll('.js-plotly-plot')).some(gd =>
        gd.layout && gd.layout.meta && gd.layout.meta.view === 'hop_graph' && gd._fullData)""", timeout=300_000)


def page_times(library: Path, name: str) -> dict:
    """First and second visit of the Hop graph page for ``lib:NAME``, and the server memory the first added."""
    from playwright.sync_api import sync_playwright

    from flashtrace.store.library import LIBRARY_ENV
    from tests.app.browser import app_server, launch, memory_bytes, reset_peak_memory, server_pid, settle

    out = {}
    with app_server({LIBRARY_ENV: str(library)}) as url, sync_playwright() as p:
        chromium = launch(p)
        page = chromium.new_page(viewport={"width": 1280, "height": 720})
        page.goto(f"{url}/Hop_graph?trace=gallery:arithmetic", timeout=180_000)  # a warm server: the page's
        _graph_drawn(page)  # modules imported, as after any first visit
        settle(page, timeout=180_000)
        pid = server_pid(url)
        reset_peak_memory(pid)
        before = memory_bytes(pid)
        for visit in ("first", "second"):
            start = time.perf_counter()
            page.goto(f"{url}/Hop_graph?trace=lib:{name}", timeout=300_000)
            _graph_drawn(page)
            out[f"page_{visit}_s"] = time.perf_counter() - start
            settle(page, timeout=300_000)
            if visit == "first":
                out["server_added_mb"] = (memory_bytes(pid, "VmHWM") - before) / 2**20
        chromium.close()
    return out


def run_case(name: str, browser: bool) -> dict:
    from flashtrace.analysis.schema import Trace
    from flashtrace.run.bench.synthetic import long_reasoning_trace
    from flashtrace.store.library import Library

    tokens, steps, sentence = CASES[name]
    with tempfile.TemporaryDirectory() as tmp:
        library = Path(tmp) / "library"
        Library(library).save(Trace.from_dict(long_reasoning_trace(tokens, steps, sentence)), "long")
        path = next(library.glob("long*.json"))
        row = {"case": name, "tokens": tokens, "steps": steps, "sentence_tokens": sentence,
               "file_mb": path.stat().st_size / 2**20, "load_before": os.getloadavg()[0]}
        child = subprocess.run([sys.executable, __file__, "--parts", str(path)], capture_output=True, text=True,
                               check=True, cwd=ROOT)
        row.update(json.loads(child.stdout.strip().splitlines()[-1]))
        if browser:
            row.update(page_times(library, path.stem))
        row["load_after"] = os.getloadavg()[0]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="800,1000", help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--no-browser", action="store_true", help="only the parts, no page")
    parser.add_argument("--parts", help=argparse.SUPPRESS)  # the child process: time the parts of one file
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "hop_graph_scale.json")
    args = parser.parse_args()
    if args.parts:
        print(json.dumps(parts(args.parts)))
        return 0
    rows = [run_case(name, not args.no_browser) for name in args.cases.split(",")]
    print(f"{os.cpu_count()} CPU cores\n")
    print("| steps | tokens | edges | file MB | load s | build s | prune s | draw s | peak MB | page first s | "
          "page again s | server +MB | load avg |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        page = (f"{r['page_first_s']:.2f} | {r['page_second_s']:.2f} | {r['server_added_mb']:.0f}"
                if "page_first_s" in r else "– | – | –")
        print(f"| {r['steps']:,} | {r['tokens']:,} | {r['edges']:,} | {r['file_mb']:.1f} | {r['load_s']:.2f} | "
              f"{r['build_s']:.2f} | {r['prune_s']:.2f} | {r['draw_s']:.2f} | {r['peak_mb']:.0f} | {page} | "
              f"{r['load_before']:.1f} → {r['load_after']:.1f} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"cpu_count": os.cpu_count(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
