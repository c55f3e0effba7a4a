"""Synthetic libraries for index tests and benchmarks: many valid variants of one real trace."""

from __future__ import annotations

import json
from pathlib import Path

from ...analysis.schema import Trace

MODELS = ("tiny-llama", "smollm2-135m", "qwen3-8b")
TASKS = ("needle", "arithmetic", "multihop", "vartrack")
WORDS = ("apples", "rivers", "planets", "engines", "violins", "glaciers", "lanterns")


def synthetic_library(folder: str | Path, n: int, base: Trace) -> list[str]:
    """Write `n` traces into `folder`: `base` with varied title, model name, task, hops-free metadata,
    creation time and metrics (trace ``i`` has model ``MODELS[i % 3]``, task ``TASKS[i % 4]`` and the word
    ``WORDS[i % 7]`` in its title). Returns the names written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    data = json.loads(base.to_json())
    names = []
    for i in range(n):
        data["id"] = f"syn{i:06d}"
        data["title"] = f"synthetic {i} about {WORDS[i % len(WORDS)]}"
        data["model"]["name"] = MODELS[i % len(MODELS)]
        data["created"] = f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00+00:00"
        data["extra"] = {"task": TASKS[i % len(TASKS)], "metrics": {"rise": round((i % 100) / 100, 2)}}
        name = f"syn-{i:06d}"
        (folder / f"{name}.json").write_text(json.dumps(data), encoding="utf-8")
        names.append(name)
    return names
