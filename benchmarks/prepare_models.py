"""Preparing the built-in models: wall time per stage and the conversion's peak resident memory against its bound.

Usage: .venv/bin/python benchmarks/prepare_models.py --model qwen2.5-coder-1.5b [--model ...] [--dtype float32]

Each model is prepared by ``flashtrace prepare`` in a child process into a fresh cache folder (the parts that are
already installed in this environment stay installed: only assembly and conversion are measured then; uninstall
them first to time pip too). The child's peak resident memory is Linux's ``VmHWM`` of the child, polled, and its
``ru_maxrss``, which agree; the bound is issue 44's: the converted folder's size + 1 GB (10^9 bytes). With
``--keep``, the folder is moved into the real cache when the model is not prepared there yet. Writes
benchmarks/results/prepare_models.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from flashtrace.engine.models.builtin import BUILTINS, cache_dir
from flashtrace.engine.models.prepare import MARKER, is_prepared

BOUND_EXTRA = 10**9


def _cpu() -> dict:
    flags = ""
    name = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and not name:
                name = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = line
    except OSError:
        pass
    return {"processor": name, "cpus": os.cpu_count(), "amx": "amx_tile" in flags,
            "avx512_bf16": "avx512_bf16" in flags, "avx2": "avx2" in flags}


def _peak_of(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def measure(name: str, dtype: str, keep: bool) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="prepare-bench-", dir=cache_dir().parent if cache_dir().parent.exists()
                                    else None))
    env = dict(os.environ, FLASHTRACE_CACHE=str(scratch))
    load_before = os.getloadavg()
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "flashtrace.cli", "prepare", "--model", name, "--dtype", dtype,
                              "--no-progress"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    while child.poll() is None:
        peak = max(peak, _peak_of(child.pid))
        time.sleep(0.05)
    wall = time.perf_counter() - started
    out, err = child.communicate()
    if child.returncode != 0:
        raise SystemExit(f"prepare {name} failed: {err.strip()[-500:]}")
    peak = max(peak, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
    folder = scratch / "models" / name / dtype
    marker = json.loads((folder / MARKER).read_text())
    size = _folder_bytes(folder)
    row = {"model": name, "dtype": dtype, "wall_s": round(wall, 1), "stages_s": marker["seconds"],
           "converted_bytes": size, "peak_rss_bytes": peak, "bound_bytes": size + BOUND_EXTRA,
           "within_bound": peak <= size + BOUND_EXTRA, "peak_over_output": round(peak / size, 3),
           "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()],
           "stage_lines": err.strip().splitlines()}
    if keep and not is_prepared(name, dtype):
        target = cache_dir() / "models" / name / dtype
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(folder), str(target))
    shutil.rmtree(scratch, ignore_errors=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", choices=list(BUILTINS), help="a built-in model (repeatable)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    parser.add_argument("--keep", action="store_true", help="move the converted folder into the real cache")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "prepare_models.json")
    args = parser.parse_args()
    rows = [measure(name, args.dtype, args.keep) for name in args.model or ["qwen2.5-coder-1.5b"]]
    previous = json.loads(args.out.read_text()) if args.out.is_file() else {"runs": []}
    kept = [r for r in previous.get("runs", []) if (r["model"], r["dtype"]) not in {(x["model"], x["dtype"]) for x in rows}]
    report = {"created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "command": "python benchmarks/prepare_models.py " + " ".join(sys.argv[1:]), "machine": _cpu(),
              "bound": "peak RSS <= converted folder size + 1 GB (10^9 bytes)", "runs": kept + rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print("| model | dtype | wall s | install s | assemble s | convert s | converted GB | peak RSS GB | bound GB | load |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in report["runs"]:
        s = r["stages_s"]
        print(f"| {r['model']} | {r['dtype']} | {r['wall_s']:.0f} | {s.get('install', 0):.0f} | {s['assemble']:.1f} | "
              f"{s['convert']:.0f} | {r['converted_bytes'] / 1e9:.2f} | {r['peak_rss_bytes'] / 1e9:.2f} | "
              f"{r['bound_bytes'] / 1e9:.2f} | {r['load_before'][0]:.2f} -> {r['load_after'][0]:.2f} |")


if __name__ == "__main__":
    main()
