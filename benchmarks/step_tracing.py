"""Cost of step-level tracing (one batched span aggregation for every reasoning step and the answer)
against one hop of the same trace, and against one span aggregation per step.

    .venv/bin/python benchmarks/step_tracing.py [--model smollm2-135m] [--steps 20] [--repeats 3] [--threads 1]

The response has `--steps` numbered reasoning steps and an "Answer:" line. Timings are medians over
`--repeats` runs on one recording (torch uses `--threads`, default 1). Prints a table and writes
benchmarks/results/step_tracing.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

RESULTS = Path(__file__).parent / "results" / "step_tracing.json"


def make_problem(n_steps: int) -> tuple[str, str]:
    """A running-total word problem whose response has `n_steps` numbered steps."""
    items = ["apples", "pears", "plums", "figs", "limes"]
    adds = [(i * 7) % 9 + 2 for i in range(n_steps)]
    prompt = ("A shop starts the day with 10 pieces of fruit. During the day, deliveries arrive one after "
              "another: " + ", ".join(f"{a} {items[i % len(items)]}" for i, a in enumerate(adds))
              + ". How many pieces of fruit does the shop have at the end of the day?")
    total, lines = 10, []
    for i, a in enumerate(adds):
        lines.append(f"{i + 1}. The shop receives {a} {items[i % len(items)]}: {total} + {a} = {total + a}.")
        total += a
    return prompt, "\n".join(lines) + f"\nAnswer: {total}"


def _median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(model, n_steps: int = 20, repeats: int = 3, threads: int = 1) -> dict:
    import flashtrace
    from flashtrace.engine.attribution import span_aggregate
    from flashtrace.engine.attribution.steps import range_weights
    from flashtrace.analysis.segments import segment_sequence
    from flashtrace.run.tracing import stop_mask

    prompt, response = make_problem(n_steps)
    prepared = flashtrace.prepare(model, prompt, response)
    seq, rec = prepared.sequence, prepared.recording
    keep = ~stop_mask(seq)
    roles = [t.role for t in seq.tokens]
    targets = [s for s in segment_sequence(seq) if s.role in ("reasoning", "answer")]
    steps_w = range_weights([(s.start, s.end) for s in targets], keep)  # [B, N]
    answer_w = range_weights([seq.token_range("answer")], keep)  # [1, N]
    generated = torch.tensor([r in ("reasoning", "answer") for r in roles]) & keep
    hop1_w = generated.float()[None] / generated.sum()  # [1, N]: a hop over the whole recursive span
    span_aggregate(rec, answer_w)  # warm-up (kernel compilation)
    torch.set_num_threads(threads)  # the first kernel call may change torch's thread count

    timings = {
        "hop0_answer_s": _median_seconds(lambda: span_aggregate(rec, answer_w), repeats),
        "hop1_recursive_span_s": _median_seconds(lambda: span_aggregate(rec, hop1_w), repeats),
        "steps_batched_s": _median_seconds(lambda: span_aggregate(rec, steps_w), repeats),
        "steps_one_by_one_s": _median_seconds(lambda: [span_aggregate(rec, w[None]) for w in steps_w], 1),
    }
    full = flashtrace.attribute(prepared, hops=1, steps=True)  # the API path, for the record
    return {
        "model": model.name if hasattr(model, "name") else str(model),
        "tokens": len(seq), "prompt_tokens": seq.response_start, "response_tokens": len(seq) - seq.response_start,
        "step_segments": sum(s.role == "reasoning" for s in targets), "vectors": len(targets),
        "forward_s": prepared.timings["forward_s"], **timings,
        "ratio_vs_hop0": timings["steps_batched_s"] / timings["hop0_answer_s"],
        "ratio_vs_hop1": timings["steps_batched_s"] / timings["hop1_recursive_span_s"],
        "speedup_vs_one_by_one": timings["steps_one_by_one_s"] / timings["steps_batched_s"],
        "attribute_hops1_steps": {k: full.timings[k] for k in ("attribution_s", "steps_s")},
        "threads": threads, "repeats": repeats, "machine": platform.processor() or platform.machine(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    import flashtrace

    r = measure(flashtrace.load_model(args.model), args.steps, args.repeats, args.threads)
    r["model"] = args.model
    print(f"{args.model}: {r['tokens']} tokens ({r['prompt_tokens']} input, {r['response_tokens']} response), "
          f"{r['step_segments']} reasoning steps + answer = {r['vectors']} weight vectors")
    print(f"{'what':<44} {'seconds':>8} {'x hop 1':>8}")
    for label, key in [("forward pass (recording)", "forward_s"), ("hop 0: answer span", "hop0_answer_s"),
                       ("hop 1: recursive span (reasoning + answer)", "hop1_recursive_span_s"),
                       ("step-level: all vectors in one sweep", "steps_batched_s"),
                       ("step-level: one sweep per vector", "steps_one_by_one_s")]:
        print(f"{label:<44} {r[key]:>8.3f} {r[key] / r['hop1_recursive_span_s']:>8.2f}")
    print(f"step-level / hop 0 = {r['ratio_vs_hop0']:.2f}, step-level / hop 1 = {r['ratio_vs_hop1']:.2f}, "
          f"one-by-one / batched = {r['speedup_vs_one_by_one']:.1f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(r, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
