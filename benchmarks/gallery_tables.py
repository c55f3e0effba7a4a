"""Print the gallery's two tables in docs/app.md (`flashtrace.evaluate.gallery_tables`: one row per shipped
trace, and one per trace with stored interventions), from the shipped gallery; no model. With ``--summary``,
also write benchmarks/results/gallery_qwen/summary.json: one row per model-written trace in assets/gallery
(its model, tokens, generation, answer and the edit's result, all read from the file), with the build's command,
machine and load as given.

Usage:
  .venv/bin/python benchmarks/gallery_tables.py        (paste the output into docs/app.md's Gallery section)
  .venv/bin/python benchmarks/gallery_tables.py --summary --load "..." --times "kitty=1065 s,..."
`tests/test_gallery.py` checks that docs/app.md holds exactly these rows; `tests/evaluate/test_gallery_spec.py`
reads summary.json back against the files.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
from pathlib import Path

from flashtrace.evaluate.gallery_spec import value_text
from flashtrace.evaluate.gallery_tables import GALLERY_HEADER, INTERVENTION_HEADER, gallery_rows, intervention_rows
from flashtrace.store.gallery import gallery_dir, list_gallery, load_gallery_trace

ROOT = Path(__file__).resolve().parents[1]
SUMMARY = ROOT / "benchmarks" / "results" / "gallery_qwen" / "summary.json"
COMMAND = ("flashtrace gallery --spec assets/gallery_spec.json --out build/gallery-qwen --threads 1 "
           "(some tasks with --only in a second process beside it), then the files copied into assets/gallery")


def summary_rows() -> list[dict]:
    """One row per model-written gallery trace, read from its file."""
    rows = []
    for item in (it for it in list_gallery() if it.written):
        trace = load_gallery_trace(item.name)
        record, generation = trace.extra.get("gallery", {}), trace.extra.get("generation", {})
        source = trace.extra.get("edited_from")
        rows.append({"file": str((gallery_dir() / f"{item.name}.json").relative_to(ROOT)), "task": record["spec"]["name"],
                     "kind": record["task"], "model": trace.model.name, "tokens": trace.n_tokens,
                     "new_tokens": generation.get("new_tokens"), "stopped": generation.get("stopped"),
                     "answer": value_text(trace), "right_answer": record["right_answer"],
                     "correct": record["correct"], "edited_from": source})
    return rows


def processor() -> str:
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    name = next((line.split(":", 1)[1].strip() for line in flags.splitlines() if line.startswith("model name")),
                platform.processor())
    return f"{name} ({'AMX' if 'amx_tile' in flags else 'no AMX'}, {'AVX2' if 'avx2' in flags else 'no AVX2'})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--summary", action="store_true", help="also write " + str(SUMMARY.relative_to(ROOT)))
    parser.add_argument("--load", default="", help="the machine's load during the build, in words")
    parser.add_argument("--times", default="", help="seconds per task as measured in the build log")
    args = parser.parse_args()
    print(GALLERY_HEADER)
    print("\n".join(gallery_rows()))
    print()
    print(INTERVENTION_HEADER)
    print("\n".join(intervention_rows()))
    if args.summary:
        import os

        rows = summary_rows()
        SUMMARY.write_text(json.dumps({
            "created": datetime.date.today().isoformat(), "command": COMMAND,
            "machine": {"cpus": os.cpu_count(), "processor": processor(), "python": platform.python_version()},
            "load": args.load, "times": args.times, "built": len(rows), "rows": rows}, indent=1) + "\n")
        print(f"\nwrote {SUMMARY.relative_to(ROOT)} ({len(rows)} rows)")


if __name__ == "__main__":
    main()
