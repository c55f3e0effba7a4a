"""Run a grid of benchmark cells, each in its own process, and write JSON + a Markdown table.

Every cell records the machine's load average (``os.getloadavg``) just before it starts and just after it
ends. A cell whose 1-minute load before it starts is above `busy_threshold` is flagged (one line on
stderr, ``load_busy`` in the JSON, ``!`` in the table): its times are not comparable with an idle run.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from tqdm import tqdm

MODES = ("forward", "flashtrace", "ifr", "ifr-rowwise")


def busy_threshold(cpus: int, threads: int) -> float:
    """Highest 1-minute load average at which a cell using `threads` threads counts as started on an idle
    machine: half a core of other work, plus half a core for each further core the cell leaves free.
    2 CPUs: 0.5 for a 2-thread cell, 1.0 for a 1-thread cell; 16 CPUs, 2 threads: 7.5.

    Args:
        cpus: The machine's CPU count.
        threads: The threads the cell uses.

    Returns:
        ``0.5 * max(1, cpus - threads + 1)``.
    """
    return 0.5 * max(1, cpus - threads + 1)


def load_warning(load1: float, cpus: int, threads: int, label: str = "") -> str | None:
    """The one-line warning for a cell about to start at 1-minute load `load1`, or None when quiet.

    Args:
        load1: The 1-minute load average now.
        cpus: The machine's CPU count.
        threads: The threads the cell uses.
        label: The cell's name in the warning; empty for "cell".

    Returns:
        The warning, or None when the load is at most `busy_threshold`.
    """
    limit = busy_threshold(cpus, threads)
    if load1 <= limit:
        return None
    return (f"warning: machine busy before {label or 'cell'}: 1-minute load {load1:.2f} > {limit:.2f} "
            f"({cpus} CPUs, {threads} threads); its times are not comparable with an idle run")


def wait_for_quiet(limit: float, settle_s: float, getload: Callable[[], tuple] = os.getloadavg,
                   sleep: Callable[[float], None] = time.sleep, step: float = 5.0) -> float:
    """Wait until the 1-minute load is at most `limit`. A finished cell keeps the 1-minute load up for a while (it
    decays by a factor e per minute), so a settle time lets the next cell start from a quiet machine.

    Args:
        limit: The 1-minute load average to wait for.
        settle_s: The most seconds waited.
        getload: Gives the load averages, the 1-minute one first (`os.getloadavg`).
        sleep: Waits the seconds given (`time.sleep`).
        step: The seconds waited between two looks at the load.

    Returns:
        The seconds waited.
    """
    waited = 0.0
    while waited < settle_s and getload()[0] > limit:
        pause = min(step, settle_s - waited)
        sleep(pause)
        waited += pause
    return waited


def run_cells(cells: list[dict], timeout: float = 3600, settle: float = 0.0,
              cwd: str | Path | None = None) -> list[dict]:
    """Run each cell in its own process (`flashtrace.run.bench.cell`), with the load before/after it.

    Args:
        cells: The cells' specs (dicts for `flashtrace.run.bench.cell`).
        timeout: The most seconds a cell may run; a cell past it is recorded as failed.
        settle: The most seconds waited for a quiet machine before each cell (`wait_for_quiet`).
        cwd: The folder the cells run in; None for this process's.

    Returns:
        One result per cell, in order: the cell's output (or its spec with an ``error``), with ``load_before``,
            ``load_after``, ``load_busy`` and ``settle_wait_s``.
    """
    cpus = _cpu_count()
    results = []
    for spec in tqdm(cells, desc="benchmark cells", unit="cell"):
        threads = spec.get("threads") or 1
        waited = wait_for_quiet(busy_threshold(cpus, threads), settle)
        before = os.getloadavg()
        warning = load_warning(before[0], cpus, threads, _label(spec))
        if warning:
            tqdm.write(warning, file=sys.stderr)
        try:
            proc = subprocess.run([sys.executable, "-m", "flashtrace.run.bench.cell", json.dumps(spec)],
                                  capture_output=True, text=True, timeout=timeout, cwd=cwd)
        except subprocess.TimeoutExpired:
            proc = subprocess.CompletedProcess([], 1, "", f"timed out after {timeout:.0f} s")
        if proc.returncode != 0:
            result = {**spec, "error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"}
        else:
            result = json.loads(proc.stdout.strip().splitlines()[-1])
        result.update(load_before=[round(x, 2) for x in before], load_after=[round(x, 2) for x in os.getloadavg()],
                      load_busy=warning is not None, settle_wait_s=round(waited, 1))
        results.append(result)
        tqdm.write(_one_line(result))
    return results


def machine() -> dict:
    """The platform, Python version and CPU count of this machine.

    Returns:
        ``{"platform": ..., "python": ..., "cpus": ...}``.
    """
    return {"platform": platform.platform(), "python": platform.python_version(), "cpus": _cpu_count()}


BUSY_RULE = "1-minute load before a cell > 0.5 * max(1, cpus - threads + 1)"


def run_sweep(cells: list[dict], out_dir: Path, name: str, timeout: float = 3600, settle: float = 0.0) -> dict:
    """Run `cells`, write ``<name>.json`` and ``<name>.md``.

    Args:
        cells: The cells' specs (dicts for `flashtrace.run.bench.cell`).
        out_dir: The folder the report files are written in (created when missing).
        name: The report files' stem.
        timeout: The most seconds a cell may run.
        settle: The most seconds waited for a quiet machine before each cell.

    Returns:
        The report written as JSON: creation time, machine, command, busy rule and the cells' results.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    results = run_cells(cells, timeout, settle)
    report = {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "command": "flashtrace " + " ".join(sys.argv[1:]),
        "busy_rule": BUSY_RULE,
        "cells": results,
    }
    (out_dir / f"{name}.json").write_text(json.dumps(report, indent=1))
    (out_dir / f"{name}.md").write_text(markdown_report(results, _cpu_count()))
    return report


