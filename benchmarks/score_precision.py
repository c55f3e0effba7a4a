"""Deletion curves scored in bfloat16 against float32 (issue 28 item 1): how far the metrics move, and how much
faster the scoring is.

For each gallery trace, the evaluation's default methods (FlashTrace K = 0, 1, 2, IFR, attention) are
attributed once and their deletion curves (k = 20) scored twice, in the float32 model and in its bfloat16 copy
(`flashtrace.engine.models.scoring`: its matrix products in bfloat16, the rest in float32), on the same
recording. Reported per trace and method: RISE and MAS in
each precision and their difference, the largest difference between the two normalised curves, and whether
the methods' order by RISE (and by MAS) stays the same; per trace, the seconds each precision's scoring took
and the range the curve is normalised by (|s_0 - s_k|, the answer's log-probability with nothing and with
everything deleted: the smaller it is, the more a small change in a score moves the normalised curve).

Usage: ``.venv/bin/python benchmarks/score_precision.py [--traces arithmetic,needle,...] [--threads 2]``.
Writes ``benchmarks/results/score_precision.json`` and prints a table with the load average. The values do not
depend on the machine's load; the seconds do (take them idle).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

METHODS = ["flashtrace-k0", "flashtrace-k1", "flashtrace-k2", "ifr", "attention"]
TRACES = "arithmetic,free-form,needle,needle-values-14,multihop,vartrack"


def compare_trace(loaded, name: str, k: int) -> dict:
    """Both precisions' metrics for every method on gallery trace `name`."""
    from flashtrace.evaluate.methods import build_context
    from flashtrace.evaluate.runner import evaluate_method
    from flashtrace.evaluate.tasks import Example
    from flashtrace.store.gallery import load_gallery_trace

    trace = load_gallery_trace(name)
    gallery = trace.extra.get("gallery", {})
    example = Example(trace.prompt, trace.response, "", [tuple(g) for g in gallery.get("gold", [])],
                      gallery.get("task", "trace"))
    out = {"trace": name, "tokens": trace.n_tokens, "methods": {}, "seconds": {}}
    for precision in ("model", "bfloat16"):
        ctx = build_context(loaded, example, target=tuple(trace.settings.target),
                            chat_template=trace.settings.chat_template, batch_size=4, score_dtype=precision)
        runs = {m: evaluate_method(ctx, m, k) for m in METHODS}
        out["seconds"][str(ctx.score_dtype).removeprefix("torch.")] = sum(r["deletion_s"] for r in runs.values())
        for m, r in runs.items():
            out["methods"].setdefault(m, {})[precision] = {"rise": r["rise"], "mas": r["mas"], "n": r["n"], "s": r["s"]}
        first = next(iter(runs.values()))["s"]
        out.setdefault("range_nats", {})[str(ctx.score_dtype).removeprefix("torch.")] = abs(first[0] - first[-1])
    for m, both in out["methods"].items():
        a, b = both["model"], both["bfloat16"]
        both["d_rise"], both["d_mas"] = b["rise"] - a["rise"], b["mas"] - a["mas"]
        both["max_d_curve"] = max(abs(x - y) for x, y in zip(a["n"], b["n"]))
    for metric in ("rise", "mas"):
        order = {p: sorted(METHODS, key=lambda m: out["methods"][m][p][metric]) for p in ("model", "bfloat16")}
        out[f"same_{metric}_order"] = order["model"] == order["bfloat16"]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", default=TRACES, help="gallery traces, comma-separated")
    parser.add_argument("--k", type=int, default=20, help="deletion steps")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "score_precision.json")
    args = parser.parse_args()
    import torch

    from flashtrace.engine.models import load_model

    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()[0]
    loaded = load_model("smollm2-135m")
    rows = []
    print("| trace | method | RISE fp32 | RISE bf16 | ΔRISE | MAS fp32 | MAS bf16 | ΔMAS | max Δ curve |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.traces.split(","):
        row = compare_trace(loaded, name.strip(), args.k)
        rows.append(row)
        for m, r in row["methods"].items():
            print(f"| {name} | {m} | {r['model']['rise']:.3f} | {r['bfloat16']['rise']:.3f} | {r['d_rise']:+.3f} | "
                  f"{r['model']['mas']:.3f} | {r['bfloat16']['mas']:.3f} | {r['d_mas']:+.3f} | {r['max_d_curve']:.3f} |")
        print(f"|  {name}: scoring s {row['seconds']}; |s_0 - s_k| nats {row['range_nats']}; same order by RISE "
              f"{row['same_rise_order']}, by MAS {row['same_mas_order']} |", flush=True)
    deltas = [abs(r[key]) for row in rows for r in row["methods"].values() for key in ("d_rise", "d_mas")]
    summary = {"max_abs_delta": max(deltas), "mean_abs_delta": sum(deltas) / len(deltas),
               "max_curve_delta": max(r["max_d_curve"] for row in rows for r in row["methods"].values()),
               "orders_kept": sum(row["same_rise_order"] + row["same_mas_order"] for row in rows),
               "orders": 2 * len(rows)}
    result = {"threads": args.threads, "k": args.k, "load_before": load_before, "load_after": os.getloadavg()[0],
              "cpu_count": os.cpu_count(), "rows": rows, "summary": summary}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(f"\n{summary}; load average {load_before:.2f} before, {result['load_after']:.2f} after; {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
