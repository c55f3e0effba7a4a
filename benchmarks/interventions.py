"""Time of step influence by intervention (issue 32's target: a 300-token trace with 10 reasoning steps in
at most 30 s on an idle 2-core machine, without resampling).

Usage: .venv/bin/python benchmarks/interventions.py [--threads 2] [--repeats 3] [--batch-sizes 1,4,8]
Traces one made-up 10-step problem (about 300 tokens) with SmolLM2-135M-Instruct, then times
`intervene(steps only)` (the unedited sequence and each step removed, teacher-forced) and the full standard
set (also the top, 5 random and the gold sentences) per batch size; medians of the repeats. The machine's
load average is recorded before each cell. Writes benchmarks/results/interventions.json.
"""

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import torch

from flashtrace.engine.models import load_model
from flashtrace.run.interventions import intervene, plan
from flashtrace.run.tracing import attribute, prepare

FACTS = ["Mia has 12 stickers.", "Her brother gives her 7 more.", "She trades 4 stickers for a pencil.",
         "Her aunt doubles what she has left.", "She gives 5 to her friend Leo.", "Leo gives 2 of them back.",
         "She loses 3 on the bus.", "Her teacher rewards her with 6 stickers.", "She splits 10 between two cousins.",
         "She buys a pack of 8 stickers.", "The weather was sunny all week.", "Her favourite colour is green."]
QUESTION = "How many stickers does Mia have now? Explain each step."
STEPS = ["Mia starts with 12 stickers.", "Her brother gives her 7, so 12 + 7 = 19.",
         "She trades 4 away, so 19 - 4 = 15.", "Her aunt doubles it, so 15 * 2 = 30.",
         "She gives 5 to Leo, so 30 - 5 = 25.", "Leo gives 2 back, so 25 + 2 = 27.",
         "She loses 3 on the bus, so 27 - 3 = 24.", "Her teacher adds 6, so 24 + 6 = 30.",
         "She gives away 10, so 30 - 10 = 20.", "She buys 8 more, so 20 + 8 = 28."]


def make_trace(loaded):
    prompt = " ".join(FACTS) + " " + QUESTION
    response = "\n".join(f"{i}. {s}" for i, s in enumerate(STEPS, 1)) + "\nAnswer: 28"
    return attribute(prepare(loaded, prompt, response), hops=1, steps=True, stop_tokens="paper")  # as committed


def timed(loaded, trace, repeats: int, **options) -> dict:
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        intervene(loaded, trace, **options)
        runs.append(time.perf_counter() - start)
    return {"median_s": statistics.median(runs), "runs_s": runs, "load_before": os.getloadavg()[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-sizes", default="1,4,8")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "interventions.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    loaded = load_model("smollm2-135m")
    trace = make_trace(loaded)
    steps = sum(e.kind == "step" for e in plan(trace, sentences=False))
    n_all = len(plan(trace))
    rows = []
    for batch in (int(b) for b in args.batch_sizes.split(",")):
        for label, sentences in (("steps only", False), ("standard set", True)):
            cell = timed(loaded, trace, args.repeats, sentences=sentences, batch_size=batch)
            rows.append({"set": label, "batch_size": batch, "edits": n_all if sentences else steps, **cell})
    result = {"model": "smollm2-135m", "n_tokens": trace.n_tokens, "steps": steps, "threads": args.threads,
              "repeats": args.repeats, "cpu_count": os.cpu_count(), "rows": rows}
    args.out.write_text(json.dumps(result, indent=1))
    print(f"{trace.n_tokens} tokens, {steps} steps, {args.threads} threads, medians of {args.repeats}")
    print(f"{'set':14} {'batch':>5} {'edits':>5} {'median s':>9} {'load':>5}")
    for r in rows:
        print(f"{r['set']:14} {r['batch_size']:5d} {r['edits']:5d} {r['median_s']:9.2f} {r['load_before']:5.2f}")


if __name__ == "__main__":
    main()