def _cpu_count() -> int:
    return os.cpu_count() or 1


def _label(spec: dict) -> str:
    return f"{spec['mode']} N={spec['n_prompt']}+{spec['n_response']} ({spec.get('threads') or 1} threads)"


def _one_line(r: dict) -> str:
    if "error" in r:
        return f"{r['mode']:<12} N={r['n_prompt']}+{r['n_response']}: ERROR {r['error']}"
    return (f"{r['mode']:<12} N={r['n_prompt']}+{r['n_response']} t={r.get('threads')}: total {r['total_s']:.2f} s, "
            f"peak {r['peak_rss_bytes'] / 2**30:.2f} GiB, load {r['load_before'][0]:.2f} -> {r['load_after'][0]:.2f}")


def _gib(x: float) -> str:
    return f"{x / 2**30:.2f}"


def _ok(r: dict | None) -> bool:
    return r is not None and "error" not in r


def _ratio(a: float, b: float, digits: int | None = 2) -> str:
    """``a / b`` as ``0.17x``; ``digits=None``: two significant digits below 10 (``0.15x``, ``3.4x``), none above."""
    if b <= 0:
        return "–"
    x = a / b
    if digits is None:
        digits = 0 if x >= 10 else 1 if x >= 1 else 2
    return f"{x:.{digits}f}x"


def markdown_report(results: list[dict], cpus: int) -> str:
    """One section per thread count: a header stating threads and load, the table, the footer.

    Args:
        results: The cells' results (`run_cells`).
        cpus: The machine's CPU count, for the idle rule.

    Returns:
        The Markdown text, most threads first.
    """
    by_threads: dict[int, list[dict]] = {}
    for r in results:
        by_threads.setdefault(r.get("threads") or 1, []).append(r)
    parts = []
    for threads in sorted(by_threads, reverse=True):
        cells = by_threads[threads]
        loads = [r["load_before"][0] for r in cells if "load_before" in r]
        busy = sum(1 for r in cells if r.get("load_busy"))
        head = f"### {threads} thread{'s' if threads != 1 else ''} per cell ({cpus} CPUs)\n\n"
        if loads:
            head += (f"1-minute load average before the cells: {min(loads):.2f}–{max(loads):.2f} (idle rule: at most "
                     f"{busy_threshold(cpus, threads):.2f} = 0.5 × max(1, CPUs − threads + 1)); "
                     f"{busy} of {len(cells)} cells started on a busy machine"
                     f"{' (marked !)' if busy else ''}.\n\n")
        head += _protocol(cells)
        parts.append(head + markdown_table(cells))
    return "\n".join(parts)


