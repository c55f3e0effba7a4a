"""How close the time estimates are to the runs they predict (issue 13 item 12, issue 28 item 2): for each
kind of long run, predict it as the app and the command line do, then time it.

- ``trace``: a warm run of prepare + attribute (hops and the step sweep), predicted by `estimate`;
- ``generate``: greedy generation, predicted by `generation_seconds` for the tokens it wrote (the page shows
  the prediction for the most it may write);
- ``methods``: Compare → Methods' default methods (attribution, then each deletion curve, the states shared)
  on a warm context, predicted by `example_estimate` as the page does (`comparison_plan`).

Prompt lengths are chosen so the sequences are about 50, 300 and 2,000 tokens. Prints a table with the ratio
actual / estimate (the target: 0.5-2 on an idle machine) and the load average of each row; writes JSON.
Timings, not a unit test: take them on an idle machine and state the load.

    python benchmarks/estimate_accuracy.py [--kinds trace,generate,methods] [--lengths 50,300,2000] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch

from flashtrace.engine.estimate import estimate, generation_seconds, speed_of
from flashtrace.engine.models import load_model
from flashtrace.run.tracing import attribute, prepare

SENTENCE = "Ann has 3 apples and buys 4 more. How many apples does she have? "
RESPONSE = "She has 3 + 4 = 7 apples.\nAnswer: 7"
METHODS = ("flashtrace-k0", "flashtrace-k1", "ifr", "attention")  # Compare's default choice


def prompt_of(loaded, n_tokens: int) -> str:
    """A prompt whose sequence (with the response and the chat template) is about `n_tokens` long."""
    from flashtrace.engine.inputs import build_sequence

    repeats = 1
    while len(build_sequence(loaded.tokenizer, SENTENCE * (repeats + 1), RESPONSE, True)) <= n_tokens:
        repeats += 1
    return SENTENCE * repeats


def run_trace(loaded, prompt: str, hops: int = 1) -> tuple[float, int, float]:
    seq = prepare(loaded, prompt, RESPONSE).sequence
    est = estimate(loaded, len(seq), hops, n_target=len(seq.positions("answer")),
                   n_recursive=len(seq.positions("reasoning", "answer")), steps=True, warm=True)
    start = time.perf_counter()
    attribute(prepare(loaded, prompt, RESPONSE), hops=hops, steps=True)
    return time.perf_counter() - start, len(seq), est.seconds


def run_generate(loaded, prompt: str, n_new: int = 64) -> tuple[float, int, float]:
    from flashtrace.engine.models.generation import generate, generation_ids

    _, ids = generation_ids(loaded, prompt, n_new)
    start = time.perf_counter()
    out = generate(loaded, prompt, max_new_tokens=n_new)
    seconds = time.perf_counter() - start
    written = len(loaded.tokenizer(out.response, add_special_tokens=False)["input_ids"])
    return seconds, len(ids) + written, generation_seconds(loaded, len(ids), max(written, 1))


def run_methods(loaded, prompt: str) -> tuple[float, int, float]:
    from flashtrace.evaluate.estimate import example_estimate, sequence_size
    from flashtrace.evaluate.methods import build_context, get_eval_method
    from flashtrace.evaluate.runner import evaluate_method
    from flashtrace.evaluate.tasks import Example

    from flashtrace.engine.models.scoring import dtype_name, scoring_model, speedup

    ctx = build_context(loaded, Example(prompt, RESPONSE, "7", [], "bench"), batch_size=4)
    get_eval_method("flashtrace-k0")(ctx)  # the app's warm-up: first-use costs are not a method's
    scoring_model(loaded, ctx.score_dtype)  # so is the scoring copy (made in the app's warm-up)
    size = sequence_size(loaded, prompt, RESPONSE)
    faster = speedup(dtype_name(loaded.dtype), loaded.device.type, dtype_name(ctx.score_dtype))
    plan = example_estimate(loaded, size, list(METHODS), 20, speed=speed_of(), recorded=True, score_speedup=faster)
    start = time.perf_counter()
    for name in METHODS:
        evaluate_method(ctx, name, 20)
    return time.perf_counter() - start, size.n_tokens, sum(a + d for a, d in plan["methods"].values())


RUNS = {"trace": run_trace, "generate": run_generate, "methods": run_methods}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--kinds", default="trace,generate,methods")
    parser.add_argument("--lengths", default="50,300,2000", help="approximate sequence lengths in tokens")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default="benchmarks/results/estimate_accuracy.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    loaded = load_model(args.model)
    run_trace(loaded, SENTENCE)  # warm-up, as the estimates assume a warm model
    rows = []
    print(f"{'kind':<9} {'tokens':>6} {'estimate s':>10} {'range s':>15} {'run s':>8} {'run/est':>7} {'load':>5}")
    for kind in args.kinds.split(","):
        for target in (int(n) for n in args.lengths.split(",")):
            load_before = os.getloadavg()[0]
            seconds, n, predicted = RUNS[kind](loaded, prompt_of(loaded, target))
            row = dict(kind=kind, model=args.model, tokens=n, estimate_s=predicted, low_s=predicted / 2,
                       high_s=predicted * 2, run_s=seconds, ratio=seconds / predicted,
                       inside=predicted / 2 <= seconds <= predicted * 2, load_before=load_before,
                       load_after=os.getloadavg()[0], threads=args.threads)
            rows.append(row)
            print(f"{kind:<9} {n:>6} {predicted:>10.2f} {predicted / 2:>7.2f}–{predicted * 2:<7.2f} {seconds:>8.2f} "
                  f"{row['ratio']:>7.2f} {load_before:>5.1f}", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=1))
    print(f"{sum(r['inside'] for r in rows)}/{len(rows)} runs inside 0.5-2x their estimate; written to {args.out}")


if __name__ == "__main__":
    main()
