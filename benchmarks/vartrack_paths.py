"""Variable tracking through the hop graph: does the strongest answer→prompt path end at the value?

The examples are the evaluation's vartrack task (`flashtrace.evaluate.tasks`) in its ``lines`` layout:
the prompt assigns a value in one line ("VAR QPEXA = 64141."), copies it along a chain of variables
among distractor chains, one statement per line; the response restates the chain step by step from the
asked variable back to the value, then "Answer: <value>". Each example is teacher-forced through the
model once and traced with step-level attribution; we check where the strongest path of the hop graph
ends. ``--layout text`` runs the evaluation's own layout (filler prose, a closing "So VAR X = v." line).

    .venv/bin/python benchmarks/vartrack_paths.py [--model smollm2-135m] [--n 20] [--seed 0] [--layout lines]

Prints a table and writes benchmarks/results/vartrack_paths.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from flashtrace.evaluate.paths import make_examples, path_hits

RESULTS = Path(__file__).parent / "results" / "vartrack_paths.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--stop-tokens", default="paper", choices=["paper", "punctuation", "none"])
    parser.add_argument("--layout", default="lines", choices=["lines", "text"])
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    import flashtrace

    model = flashtrace.load_model(args.model)
    start = time.perf_counter()
    result = path_hits(model, make_examples(args.n, args.seed, args.layout), stop_tokens=args.stop_tokens)
    result.update(model=args.model, seed=args.seed, layout=args.layout, seconds=time.perf_counter() - start)
    print(f"{'#':>3} {'tokens':>6} {'steps':>5} {'gold':>5} {'hit':>4} {'depth':>5} {'strength':>8}  {'path':<10} "
          "strongest path through the reasoning")
    for r in result["rows"]:
        print(f"{r['example']:>3} {r['tokens']:>6} {r['steps']:>5} {r['gold']:>5} {'yes' if r['hit'] else 'no':>4} "
              f"{str(r['gold_depth']):>5} {r['strength']:>8.4f}  {' <- '.join(r['path']):<10} "
              f"{' <- '.join(r['chain_path'])} ({'hit' if r['hit_through_reasoning'] else 'miss'})")
    print(f"\nstrongest path ends at the value sentence: {result['hit_rate']:.2f} "
          f"(within the 3 strongest: {result['hit_rate_top3']:.2f}) on {result['n']} examples, {args.model}, "
          f"stop tokens {args.stop_tokens}, layout {args.layout}")
    print(f"strongest path through at least one reasoning step ends there: {result['hit_rate_through_reasoning']:.2f}")
    print(f"top prompt segment is the value sentence: hop 0 {result['top_segment_rate_hop0']:.2f}, "
          f"hops 0-1 {result['top_segment_rate_hop1']:.2f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
