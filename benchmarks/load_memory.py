"""Peak memory of `Trace.load` against the file's size: valid traces and the hostile shapes of issue 30.

Usage: .venv/bin/python benchmarks/load_memory.py [--size-mb 32]
Each file is loaded in its own process, after a warm-up load of a gallery trace
(`flashtrace.run.bench.load_probe`); two measures: the peak of Python's allocations (tracemalloc), and the
peak resident size during the load less the resident size before it (Linux: the peak is reset through
/proc/self/clear_refs, then read as VmHWM; allocator overhead, memory the allocator keeps after freeing it
and what pydantic-core's parser allocates outside Python count here).
Writes benchmarks/results/load_memory.{json,md}.
"""

import argparse
import json
import tempfile
from pathlib import Path

from flashtrace.run.bench.load_probe import HOSTILE, MEASURES, hostile, load_peak
from flashtrace.run.bench.synthetic import AMPLIFIERS, amplified_trace_data, synthetic_trace_data
from flashtrace.store.gallery import gallery_path


def cases(size: int):
    free_form = json.loads(gallery_path("free-form").read_text(encoding="utf-8"))
    yield "valid: gallery long-vartrack (0.7 MB)", gallery_path("long-vartrack").read_bytes()
    for n, hops, steps in ((size // 130, 0, 0), (size // 200, 3, 0), (size // 600, 1, 50)):
        data = synthetic_trace_data(n, hops, steps)
        yield f"valid: {n:,} tokens, {hops} hops, {steps} steps", json.dumps(data, separators=(",", ":")).encode()
    for kind in AMPLIFIERS:
        yield f"issue 30: {kind}", json.dumps(amplified_trace_data(free_form, kind, size), separators=(",", ":")).encode()
    for kind in HOSTILE:
        yield f"hostile: {kind}", hostile(kind, size)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size-mb", type=float, default=32)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in cases(int(args.size_mb * 1e6)):
            path = Path(tmp) / "case.json"
            path.write_bytes(text)
            row = {"case": name, "bytes": len(text)}
            for measure in MEASURES:
                row.update(load_peak(path, measure))
            row["tracemalloc_ratio"] = round(row["tracemalloc"] / len(text), 2)
            row["maxrss_ratio"] = round(row["rss"] / len(text), 2)
            rows.append(row)
            print(f"{name:<42} {len(text) / 1e6:6.1f} MB  tracemalloc {row['tracemalloc_ratio']:5.2f}x  "
                  f"RSS {row['maxrss_ratio']:5.2f}x  {row['outcome'][:60]}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "load_memory.json").write_text(json.dumps(rows, indent=1))
    table = ["| file | MB | peak / size (tracemalloc) | peak RSS growth / size | outcome |", "|---|---:|---:|---:|---|"]
    table += [f"| {r['case']} | {r['bytes'] / 1e6:.1f} | {r['tracemalloc_ratio']:.2f} | {r['maxrss_ratio']:.2f} | "
              f"{r['outcome'][:70]} |" for r in rows]
    (args.out / "load_memory.md").write_text("\n".join(table) + "\n")
    print("\n".join(table))


if __name__ == "__main__":
    main()