def markdown_table(results: list[dict]) -> str:
    """One row per (prompt, response) size: time and memory per mode, plus the ratios that matter.

    Args:
        results: The cells' results (`run_cells`).

    Returns:
        The Markdown table and its footnote.
    """
    groups: dict[tuple, dict] = {}
    for r in results:
        groups.setdefault((r["n_prompt"], r["n_response"]), {})[r["mode"]] = r
    hops = sorted({r.get("hops", 1) for r in results if r["mode"] == "flashtrace"}) or [1]
    k = "/".join(str(h) for h in hops)
    gpu = any("peak_gpu_bytes" in r for r in results)
    targeted = any(r.get("target_tokens") for r in results)
    lines = [f"| prompt | response | N | forward s | FlashTrace K={k} s (record + attr) | **FT attr / forward** "
             "| FT total / forward | IFR batched attr s | IFR row-wise attr s | IFR batched / FT attr "
             "| IFR row-wise / FT attr | peak GiB fwd / FT / IFR " + ("| peak GPU GiB fwd / FT " if gpu else "")
             + "| load 1-min before → after |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|" + ("---|" if gpu else "") + "---|"]
    for (n_p, n_r), modes in sorted(groups.items()):
        lines.append("| " + " | ".join([str(n_p), str(n_r), str(n_p + n_r), *_row_cells(modes, gpu)]) + " |")
    lines.append("")
    lines.append("Times in seconds (wall), memory = peak resident set of the cell's own process (model included). "
                 "**FT attr / forward** = FlashTrace attribution (hops, recording excluded) over one plain SDPA "
                 "forward (its own process, same threads): the acceptance metric. `*` = timed on some target rows "
                 "and extrapolated to all (see the JSON: `rows_timed`, `row_positions`). "
                 + ("With a target of the last T tokens, IFR attributes those T rows only (no hops): its ratios are not "
                    "the paper's comparison (`benchmarks/paper_protocol.py` is). " if targeted else "")
                 + "Load column: the highest "
                 "1-minute load average before / after the row's cells; `!` = a cell started on a busy machine."
                 + (" Peak GPU = `torch.cuda.max_memory_allocated` of the timed phases." if gpu else ""))
    return "\n".join(lines) + "\n"


def _either(ok: bool, text) -> str:
    """`text()` when `ok`, else a dash (the cell's run failed or was not made)."""
    return text() if ok else "–"


def _row_cells(modes: dict, gpu: bool) -> list[str]:
    """One size's cells after its sizes: times, the ratios that matter, peak memory and the load."""
    fwd, ft, ifr, row = (modes.get(m) for m in MODES)
    both = _ok(ft) and _ok(fwd)
    return [
        _either(_ok(fwd), lambda: f"{fwd['forward_s']:.2f}"),
        _either(_ok(ft), lambda: f"{ft['total_s']:.2f} ({ft['record_s']:.2f} + {ft['attribution_s']:.2f})"),
        _either(both, lambda: f"**{_ratio(ft['attribution_s'], fwd['forward_s'])}**"),
        _either(both, lambda: _ratio(ft["total_s"], fwd["forward_s"])),
        _attr(ifr), _attr(row),
        _either(_ok(ifr) and _ok(ft), lambda: _ratio(ifr["attribution_s"], ft["attribution_s"], None)),
        _either(_ok(row) and _ok(ft), lambda: _ratio(row["attribution_s"], ft["attribution_s"], None)),
        " / ".join(_either(_ok(m), lambda m=m: _gib(m["peak_rss_bytes"])) for m in (fwd, ft, ifr)),
        *([" / ".join(_either(_ok(m), lambda m=m: _gib(m["peak_gpu_bytes"])) for m in (fwd, ft))] if gpu else []),
        _loads(list(modes.values()))]


def _protocol(cells: list[dict]) -> str:
    """What the FlashTrace cells attributed and how often each time was taken."""
    targets = sorted({int(c.get("target_tokens") or 0) for c in cells})
    what = ", ".join(f"the last {t} tokens (hop 0; later hops re-attribute the response before them)" if t else
                     "the whole response (hop 0 and later hops alike)" for t in targets)
    repeats = sorted({int(c.get("repeats") or 1) for c in cells})
    runs = (f"Forward and FlashTrace times are medians of {'/'.join(map(str, repeats))} runs in the cell's process "
            "(all runs in the JSON)." if repeats != [1] else "Each time is one run.")
    return f"Target: {what}. {runs}\n\n"


def _loads(cells: list[dict]) -> str:
    with_load = [c for c in cells if "load_before" in c]
    if not with_load:
        return "–"
    before = max(c["load_before"][0] for c in with_load)
    after = max(c["load_after"][0] for c in with_load)
    return f"{before:.2f} → {after:.2f}{' !' if any(c.get('load_busy') for c in with_load) else ''}"


def _attr(r: dict | None) -> str:
    if r is None or "error" in r:
        return "–"
    star = "*" if r.get("extrapolated") else ""
    return f"{r['attribution_s']:.1f}{star}"
