"""Hostile and broken files found by the reliability probe (issue 30), made on demand for the tests: each
function writes one file and returns its path. `seed_library` writes one of every kind into a folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

from flashtrace.run.bench.synthetic import amplified_trace_data
from flashtrace.store.gallery import gallery_path

RTL_NAME = "report-\u202eevil"  # shows as "report-live" where the override is applied


def gallery_data(name: str = "needle") -> dict:
    return json.loads(gallery_path(name).read_text(encoding="utf-8"))


def _write(path: Path, data: dict, **kwargs) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, **kwargs), encoding="utf-8")
    return path


def overflow_scores(path: Path) -> Path:
    """Defect 1: a valid trace whose `scores.prompt` is 1e308 on every prompt token (fsum overflows)."""
    data = gallery_data()
    for i, token in enumerate(data["tokens"]):
        if token["role"] == "prompt":
            data["scores"]["prompt"][i] = 1e308
    return _write(path, data)


def amplifying(path: Path, kind: str, size: int) -> Path:
    """Defect 3: a trace of about `size` bytes whose `kind` field (extra_floats, extra_ints, stop_tokens,
    timings) holds millions of tiny values."""
    return _write(path, amplified_trace_data(gallery_data("free-form"), kind, size), separators=(",", ":"))


def without_segments(path: Path) -> Path:
    """Defect 13: a valid trace with no segments (and so no step vectors and no interventions)."""
    data = gallery_data("free-form")
    data["segments"], data["steps"], data["interventions"] = None, None, None
    return _write(path, data)


def seed_library(folder: Path) -> dict[str, str]:
    """One file of every bad kind in `folder`, plus one good trace; ``{name: kind}`` of the files a
    listing shows (the FIFO, the folder and the device link are not trace files and are not listed)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "good.json").write_text(json.dumps(gallery_data("free-form")), encoding="utf-8")
    overflow_scores(folder / "overflow.json")
    amplifying(folder / "amplified.json", "stop_tokens", 400_000)
    (folder / "truncated.json").write_text(gallery_path("free-form").read_text(encoding="utf-8")[:5000])
    (folder / "not-utf8.json").write_bytes(b'{"title": "\xff\xfe caf\xe9"}')
    (folder / "nested.json").write_text("[" * 800_000 + "]" * 800_000)
    (folder / "empty.json").write_bytes(b"")
    (folder / f"{RTL_NAME}.json").write_text("{}", encoding="utf-8")
    (folder / "folder.json").mkdir()
    os.mkfifo(folder / "fifo.json")
    (folder / "device.json").symlink_to("/dev/zero")
    (folder / ".index.sqlite").write_bytes(b"this is not an SQLite database" * 100)
    return {"good": "good", "overflow": "bad", "amplified": "bad", "truncated": "bad", "not-utf8": "bad",
            "nested": "bad", "empty": "bad", RTL_NAME: "bad"}
