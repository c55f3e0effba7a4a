"""Paired comparisons on a `flashtrace eval` folder: is FlashTrace's difference to a baseline real?

For every task and metric, the per-example difference `method - reference` (same example, same
deletion set) is summarised by its mean, a 95 % bootstrap interval and the two-sided Wilcoxon
signed-rank p-value (scipy). Also prints, per method, the share of stop tokens (punctuation,
whitespace) among its top 10 % prompt tokens, and how much deleting the whole prompt costs the
answer (nats). Prints Markdown and writes JSON.

    python benchmarks/eval_analysis.py benchmarks/results/eval_smollm2 \
        --reference flashtrace-k2 --against flashtrace-k0,ifr,attention,rollout,ig,perturbation
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
from pathlib import Path

from flashtrace.evaluate.report import load_records
from flashtrace.engine.inputs import is_stop_token

METRICS = {"rise": "RISE", "mas": "MAS", "recovery": "Recovery@10%"}


def bootstrap_ci(diffs: list[float], rounds: int = 4000, seed: int = 0) -> tuple[float, float]:
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(diffs, k=len(diffs))) for _ in range(rounds))
    return means[int(0.025 * rounds)], means[int(0.975 * rounds) - 1]


def wilcoxon_p(diffs: list[float]) -> float | None:
    from scipy.stats import wilcoxon

    if all(abs(d) < 1e-12 for d in diffs):
        return None
    return float(wilcoxon(diffs).pvalue)


def paired(records: list[dict], reference: str, others: list[str]) -> list[dict]:
    rows = []
    for task in dict.fromkeys(r["task"] for r in records):
        mine = [r for r in records if r["task"] == task and reference in r["methods"]]
        for other in others:
            for metric in METRICS:
                pairs = [(r["methods"][reference][metric], r["methods"][other][metric]) for r in mine
                         if other in r["methods"] and r["methods"][reference][metric] is not None
                         and r["methods"][other][metric] is not None]
                if len(pairs) < 2:
                    continue
                diffs = [a - b for a, b in pairs]
                lo, hi = bootstrap_ci(diffs)
                rows.append({"task": task, "metric": metric, "reference": reference, "other": other,
                             "n": len(diffs), "mean_diff": statistics.fmean(diffs), "ci95": [lo, hi],
                             "wilcoxon_p": wilcoxon_p(diffs)})
    return rows


def stop_share(records: list[dict], methods: list[str]) -> dict[str, float]:
    """Mean share of punctuation-only or whitespace-only tokens (the `punctuation` preset) among each
    method's top ceil(10 %) prompt tokens."""
    out = {}
    for m in methods:
        shares = []
        for r in records:
            if m not in r["methods"]:
                continue
            scores = r["methods"][m]["scores"]
            top = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:math.ceil(0.1 * len(scores))]
            shares.append(sum(is_stop_token(r["tokens"][i], "punctuation") for i in top) / len(top))
        if shares:
            out[m] = statistics.fmean(shares)
    return out


def whole_prompt_cost(records: list[dict]) -> dict[str, float]:
    """Per task, the median drop of the answer log-probability when every prompt token is deleted (nats)."""
    out = {}
    for task in dict.fromkeys(r["task"] for r in records):
        drops = [next(iter(r["methods"].values()))["s"][0] - next(iter(r["methods"].values()))["s"][-1]
                 for r in records if r["task"] == task]
        out[task] = statistics.median(drops)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="a flashtrace eval --out folder")
    parser.add_argument("--reference", default="flashtrace-k2", help="the method compared against the others")
    parser.add_argument("--against", default="flashtrace-k0,ifr,attention,rollout,ig,perturbation",
                        help="comma-separated methods to compare with")
    parser.add_argument("--json", type=Path, default=None, help="output JSON (default: FOLDER/paired.json)")
    args = parser.parse_args()
    records = load_records(args.folder)
    others = [m.strip() for m in args.against.split(",") if m.strip()]
    rows = paired(records, args.reference, others)
    methods = list(dict.fromkeys(m for r in records for m in r["methods"]))
    shares, costs = stop_share(records, methods), whole_prompt_cost(records)
    print(f"Paired differences {args.reference} − other (negative RISE/MAS and positive Recovery favour "
          f"{args.reference}); 95 % bootstrap interval; Wilcoxon signed-rank p\n")
    print("| task | metric | other | n | mean diff | 95 % CI | p |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        p = "–" if r["wilcoxon_p"] is None else f"{r['wilcoxon_p']:.3g}"
        print(f"| {r['task']} | {METRICS[r['metric']]} | {r['other']} | {r['n']} | {r['mean_diff']:+.3f} | "
              f"[{r['ci95'][0]:+.3f}, {r['ci95'][1]:+.3f}] | {p} |")
    print("\nShare of stop tokens among the top 10 % prompt tokens: "
          + ", ".join(f"{m} {v:.0%}" for m, v in shares.items()))
    print("Median cost of deleting the whole prompt (nats of answer log-probability): "
          + ", ".join(f"{t} {v:.2f}" for t, v in costs.items()))
    path = args.json or args.folder / "paired.json"
    path.write_text(json.dumps({"reference": args.reference, "paired": rows, "stop_share_top10": shares,
                                "whole_prompt_cost_median_nats": costs}, indent=1))
    print(f"\nwritten {path}")


if __name__ == "__main__":
    main()
