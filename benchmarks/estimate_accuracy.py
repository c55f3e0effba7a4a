"""How close the cost estimate is to the run it predicts (issue 13 item 12): for a few models and
lengths, predict a warm run (prepare + attribute, hops and step sweep included), then time it.
Prints a table and writes JSON. Timings, not a unit test: take them on an idle machine and state the
load average (printed with each row).

    python benchmarks/estimate_accuracy.py [--models tiny-llama,smollm2-135m] [--repeat 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch

from flashtrace.engine.estimate import estimate
from flashtrace.engine.models import load_model
from flashtrace.run.tracing import attribute, prepare

SENTENCE = "Ann has 3 apples and buys 4 more. How many apples does she have? "
RESPONSE = "She has 3 + 4 = 7 apples.\nAnswer: 7"


def one_run(loaded, prompt: str, hops: int) -> tuple[float, int, tuple[float, float]]:
    seq = prepare(loaded, prompt, RESPONSE).sequence
    est = estimate(loaded, len(seq), hops, n_target=len(seq.positions("answer")),
                   n_recursive=len(seq.positions("reasoning", "answer")), steps=True, warm=True)
    start = time.perf_counter()
    attribute(prepare(loaded, prompt, RESPONSE), hops=hops, steps=True)
    return time.perf_counter() - start, len(seq), est.range()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="tiny-llama,smollm2-135m")
    parser.add_argument("--repeats", type=int, default=4, help="prompt lengths: the sentence repeated 1, 2, 4, ... times")
    parser.add_argument("--hops", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="benchmarks/results/estimate_accuracy.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    print(f"{'model':<14} {'tokens':>6} {'range s':>15} {'run s':>8} {'in range':>8} {'load':>5}")
    for name in args.models.split(","):
        loaded = load_model(name)
        one_run(loaded, SENTENCE, args.hops)  # warm-up, as the estimate assumes a warm model
        for r in range(args.repeats):
            seconds, n, (lo, hi) = one_run(loaded, SENTENCE * 2 ** r, args.hops)
            row = dict(model=name, tokens=n, low_s=lo, high_s=hi, run_s=seconds, inside=lo <= seconds <= hi,
                       load_average=os.getloadavg()[0], threads=args.threads, hops=args.hops)
            rows.append(row)
            print(f"{name:<14} {n:>6} {lo:>7.3f}–{hi:<7.3f} {seconds:>8.3f} {str(row['inside']):>8} {row['load_average']:>5.1f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=1))
    print(f"{sum(r['inside'] for r in rows)}/{len(rows)} runs inside their range; written to {args.out}")


if __name__ == "__main__":
    main()
