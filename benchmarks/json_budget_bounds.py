"""The pre-parse JSON check is bounded by design (issue 48 item 2): over adversarial shapes and sizes, the memory
and time of `json_text` + `check_json_budget` (what `Trace.load` runs before it parses) stay linear in the file's
size with a small constant.

Each file is checked in a fresh child process, which reads it, resets the kernel's high-water mark of its resident
set (``/proc/self/clear_refs``), runs the check (refusals included: a refusal must be as cheap as an acceptance) and reports the
peak's growth and the check's time. Shapes: runs of backslashes (the shape that once took ~90 bytes a byte),
escaped quotes, one long string, text beyond ASCII (3- and 4-byte UTF-8, escaped to 6 and 12 ASCII bytes), deep
nesting, many small numbers, many small strings, many empty containers, and a mixture.

    .venv/bin/python benchmarks/json_budget_bounds.py               # 200 files, 64 KiB to 32 MiB
    .venv/bin/python benchmarks/json_budget_bounds.py --files 20 --max-mib 4

Prints a table per shape and writes ``benchmarks/results/json_budget_bounds.json`` (every file: shape, size, peak
growth, seconds; the largest growth ratio and seconds per MiB). tests/test_json_budget_bounds.py runs the same
shapes through hypothesis at small sizes and checks the committed JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "json_budget_bounds.json"
SHAPES = ("backslashes", "escaped_quotes", "long_string", "beyond_ascii", "emoji", "deep_nesting", "small_numbers",
          "small_strings", "empty_containers", "mixture")
RSS_FACTOR = 4  # the peak may grow by at most this many times the file's size ...
RSS_SLACK = 8 * 2**20  # ... plus this (the interpreter's and the regular expressions' own allocations)


def _string_of(piece: str, size: int) -> bytes:
    """A trace-like document whose `extra` holds one string of `piece` repeated to about `size` bytes."""
    head, tail = b'{"schema_version":3,"extra":{"s":"', b'"}}'
    unit = piece.encode("utf-8")
    return head + unit * max(1, (size - len(head) - len(tail)) // len(unit)) + tail


def _array_of(item: bytes, size: int) -> bytes:
    return b"[" + b",".join([item] * max(1, size // (len(item) + 1))) + b"]"


def _nested(size: int, rng: random.Random) -> bytes:
    depth = rng.randint(8, 47)
    unit = b"[" * depth + b"0" + b"]" * depth
    return _array_of(unit, size)


def make(shape: str, size: int, seed: int = 0) -> bytes:
    """An adversarial JSON file of about `size` bytes with the given shape (valid JSON: the check must run to
    its end, not stop at a syntax error)."""
    rng = random.Random(f"{shape}:{size}:{seed}")
    if shape == "backslashes":
        return _string_of("\\\\", size)  # a run of escaped backslashes
    if shape == "escaped_quotes":
        return _string_of('\\\\\\"', size)  # \\ then \" over and over: every quote escaped
    if shape == "long_string":
        return _string_of("abcdefgh", size)
    if shape == "beyond_ascii":
        return _string_of("日本語", size)  # 3 UTF-8 bytes, 6 ASCII bytes escaped
    if shape == "emoji":
        return _string_of("🙂", size)  # 4 UTF-8 bytes, 12 ASCII bytes escaped (a surrogate pair)
    if shape == "deep_nesting":
        return _nested(size, rng)
    if shape == "small_numbers":
        return _array_of(b"0", size)
    if shape == "small_strings":
        return _array_of(b'"a"', size)
    if shape == "empty_containers":
        return _array_of(b"[],{}", size)
    if shape == "mixture":
        parts, total = [], 0
        while total < size:
            piece = make(rng.choice(SHAPES[:-1]), rng.randint(1024, max(2048, size // 8)), rng.randint(0, 10**6))
            parts.append(piece)
            total += len(piece) + 1
        return b"[" + b",".join(parts) + b"]"
    raise ValueError(f"unknown shape {shape!r}")


def _status(field: str) -> int:
    """A memory figure of this process from /proc/self/status (``VmRSS``, ``VmHWM``), in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _child(path: str) -> None:
    """In a fresh process: read the file, then run the pre-parse check and print what it cost. The peak is the
    kernel's high-water mark of the resident set, reset once the file is read (``/proc/self/clear_refs``), so
    only the check's own growth counts. (`resource`'s ``ru_maxrss`` would not do: Linux keeps it across
    ``execve``, so a child reports its parent's peak when that was higher.)"""
    from flashtrace.analysis.schema import MAX_CONTAINERS
    from flashtrace.base.json_budget import JsonBudgetError, check_json_budget, json_text

    data = Path(path).read_bytes()
    check_json_budget(json_text(b'{"warm":[1,"x"]}'), MAX_CONTAINERS)  # regular expressions compiled
    Path("/proc/self/clear_refs").write_text("5")  # the high-water mark starts again from the resident set now
    before = _status("VmRSS")
    start = time.perf_counter()
    try:
        check_json_budget(json_text(data), MAX_CONTAINERS)
        verdict = "accepted"
    except (JsonBudgetError, UnicodeError) as exc:
        verdict = f"refused: {type(exc).__name__}"
    seconds = time.perf_counter() - start
    print(json.dumps({"growth_bytes": _status("VmHWM") - before, "seconds": seconds, "verdict": verdict}))


