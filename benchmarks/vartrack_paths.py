"""Variable tracking through the hop graph: does the strongest answer→prompt path end at the value?

Generates deterministic variable-tracking examples: the prompt assigns a value in one sentence
("VAR QPE = 64141."), copies it along a chain of variables, and mixes in distractor chains and
assignments; the response restates the chain step by step from the asked variable back to the value,
then "Answer: <value>". Each example is teacher-forced through the model once and traced with
step-level attribution; we check where the strongest path of the hop graph ends.

    .venv/bin/python benchmarks/vartrack_paths.py [--model smollm2-135m] [--n 20] [--seed 0]

Prints a table and writes benchmarks/results/vartrack_paths.json.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

RESULTS = Path(__file__).parent / "results" / "vartrack_paths.json"


@dataclass
class Example:
    prompt: str
    response: str
    value: str
    gold_line: str  # the prompt sentence that assigns the value


def _names(rng: random.Random, count: int) -> list[str]:
    names: set[str] = set()
    while len(names) < count:
        names.add("".join(rng.choice(string.ascii_uppercase) for _ in range(3)))
    ordered = sorted(names)  # sets iterate in a per-process order: sort before shuffling
    rng.shuffle(ordered)
    return ordered


def make_example(rng: random.Random) -> Example:
    """One example: a value chain of 3-5 variables, a distractor chain and 2-3 distractor assignments."""
    chain_len, decoy_len, extra = rng.randint(3, 5), rng.randint(2, 3), rng.randint(2, 3)
    names = _names(rng, chain_len + decoy_len + extra)
    chain, decoy, others = names[:chain_len], names[chain_len:chain_len + decoy_len], names[chain_len + decoy_len:]
    values = rng.sample(range(10000, 100000), 2 + extra)
    value = str(values[0])
    chain_lines = [f"VAR {chain[0]} = {value}."] + [f"VAR {b} = VAR {a}." for a, b in zip(chain, chain[1:])]
    decoy_lines = [f"VAR {decoy[0]} = {values[1]}."] + [f"VAR {b} = VAR {a}." for a, b in zip(decoy, decoy[1:])]
    other_lines = [f"VAR {name} = {v}." for name, v in zip(others, values[2:])]
    lines: list[str] = []
    queues = [chain_lines, decoy_lines, other_lines]
    while any(queues):  # interleave at random, keeping each chain in order
        queue = rng.choice([q for q in queues if q])
        lines.append(queue.pop(0))
    prompt = ("Memorize the variable assignments below.\n" + "\n".join(lines)
              + f"\nQuestion: what is the value of VAR {chain[-1]}?")
    steps = [f"VAR {b} = VAR {a}." for a, b in zip(chain, chain[1:])][::-1] + [f"VAR {chain[0]} = {value}."]
    response = "\n".join(steps) + f"\nAnswer: {value}"
    return Example(prompt, response, value, f"VAR {chain[0]} = {value}.")


def make_examples(n: int = 20, seed: int = 0) -> list[Example]:
    rng = random.Random(seed)
    return [make_example(rng) for _ in range(n)]


def gold_segment(trace, example: Example) -> str:
    """Id of the prompt segment holding the value assignment."""
    hits = [s.id for s in trace.segments if s.role == "prompt" and s.text.strip() == example.gold_line]
    if len(hits) != 1:
        raise RuntimeError(f"expected one prompt segment {example.gold_line!r}, found {hits}")
    return hits[0]


def top_segment(trace, scores: list[float]) -> str:
    """The prompt segment with the largest summed score."""
    prompt = [s for s in trace.segments if s.role == "prompt"]
    return max(prompt, key=lambda s: sum(scores[s.start:s.end])).id


def evaluate(model, examples: list[Example], k_paths: int = 3, stop_tokens: str = "paper") -> dict:
    """Trace each example (teacher-forced, hops=1, step-level, `stop_tokens` preset) and score the hop
    graph's paths."""
    import flashtrace
    from flashtrace.graph import HopGraph

    rows = []
    threads = torch.get_num_threads()
    for i, ex in enumerate(examples):
        prepared = flashtrace.prepare(model, ex.prompt, ex.response)
        trace = flashtrace.attribute(prepared, target="answer", hops=1, steps=True, stop_tokens=stop_tokens)
        torch.set_num_threads(threads)  # the first proximity-kernel call can change torch's thread count
        graph = HopGraph.from_trace(trace)
        gold = gold_segment(trace, ex)
        paths = graph.strongest_paths(k_paths)
        chain = graph.strongest_paths(1, through_reasoning=True)
        hop0 = trace.hops[0].contribution
        rows.append({
            "example": i, "tokens": trace.n_tokens, "steps": len(trace.steps.vectors), "gold": gold,
            "path": list(paths[0].nodes) if paths else [], "strength": paths[0].strength if paths else 0.0,
            "hit": bool(paths) and paths[0].end == gold,
            "hit_top3": any(p.end == gold for p in paths),
            "chain_path": list(chain[0].nodes) if chain else [],
            "hit_through_reasoning": bool(chain) and chain[0].end == gold,
            "gold_depth": graph.hop_depths()[gold],
            "top_segment_hop0": top_segment(trace, hop0) == gold,
            "top_segment_hop1": top_segment(trace, trace.scores.final) == gold,
            "steps_s": trace.timings["steps_s"],
        })
    n = len(rows)
    return {
        "n": n,
        "stop_tokens": stop_tokens,
        "hit_rate": sum(r["hit"] for r in rows) / n,
        "hit_rate_top3": sum(r["hit_top3"] for r in rows) / n,
        "hit_rate_through_reasoning": sum(r["hit_through_reasoning"] for r in rows) / n,
        "top_segment_rate_hop0": sum(r["top_segment_hop0"] for r in rows) / n,
        "top_segment_rate_hop1": sum(r["top_segment_hop1"] for r in rows) / n,
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--stop-tokens", default="paper", choices=["paper", "punctuation", "none"])
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    import flashtrace

    model = flashtrace.load_model(args.model)
    start = time.perf_counter()
    result = evaluate(model, make_examples(args.n, args.seed), stop_tokens=args.stop_tokens)
    result.update(model=args.model, seed=args.seed, seconds=time.perf_counter() - start)
    print(f"{'#':>3} {'tokens':>6} {'steps':>5} {'gold':>5} {'hit':>4} {'depth':>5} {'strength':>8}  {'path':<10} "
          "strongest path through the reasoning")
    for r in result["rows"]:
        print(f"{r['example']:>3} {r['tokens']:>6} {r['steps']:>5} {r['gold']:>5} {'yes' if r['hit'] else 'no':>4} "
              f"{str(r['gold_depth']):>5} {r['strength']:>8.4f}  {' <- '.join(r['path']):<10} "
              f"{' <- '.join(r['chain_path'])} ({'hit' if r['hit_through_reasoning'] else 'miss'})")
    print(f"\nstrongest path ends at the value sentence: {result['hit_rate']:.2f} "
          f"(within the 3 strongest: {result['hit_rate_top3']:.2f}) on {result['n']} examples, {args.model}, "
          f"stop tokens {args.stop_tokens}")
    print(f"strongest path through at least one reasoning step ends there: {result['hit_rate_through_reasoning']:.2f}")
    print(f"top prompt segment is the value sentence: hop 0 {result['top_segment_rate_hop0']:.2f}, "
          f"hops 0-1 {result['top_segment_rate_hop1']:.2f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
