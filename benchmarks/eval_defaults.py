"""`flashtrace eval --task needle --n 3` with its defaults, as a user runs it (issue 28: <= 90 s on an idle machine,
with per-method progress; the estimate printed before it starts within 0.5-2x of the actual time).

Runs the command in a fresh process into a new folder, times it from start to exit (model load, the examples,
the report and charts), reads the estimate it printed before starting and the per-example times it wrote.

Usage: ``.venv/bin/python benchmarks/eval_defaults.py [--task needle] [--n 3] [-- extra eval flags]``.
Writes ``benchmarks/results/eval_needle3_defaults.json`` (the run's summary, with ``wall_s``, the estimate and
the load average) and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ESTIMATE = re.compile(r"estimated (?:~)?([\d.,]+)(?:[–-]([\d.,]+))? ?(s|min|h)\b")
UNIT = {"s": 1, "min": 60, "h": 3600}


def estimate_range(stderr: str) -> tuple[float, float] | None:
    """The ``estimated LOW–HIGH unit in all`` range the command printed, in seconds."""
    match = ESTIMATE.search(stderr)
    if not match:
        return None
    low = float(match.group(1).replace(",", ""))
    high = float((match.group(2) or match.group(1)).replace(",", ""))
    return low * UNIT[match.group(3)], high * UNIT[match.group(3)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="needle")
    parser.add_argument("--n", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "eval_needle3_defaults.json")
    parser.add_argument("extra", nargs="*", help="more flags for flashtrace eval (after --)")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as folder:
        command = [sys.executable, "-m", "flashtrace.cli", "eval", "--task", args.task, "--n", str(args.n),
                   "--out", folder, *args.extra]
        start = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - start
        if done.returncode:
            print(done.stderr[-3000:], file=sys.stderr)
            return done.returncode
        summary = json.loads((Path(folder) / "summary.json").read_text())
        records = [json.loads(p.read_text()) for p in sorted((Path(folder) / "examples").glob("*.json"))]
    estimate = estimate_range(done.stderr)
    parts = {key: sum(r.get(key) or 0.0 for r in records) for key in ("total_s", "deletion_s", "forward_s")}
    summary.update(command=" ".join(["flashtrace", *command[3:-2]]), wall_s=wall, estimate_s=estimate,
                   examples_s=parts, load_before=load_before, load_after=os.getloadavg()[0],
                   progress_lines=sum(1 for line in done.stderr.splitlines() if "deletion" in line))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=1))
    low_high = f"{estimate[0]:.0f}-{estimate[1]:.0f} s" if estimate else "not found"
    print("| wall s | examples s (deletion s) | estimate | inside 0.5-2x of its middle | load before/after |")
    print("|---|---|---|---|---|")
    middle = (estimate[0] * estimate[1]) ** 0.5 if estimate else None
    inside = middle is not None and middle / 2 <= wall <= middle * 2
    print(f"| {wall:.1f} | {parts['total_s']:.1f} ({parts['deletion_s']:.1f}) | {low_high} | {inside} | "
          f"{load_before:.2f} / {summary['load_after']:.2f} |")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
