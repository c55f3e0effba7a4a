"""Mutation check: do the fast tests notice deliberate bugs in the engine, span detection and graph?

Each mutant replaces one exact snippet of one source file (the snippet must occur exactly once) in a
fresh copy of the package and tests, then runs the targeted fast tests of that code. A mutant is
*killed* when those tests fail, *survives* when they pass. The unmutated copy must pass first.
Run on demand (not in CI; a few minutes on 2 cores):

    PYTHONPATH=$PWD .venv/bin/python benchmarks/mutation.py [--only ID,ID] [--out benchmarks/results]

Writes ``mutation.json`` and ``mutation.md`` (mutant, file, what it breaks, result, tests); run times
are printed, not written (they depend on the machine's load).
Exit code 1 when a mutant survives or the baseline fails.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SPAN = "tests/attribution/test_span.py"


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str
    old: str
    new: str
    breaks: str
    tests: tuple[str, ...]  # pytest arguments: files, node ids, -k expressions


MUTANTS = [
    Mutant("proximity-no-clamp", "flashtrace/engine/kernels/proximity.py",
           "(whole - part).abs().sum(-1)).clamp_min(0)", "(whole - part).abs().sum(-1))",
           "proximity may go negative (the residual part's, in the denominator)", (SPAN, "-k", "negative or reference")),
    Mutant("kernel-skips-small-attention", "flashtrace/engine/kernels/proximity.py",
           "if a == 0.0:", "if a < 1e-4:", "the CPU kernel drops sources with aggregated attention < 1e-4",
           (SPAN, "-k", "300 or reference")),
    Mutant("torch-kernel-no-clamp", "flashtrace/engine/kernels/proximity.py",
           "return diff.sum(-1).clamp_min_(0)", "return diff.sum(-1)",
           "the torch proximity path (GPU) keeps negative proximities", (SPAN, "-k", "torch")),
    Mutant("boxed-at-end", "flashtrace/engine/inputs/spans.py", "while i < hi and depth:", "while i < hi - 1 and depth:",
           "a \\boxed{} closing on the response's last character is not found", ("tests/test_inputs.py",)),
    Mutant("answer-first-mark", "flashtrace/engine/inputs/spans.py",
           "found = _strip(text, mark.end(), hi if end < 0 else end) or found",
           "found = found or _strip(text, mark.end(), hi if end < 0 else end)",
           "the first 'Answer:' wins instead of the last", ("tests/test_inputs.py",)),
    Mutant("reasoning-span-over-answer", "flashtrace/engine/inputs/sequence.py", "        return pos[0], end\n",
           "        return pos[0], pos[-1] + 1\n",
           "the reasoning span runs over the answer when text follows it", ("tests/test_inputs.py",)),
    Mutant("through-reasoning-drops-answer-edges", "flashtrace/analysis/graph.py",
           "if through_reasoning and dst == self.answer and src in prompt:",
           "if through_reasoning and dst == self.answer:",
           "through_reasoning drops every edge into the answer (no path left)",
           ("tests/test_graph.py", "-k", "brute")),
    Mutant("incoming-share-off-by-one", "flashtrace/analysis/graph.py", "(cum[hi] - cum[lo]) / total",
           "(cum[hi] - cum[np.minimum(lo + 1, hi)]) / total", "edge shares skip each source segment's first token",
           ("tests/test_graph.py", "-k", "shares")),
    Mutant("rho-forgets-previous-hops", "flashtrace/engine/attribution/hops.py",
           "rho = rho_prev * (on_g / total if total > 0 else 0.0)", "rho = on_g / total if total > 0 else 0.0",
           "ρ_k is not multiplied by ρ_{k-1}", ("tests/attribution/test_hops.py", "tests/test_tracing.py", "-k",
                                                 "invariants or hops or rho")),
    Mutant("contribution-uses-new-rho", "flashtrace/engine/attribution/hops.py", "contribution = raw * obs * rho_prev",
           "contribution = raw * obs * rho", "each hop's contribution is scaled by its own ρ instead of ρ_{k-1}",
           ("tests/attribution/test_hops.py", "tests/test_tracing.py", "-k", "invariants or hops or rho")),
    Mutant("stop-tokens-keep-score", "flashtrace/engine/attribution/hops.py", "raw = aggregate(weights[None])[0] * keep",
           "raw = aggregate(weights[None])[0]", "stop tokens keep their score in a hop's raw vector",
           ("tests/attribution/test_hops.py", "tests/test_tracing.py", "-k", "invariants or hops or stop")),
    Mutant("residual-left-out", "flashtrace/engine/attribution/span.py", "denom = (p.sum((1, 2)) + r).clamp_min(1e-30)",
           "denom = p.sum((1, 2)).clamp_min(1e-30)", "the residual's proximity is left out of the denominator",
           (SPAN, "-k", "reference")),
    Mutant("threshold-share-without-residual", "flashtrace/engine/attribution/span.py",
           "share = p / (p.sum((1, 2)) + r).clamp_min(1e-30)[:, None, None]",
           "share = p / p.sum((1, 2)).clamp_min(1e-30)[:, None, None]",
           "the pruning share τ is taken without the residual", (SPAN, "-k", "threshold")),
    Mutant("ifr-rows-not-normalised", "flashtrace/engine/attribution/tokenwise.py",
           "rows = rows / rows.sum(1, keepdim=True).clamp_min(1e-30)", "rows = rows",
           "token-wise IFR sums raw rows instead of row-normalised ones",
           (SPAN, "tests/test_steps.py", "-k", "ifr or tokenwise")),
    Mutant("steps-ignore-stop-tokens", "flashtrace/engine/attribution/steps.py", "weights[b, lo:hi] = keep[lo:hi].float()",
           "weights[b, lo:hi] = 1.0", "step targets give stop tokens weight", ("tests/test_steps.py",)),
    Mutant("window-off-by-one", "flashtrace/engine/models/attention.py",
           "(cols[None, :] <= rows[:, None] - sliding_window)", "(cols[None, :] < rows[:, None] - sliding_window)",
           "the sliding window lets one more source in", (SPAN, "-k", "reference and window")),
]


def _copy_tree(dest: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "results", ".hypothesis")
    for name in ("flashtrace", "tests", "benchmarks", "assets"):  # assets: the gallery some graph tests read
        if (ROOT / name).exists():
            shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    for name in ("pyproject.toml",):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, dest / name)


def _run_tests(folder: Path, tests: tuple[str, ...], timeout: int) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(folder), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-m", "not slow and not browser",
           *tests]
    try:
        proc = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, "timeout"
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    summary = lines[-1] if lines else proc.stderr.strip()[-200:]
    return proc.returncode, re.sub(r" in [\d.]+s.*$", "", summary)  # counts only: run times depend on the load


def run_mutant(mutant: Mutant | None, timeout: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="ft-mutant-") as tmp:
        folder = Path(tmp)
        _copy_tree(folder)
        tests: tuple[str, ...] = tuple(sorted({t for m in MUTANTS for t in m.tests if t.startswith("tests/")}))
        if mutant is not None:
            path = folder / mutant.file
            text = path.read_text(encoding="utf-8")
            if text.count(mutant.old) != 1:
                return {**asdict(mutant), "result": "stale", "detail": f"snippet found {text.count(mutant.old)} times",
                        "seconds": 0.0}
            path.write_text(text.replace(mutant.old, mutant.new), encoding="utf-8")
            tests = mutant.tests
        start = time.perf_counter()
        code, detail = _run_tests(folder, tests, timeout)
        seconds = round(time.perf_counter() - start, 1)
    if mutant is None:
        return {"id": "baseline", "result": "pass" if code == 0 else "FAIL", "detail": detail, "seconds": seconds}
    result = {0: "SURVIVED", 1: "killed"}.get(code, "error")  # 1: tests failed; others: collection error, timeout
    return {**asdict(mutant), "result": result, "detail": detail, "seconds": seconds}


def markdown(rows: list[dict], label: str = "") -> str:
    lines = ["# Mutation check (benchmarks/mutation.py)", "", "| mutant | file | what it breaks | result | tests |",
             "|---|---|---|---|---|"]
    for r in rows:
        tests = " ".join(r.get("tests", ())).replace("|", "\\|")
        lines.append(f"| {r['id']} | {r.get('file', '')} | {r.get('breaks', '')} | {r['result']} | {tests} |")
    killed = sum(r["result"] == "killed" for r in rows)
    lines += ["", f"{killed} of {sum(r['id'] != 'baseline' for r in rows)} mutants killed by the fast tests."
              + (f" Source: {label}." if label else "")]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated mutant ids (default: all)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for mutation.json and mutation.md")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per test run")
    parser.add_argument("--skip-baseline", action="store_true", help="do not run the unmutated tests first")
    parser.add_argument("--label", default="", help="what was tested (e.g. a commit), written under the table")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.only or m.id in args.only.split(",")]
    rows = [] if args.skip_baseline else [run_mutant(None, args.timeout)]
    if rows and rows[0]["result"] != "pass":
        print(f"baseline fails: {rows[0]['detail']}", file=sys.stderr)
        return 1
    for mutant in chosen:
        rows.append(run_mutant(mutant, args.timeout))
        print(f"{mutant.id:40s} {rows[-1]['result']:9s} {rows[-1]['seconds']:6.1f} s  {rows[-1]['detail']}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    kept = [{k: v for k, v in r.items() if k != "seconds"} for r in rows]
    (args.out / "mutation.json").write_text(json.dumps(kept, indent=1) + "\n", encoding="utf-8")
    (args.out / "mutation.md").write_text(markdown(rows, args.label), encoding="utf-8")
    return 0 if all(r["result"] in ("killed", "pass") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
