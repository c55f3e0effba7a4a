"""Batch tracing throughput (serial loop vs Ray with 1 and 2 workers) and Library index timings.

    python benchmarks/batch_scaling.py            # SmolLM2, 8 examples, 1,000 synthetic traces
    python benchmarks/batch_scaling.py --n 4 --model tiny-llama --traces 200   # a quick check

Part 1 traces the same N teacher-forced examples four times with `flashtrace.run.batch.run_batch`:
in this process with torch's default threads and with one thread, and on a local Ray cluster
(``ray.init(num_cpus=2)``) with 1 and 2 workers of one CPU (one torch thread) each. "wall" includes loading the model (and, for Ray, starting the
actors); "steady" leaves that out: N / (last result - first result + one example's mean time).
Expect little or no gain from 2 workers on a 2-core machine: a serial run can already use both cores
(torch threads), each worker loads its own copy of the model, and on a machine busy with other work
two threads per process can be much slower than one (they wait for each other), so compare the
1-thread rows.

Part 2 builds a library of M synthetic traces (variants of one real trace) and times, on its SQLite
index: the first listing (reads every file), a warm listing, a word search, a model+task filter and a
sorted page, each the median of 5; and, for comparison, validating every file (the listing's cost
without an index). Prints a table and writes JSON to benchmarks/results/batch_scaling.json. Timings on
a loaded shared machine are indicative: the load average is recorded with them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from flashtrace.run.batch import BatchSettings, run_batch
from flashtrace.run.bench.synthetic import synthetic_library
from flashtrace.store.library import Library
from flashtrace.analysis.schema import Trace

QUESTIONS = [
    ("A train leaves at 9:00 and the trip takes 2 hours and 30 minutes. When does it arrive?",
     "The trip starts at 9:00. Adding 2 hours gives 11:00, and 30 more minutes gives 11:30.\nAnswer: 11:30"),
    ("Mia has 4 boxes with 6 pencils each. She gives away 5 pencils. How many are left?",
     "4 boxes of 6 pencils is 24 pencils. Giving away 5 leaves 19.\nAnswer: 19"),
    ("Which is heavier, a kilogram of feathers or a kilogram of iron?",
     "Both weigh one kilogram, so neither is heavier.\nAnswer: they weigh the same"),
    ("The capital of Peru is Lima. The capital of Chile is Santiago. What is the capital of Chile?",
     "The text says the capital of Chile is Santiago.\nAnswer: Santiago"),
]


def write_input(path: Path, n: int) -> Path:
    lines = []
    for i in range(n):
        prompt, response = QUESTIONS[i % len(QUESTIONS)]
        lines.append(json.dumps({"prompt": prompt, "response": response, "title": f"bench {i}"}))
    path.write_text("\n".join(lines) + "\n")
    return path


def timed_batch(src: Path, out: Path, settings: BatchSettings, **ray) -> dict:
    stamps: list[float] = []
    start = time.perf_counter()
    result = run_batch(src, out, settings, on_record=lambda r: stamps.append(time.perf_counter()), **ray)
    wall = time.perf_counter() - start
    done = [r for r in result.records if r["status"] == "done"]
    mean = statistics.fmean(r["seconds"] for r in done)
    steady = len(done) / (stamps[-1] - stamps[0] + mean)
    return {"examples": len(done), "failed": result.count("failed"), "wall_s": round(wall, 2),
            "examples_per_s_wall": round(len(done) / wall, 4), "examples_per_s_steady": round(steady, 4),
            "mean_example_s": round(mean, 2)}


def part_batch(args, tmp: Path) -> dict:
    import ray

    src = write_input(tmp / "input.jsonl", args.n)
    settings = BatchSettings(model=args.model, hops=args.hops)
    import torch

    default_threads = torch.get_num_threads()
    rows = {f"serial-{default_threads}t": timed_batch(src, tmp / "serial", settings)}
    torch.set_num_threads(1)  # what each Ray worker gets (OMP_NUM_THREADS=1 for a 1-CPU actor)
    rows["serial-1t"] = timed_batch(src, tmp / "serial1", settings)
    torch.set_num_threads(default_threads)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        for workers in (1, 2):
            rows[f"ray-{workers}"] = timed_batch(src, tmp / f"ray{workers}", settings, ray_address="auto",
                                                 workers=workers)
    finally:
        ray.shutdown()
    return rows


def _median(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def part_index(args, tmp: Path, base: Trace) -> dict:
    folder = tmp / "library"
    synthetic_library(folder, args.traces, base)
    lib = Library(folder)
    start = time.perf_counter()
    first = lib.entries()
    cold = time.perf_counter() - start
    assert len(first) == args.traces
    paths = sorted(folder.glob("*.json"))
    return {
        "traces": args.traces, "trace_kB": round(paths[0].stat().st_size / 1e3, 1),
        "first_listing_s": round(cold, 3),
        "list_s": round(_median(lambda: lib.entries()), 4),
        "search_s": round(_median(lambda: lib.search("planets 12")), 4),
        "filter_s": round(_median(lambda: lib.query(model="qwen3-8b", task="needle")), 4),
        "sorted_page_s": round(_median(lambda: lib.query(sort="title", limit=50, offset=100)), 4),
        "validate_every_file_s": round(_median(lambda: [Trace.load(p) for p in paths], repeat=1), 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--n", type=int, default=8, help="examples per configuration")
    parser.add_argument("--hops", type=int, default=1)
    parser.add_argument("--traces", type=int, default=1000, help="synthetic traces for the index timings")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "batch_scaling.json")
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        batch = part_batch(args, tmp)
        base = Trace.load(sorted((tmp / "serial1").glob("*.json"))[0])
        index = part_index(args, tmp, base)
    load_after = os.getloadavg()
    result = {"command": "python " + " ".join(sys.argv), "model": args.model, "hops": args.hops,
              "cpus": os.cpu_count(), "python": platform.python_version(),
              "load_average_before": [round(x, 2) for x in load_before],
              "load_average_after": [round(x, 2) for x in load_after], "batch": batch, "index": index}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"{args.model}, {args.n} examples, hops {args.hops}; {os.cpu_count()} CPUs, load average "
          f"{load_before[0]:.1f} before / {load_after[0]:.1f} after (indicative timings)\n")
    print(f"{'run':<10} {'wall s':>8} {'ex/s wall':>10} {'ex/s steady':>12} {'s/example':>10}")
    for name, row in batch.items():
        print(f"{name:<10} {row['wall_s']:>8.1f} {row['examples_per_s_wall']:>10.3f} "
              f"{row['examples_per_s_steady']:>12.3f} {row['mean_example_s']:>10.2f}")
    print(f"\nLibrary index, {index['traces']} traces of {index['trace_kB']} kB:")
    for key in ("first_listing_s", "list_s", "search_s", "filter_s", "sorted_page_s", "validate_every_file_s"):
        print(f"  {key:<24} {index[key]:.4f}")
    print(f"\nwritten to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