def measure(data: bytes, timeout: float = 600) -> dict:
    """The check's peak memory growth and time on `data`, measured in a child process."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        f.write(data)
    try:
        out = subprocess.run([sys.executable, __file__, "--child", f.name], capture_output=True, text=True,
                             timeout=timeout, check=True, cwd=ROOT)
    finally:
        os.unlink(f.name)
    return {"size": len(data), **json.loads(out.stdout.strip().splitlines()[-1])}


def within(row: dict) -> bool:
    """Whether a measured file stayed within the memory bound."""
    return row["growth_bytes"] <= RSS_FACTOR * row["size"] + RSS_SLACK


def plan(files: int, min_kib: int, max_mib: int, seed: int) -> list[tuple[str, int]]:
    """`files` (shape, size) pairs: the shapes in turn, sizes log-uniform from `min_kib` KiB to `max_mib` MiB,
    each shape's largest file at the top size."""
    rng = random.Random(seed)
    lo, hi = min_kib * 1024, max_mib * 2**20
    out = [(SHAPES[i % len(SHAPES)], int(lo * (hi / lo) ** rng.random())) for i in range(files)]
    for i, shape in enumerate(SHAPES[: files]):
        out[i] = (shape, hi)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=200, help="files to check (default 200)")
    parser.add_argument("--min-kib", type=int, default=64, help="smallest file, KiB (default 64)")
    parser.add_argument("--max-mib", type=int, default=32, help="largest file, MiB (default 32)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child)
        return 0
    load_before, rows, start = os.getloadavg()[0], [], time.time()
    for n, (shape, size) in enumerate(plan(args.files, args.min_kib, args.max_mib, args.seed), 1):
        row = {"shape": shape, **measure(make(shape, size, n))}
        rows.append(row)
        print(f"{n:>4}/{args.files} {shape:<17} {row['size'] / 2**20:8.2f} MiB  growth {row['growth_bytes'] / 2**20:8.1f} "
              f"MiB ({row['growth_bytes'] / row['size']:.2f}x)  {row['seconds']:.3f} s  {row['verdict']}", flush=True)
    big = [r for r in rows if r["size"] >= 2**20]
    per_mib = [r["seconds"] / (r["size"] / 2**20) for r in big]
    summary = {
        "files": len(rows), "sizes_mib": [round(min(r["size"] for r in rows) / 2**20, 3),
                                          round(max(r["size"] for r in rows) / 2**20, 3)],
        "bound": f"peak growth <= {RSS_FACTOR} x size + {RSS_SLACK // 2**20} MiB",
        "all_within": all(within(r) for r in rows),
        "largest_growth_ratio_1mib_up": round(max(r["growth_bytes"] / r["size"] for r in big), 3) if big else None,
        "seconds_per_mib_1mib_up": {"median": round(sorted(per_mib)[len(per_mib) // 2], 4),
                                    "max": round(max(per_mib), 4)} if per_mib else None,
        "by_shape": {s: {"largest_growth_ratio": round(max(r["growth_bytes"] / r["size"] for r in rows
                                                           if r["shape"] == s), 3),
                         "max_seconds_per_mib": round(max(r["seconds"] / (r["size"] / 2**20) for r in rows
                                                          if r["shape"] == s), 4)}
                     for s in SHAPES if any(r["shape"] == s for r in rows)},
    }
    record = {"issue": 48, "command": "python benchmarks/json_budget_bounds.py " + " ".join(argv or sys.argv[1:]),
              "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine(),
                          "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2)},
              "wall_s": round(time.time() - start, 1), "summary": summary, "files": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print("\n| shape | largest growth / size | max s per MiB |\n|---|---:|---:|")
    for shape, s in summary["by_shape"].items():
        print(f"| {shape} | {s['largest_growth_ratio']:.2f} | {s['max_seconds_per_mib']:.3f} |")
    print(f"\nall within {summary['bound']}: {summary['all_within']}; written {args.out}")
    return 0 if summary["all_within"] else 1


if __name__ == "__main__":
    sys.exit(main())
