"""Run a grid of benchmark cells, each in its own process, and write JSON + a Markdown table."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from tqdm import tqdm

MODES = ("forward", "flashtrace", "ifr", "ifr-rowwise")


def run_sweep(cells: list[dict], out_dir: Path, name: str, timeout: float = 3600) -> dict:
    """Run `cells` (dicts for `flashtrace.bench.cell`), write ``<name>.json`` and ``<name>.md``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for spec in tqdm(cells, desc="benchmark cells", unit="cell"):
        proc = subprocess.run([sys.executable, "-m", "flashtrace.bench.cell", json.dumps(spec)],
                              capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            results.append({**spec, "error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"})
        else:
            results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        tqdm.write(_one_line(results[-1]))
    report = {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "cpus": _cpu_count()},
        "command": "flashtrace " + " ".join(sys.argv[1:]),
        "cells": results,
    }
    (out_dir / f"{name}.json").write_text(json.dumps(report, indent=1))
    (out_dir / f"{name}.md").write_text(markdown_table(results))
    return report


def _cpu_count() -> int:
    import os

    return os.cpu_count() or 1


def _one_line(r: dict) -> str:
    if "error" in r:
        return f"{r['mode']:<12} N={r['n_prompt']}+{r['n_response']}: ERROR {r['error']}"
    return (f"{r['mode']:<12} N={r['n_prompt']}+{r['n_response']}: total {r['total_s']:.2f} s, "
            f"peak {r['peak_rss_bytes'] / 2**30:.2f} GiB")


def _gib(x: float) -> str:
    return f"{x / 2**30:.2f}"


def markdown_table(results: list[dict]) -> str:
    """One row per (prompt, response) size: time and memory per mode, plus the ratios that matter."""
    groups: dict[tuple, dict] = {}
    for r in results:
        groups.setdefault((r["n_prompt"], r["n_response"]), {})[r["mode"]] = r
    lines = ["| prompt | response | N | threads | forward s | FlashTrace K=1 s (record + attr) | IFR batched attr s "
             "| IFR row-wise attr s | FT total / forward | IFR batched / FT attr | IFR row-wise / FT attr "
             "| peak GiB fwd / FT / IFR |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for (n_p, n_r), modes in sorted(groups.items()):
        fwd, ft, ifr, row = (modes.get(m) for m in MODES)
        ok = lambda x: x is not None and "error" not in x  # noqa: E731
        threads = next((m["threads"] for m in modes.values() if "threads" in m), "")
        cells = [str(n_p), str(n_r), str(n_p + n_r), str(threads),
                 f"{fwd['forward_s']:.2f}" if ok(fwd) else "–",
                 f"{ft['total_s']:.2f} ({ft['record_s']:.2f} + {ft['attribution_s']:.2f})" if ok(ft) else "–",
                 _attr(ifr), _attr(row),
                 f"{ft['total_s'] / fwd['forward_s']:.2f}x" if ok(ft) and ok(fwd) else "–",
                 f"{ifr['attribution_s'] / ft['attribution_s']:.0f}x" if ok(ifr) and ok(ft) else "–",
                 f"{row['attribution_s'] / ft['attribution_s']:.0f}x" if ok(row) and ok(ft) else "–",
                 " / ".join(_gib(m["peak_rss_bytes"]) if ok(m) else "–" for m in (fwd, ft, ifr))]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Times in seconds (wall), memory = peak resident set of the cell's own process (model included). "
                 "`*` = timed on the first rows and extrapolated linearly to all target rows.")
    return "\n".join(lines) + "\n"


def _attr(r: dict | None) -> str:
    if r is None or "error" in r:
        return "–"
    star = "*" if r.get("extrapolated") else ""
    return f"{r['attribution_s']:.1f}{star}"
