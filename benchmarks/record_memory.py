"""Peak resident memory of recording SmolLM2-135M (one forward pass, every layer recorded).

Usage: .venv/bin/python benchmarks/record_memory.py [--lengths 1024,2048,4096]
Each length runs in its own process; writes benchmarks/results/record_memory.{json,md}.
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--lengths", default="1024,2048,4096")
parser.add_argument("--model", default="smollm2-135m")
parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
args = parser.parse_args()

rows = []
for n in [int(x) for x in args.lengths.split(",")]:
    for mode in ("forward", "record"):
        spec = {"model": args.model, "n_prompt": n, "n_response": 0, "mode": mode, "threads": 1}
        out = subprocess.run([sys.executable, "-m", "flashtrace.run.bench.cell", json.dumps(spec)], capture_output=True,
                             text=True, check=True).stdout.strip().splitlines()[-1]
        rows.append(json.loads(out))
        r = rows[-1]
        print(f"N={n:>6} {mode:<8} {r['total_s']:7.2f} s  peak {r['peak_rss_bytes'] / 2**30:.2f} GiB", flush=True)
args.out.mkdir(parents=True, exist_ok=True)
(args.out / "record_memory.json").write_text(json.dumps(rows, indent=1))
table = ["| N | plain forward peak GiB | recording peak GiB | recording tensors GiB | record s |", "|---:|---:|---:|---:|---:|"]
by_n = {}
for r in rows:
    by_n.setdefault(r["n_tokens"], {})[r["mode"]] = r
for n, m in sorted(by_n.items()):
    table.append(f"| {n} | {m['forward']['peak_rss_bytes'] / 2**30:.2f} | {m['record']['peak_rss_bytes'] / 2**30:.2f} | "
                 f"{m['record']['recording_bytes'] / 2**30:.2f} | {m['record']['total_s']:.2f} |")
(args.out / "record_memory.md").write_text("\n".join(table) + "\n\nOne process per cell, 1 torch thread, model included.\n")
print("\n".join(table))
