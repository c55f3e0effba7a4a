"""Side by side (issue 46): the same metrics for SmolLM2 on templated reasoning, the Qwen models on reasoning they
wrote (``own``) or a writer wrote for them (``paper``), and the paper's Qwen3-8B numbers.

Reads the committed `flashtrace eval` folders named in `RUNS` (their per-example records, so every number is
recomputed from the files), pools each task's examples (right and wrong answers together; the split is in each
run's own summary), and gives per task and method the mean with its 95 % bootstrap interval
(`flashtrace.evaluate.stats`), and each FlashTrace K > 0 against K = 0 paired on the same examples. Writes
``benchmarks/results/side_by_side.json`` and ``.md``; docs/evaluation.md holds the Markdown between markers,
and tests/evaluate/test_committed_runs.py checks it is what this script makes from the committed files.

    .venv/bin/python benchmarks/eval_side_by_side.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from flashtrace.evaluate.report import load_records, load_settings
from flashtrace.evaluate.stats import bootstrap_interval, paired_difference

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
OUT = RESULTS / "side_by_side"
# (label, folder, metrics it contributes): the runs compared, in the table's order. The RISE/MAS run holds the
# same multihop reasoning as the 0.5B's Recovery run, so only its deletion-curve metrics are shown
ALL = ("recovery", "rise", "mas")
RUNS = (
    ("SmolLM2-135M, templated reasoning", "eval_smollm2_paper", ALL),
    ("SmolLM2-135M, the 1.5B's right reasoning (paper)", "eval_smollm2_paper_protocol", ALL),
    ("Qwen2.5-Coder-0.5B, the 1.5B's right reasoning (paper)", "eval_qwen05_paper_recovery", ALL),
    ("Qwen2.5-Coder-0.5B, its own reasoning (own)", "eval_qwen05_own_recovery", ALL),
    ("Qwen2.5-Coder-0.5B, its own reasoning (own)", "eval_qwen05_own_rise", ("rise", "mas")),
    ("Qwen2.5-Coder-1.5B, its own reasoning (own)", "eval_qwen15_own_recovery", ALL),
    ("Qwen2.5-Coder-1.5B, its own reasoning (own)", "eval_qwen15_own_rise", ("rise", "mas")),
    # the word problems and passages (MATH- and MoreHopQA-style), run in folders of their own
    ("SmolLM2-135M, the 1.5B's right reasoning (paper)", "eval_smollm2_paper_words", ALL),
    ("Qwen2.5-Coder-0.5B, the 1.5B's right reasoning (paper)", "eval_qwen05_paper_words", ALL),
    ("Qwen2.5-Coder-0.5B, its own reasoning (own)", "eval_qwen05_own_words", ALL),
    ("Qwen2.5-Coder-1.5B, its own reasoning (own)", "eval_qwen15_own_words", ALL),
)
# the README's short table: (row label, the RUNS labels pooled into it); a task's cell comes from whichever of
# those runs holds the task
README_ROWS = (
    ("SmolLM2-135M, templated reasoning", ("SmolLM2-135M, templated reasoning",)),
    ("Qwen2.5-Coder-0.5B, its own reasoning", ("Qwen2.5-Coder-0.5B, its own reasoning (own)",)),
    ("Qwen2.5-Coder-1.5B, its own reasoning", ("Qwen2.5-Coder-1.5B, its own reasoning (own)",)),
    ("0.5B on the 1.5B's right answers (`paper`)", ("Qwen2.5-Coder-0.5B, the 1.5B's right reasoning (paper)",)),
)
TASK_ORDER = ("needle", "vartrack", "multihop", "arithmetic", "wordproblem", "passage")
METHODS = ("flashtrace-k0", "flashtrace-k1", "flashtrace-k2", "ifr", "attention", "perturbation")
SPANS = ("flashtrace-k0", "flashtrace-k0-gen", "flashtrace-k1", "flashtrace-k1-gen")  # hop 0 over the answer, or
# over reasoning + answer (the app's choice so far: analysis.limits.APP_HOP0)
SHORT = {"flashtrace-k0": "FT K=0", "flashtrace-k1": "FT K=1", "flashtrace-k2": "FT K=2", "ifr": "IFR",
         "attention": "attention", "perturbation": "perturbation"}
METRICS = ("recovery", "rise", "mas")
# METHOD.md section 8: Qwen3-8B on a GPU, from the paper (its tasks: RULER vartrack, MATH, MoreHopQA, HotpotQA)
_MATH = {"rise": "FlashTrace 0.348 (MATH)", "mas": "FlashTrace 0.446, IFR 0.490 (MATH)"}
_MOREHOPQA = {"rise": "FlashTrace 0.128 (MoreHopQA)", "mas": "FlashTrace 0.205 (MoreHopQA)"}
PAPER = {
    "vartrack": {"recovery": "FlashTrace 0.51-0.76 (one hop); IFR/AttnLRP 0.13-0.25"},
    "arithmetic": _MATH,
    "multihop": _MOREHOPQA,
    "needle": {"recovery": "FlashTrace 0.384, IFR 0.268 (RULER HotpotQA)"},
    "wordproblem": _MATH,  # GSM8K-style word problems: the paper's MATH numbers are the nearest reference
    "passage": _MOREHOPQA,
}
# the paper's Recovery@10% in the README's short table (its RULER tasks only)
PAPER_README = {"needle": "0.384 (IFR 0.268)", "vartrack": "0.51-0.76 (IFR 0.13-0.25)"}


def _value(record: dict, method: str, metric: str) -> float | None:
    entry = record["methods"].get(method)
    return None if entry is None else entry.get(metric)


def _cell(values: list) -> dict | None:
    present = [v for v in values if v is not None]
    if not present:
        return None
    interval = bootstrap_interval(present)
    return {"n": len(present), "mean": round(sum(present) / len(present), 4),
            "interval": [round(x, 4) for x in interval] if interval else None}


def _rounded(diff: dict) -> dict:
    """A `paired_difference` with its numbers (and its interval's) to 4 decimals."""
    return {k: (round(v, 4) if isinstance(v, float) else [round(x, 4) for x in v] if isinstance(v, list) else v)
            for k, v in diff.items()}


def run_table(folder: Path, metrics: tuple[str, ...] = METRICS) -> dict:
    """Per task: n, how many answers were right (own/paper), and per method and metric the pooled mean, interval
    and (for K > 0) the paired difference to K = 0."""
    records = load_records(folder)
    out = {}
    for task in sorted({r["task"] for r in records}):
        rows = [r for r in records if r["task"] == task]
        notes = [(r.get("meta") or {}).get("protocol") or {} for r in rows]
        entry = {"n": len(rows), "right": sum(bool(n.get("correct")) for n in notes) if any(notes) else None,
                 "methods": {}}
        for method in METHODS:
            cells = {m: _cell([_value(r, method, m) for r in rows]) if m in metrics else None for m in METRICS}
            if not any(cells.values()):
                continue
            if method != "flashtrace-k0" and method.startswith("flashtrace-k"):
                for m in metrics:
                    diff = paired_difference([_value(r, method, m) for r in rows],
                                             [_value(r, "flashtrace-k0", m) for r in rows])
                    if diff and cells[m]:
                        cells[m]["vs_k0"] = _rounded(diff)
            entry["methods"][method] = cells
        spans = {m: _cell([_value(r, m, "recovery") for r in rows]) for m in SPANS}
        if spans["flashtrace-k1-gen"] and "recovery" in metrics:
            diff = paired_difference([_value(r, "flashtrace-k1-gen", "recovery") for r in rows],
                                     [_value(r, "flashtrace-k1", "recovery") for r in rows])
            entry["hop0_spans"] = {**spans, "k1_gen_minus_answer": None if diff is None else _rounded(diff)}
        out[task] = entry
    return out


def _fmt(cell: dict | None) -> str:
    if not cell:
        return "–"
    text = f"{cell['mean']:.3f}"
    if cell.get("interval"):
        text += f" [{cell['interval'][0]:.2f}, {cell['interval'][1]:.2f}]"
    diff = cell.get("vs_k0")
    if diff:
        text += " (= K=0)" if diff["tie"] else f" ({'+' if diff['mean'] > 0 else ''}{diff['mean']:.3f} vs K=0)"
    return text


def markdown(table: dict) -> str:
    """One table per task and metric with data: a row per run (and the paper's numbers), a column per method."""
    lines = []
    tasks = sorted({t for run in table["runs"] for t in run["tasks"]})
    for task in tasks:
        for metric, name in (("recovery", "Recovery@10%"), ("rise", "RISE (lower is better)"),
                             ("mas", "MAS (lower is better)")):
            rows = [(run, run["tasks"][task]) for run in table["runs"] if task in run["tasks"]
                    and any((c or {}).get(metric) for c in run["tasks"][task]["methods"].values())]
            if not rows:
                continue
            lines += [f"**{task}, {name}**", "",
                      "| setting | n (right) | " + " | ".join(SHORT[m] for m in METHODS) + " |",
                      "|---|---|" + "---|" * len(METHODS)]
            for run, info in rows:
                right = "" if info["right"] is None else f" ({info['right']})"
                cells = [_fmt((info["methods"].get(m) or {}).get(metric)) for m in METHODS]
                lines.append(f"| {run['label']} | {info['n']}{right} | " + " | ".join(cells) + " |")
            paper = PAPER.get(task, {}).get(metric)
            if paper:
                lines.append(f"| the paper, Qwen3-8B (GPU) | – | {paper} |" + " |" * (len(METHODS) - 1))
            lines.append("")
    return "\n".join(lines)


def spans_markdown(table: dict) -> str:
    """Recovery@10% with hop 0 over the answer and over reasoning + answer, per run and task (runs that have
    both), and K = 1's paired difference."""
    lines = ["| setting | task | n | answer, K=0 | generation, K=0 | answer, K=1 | generation, K=1 | "
             "generation - answer, K=1 (paired) |", "|---|---|---|---|---|---|---|---|"]
    for run in table["runs"]:
        for task, info in run["tasks"].items():
            spans = info.get("hop0_spans")
            if not spans:
                continue
            diff = spans["k1_gen_minus_answer"]
            paired = "–" if diff is None else (f"{diff['mean']:+.3f} [{diff['interval'][0]:+.2f}, "
                                               f"{diff['interval'][1]:+.2f}]" + (" tie" if diff["tie"] else ""))
            lines.append(f"| {run['label']} | {task} | {info['n']} | "
                         + " | ".join(_fmt(spans[m]) for m in SPANS) + f" | {paired} |")
    return "\n".join(lines)


def readme_markdown(table: dict) -> str:
    """The README's short table: Recovery@10% means of FlashTrace K = 1 / K = 0 / IFR per task (intervals and
    paired tests are in the full table), with each row's n per task, and the paper's numbers."""
    tasks = [t for t in TASK_ORDER if any(t in run["tasks"] for run in table["runs"])]
    lines = ["| FlashTrace K = 1 / K = 0 / IFR | n per task | " + " | ".join(tasks) + " |",
             "|---|---|" + "---|" * len(tasks)]
    for label, sources in README_ROWS:
        held = {}
        for run in table["runs"]:
            if run["label"] in sources:
                for task, info in run["tasks"].items():
                    if info["methods"].get("flashtrace-k1", {}).get("recovery"):
                        held.setdefault(task, info)
        if not held:
            continue
        cells, counts = [], []
        for task in tasks:
            info = held.get(task)
            if info is None:
                cells.append("–")
                counts.append("–")
                continue
            means = [((info["methods"].get(m) or {}).get("recovery") or {}).get("mean")
                     for m in ("flashtrace-k1", "flashtrace-k0", "ifr")]
            cells.append(" / ".join("–" if v is None else f"{v:.2f}" for v in means))
            counts.append(str(info["n"]))
        lines.append(f"| {label} | {'/'.join(counts)} | " + " | ".join(cells) + " |")
    lines.append("| the paper, Qwen3-8B on a GPU (RULER) | – | "
                 + " | ".join(PAPER_README.get(t, "–") for t in tasks) + " |")
    return "\n".join(lines)


def build() -> dict:
    runs = []
    for label, name, metrics in RUNS:
        folder = RESULTS / name
        if not (folder / "examples").is_dir():
            continue
        settings = load_settings(folder)
        runs.append({"label": label, "folder": f"benchmarks/results/{name}", "model": settings.get("model"),
                     "protocol": (settings.get("protocol") or {}).get("name", "templated")
                     if isinstance(settings.get("protocol"), dict) else "templated",
                     "k": settings.get("k"), "metrics": list(metrics), "tasks": run_table(folder, metrics)})
    return {"issue": 46, "what": __doc__.split("\n\n")[0], "runs": runs, "paper": PAPER}


def main() -> int:
    table = build()
    OUT.with_suffix(".json").write_text(json.dumps(table, indent=1) + "\n")
    text = markdown(table) + "\n\n**Which tokens hop 0 explains**\n\n" + spans_markdown(table)
    OUT.with_suffix(".md").write_text(text + "\n")
    print(text + "\n\n**README**\n\n" + readme_markdown(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
