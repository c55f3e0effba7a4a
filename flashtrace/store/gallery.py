"""The gallery: precomputed traces shipped in ``assets/gallery/`` so the app works with no model loaded.

This module lists and opens them (from ``index.json``, or from the files themselves when the index is
missing). `flashtrace.evaluate.gallery` says what they are and builds them (``flashtrace gallery``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from .app_files import bundled_gallery
from ..base.fileio import atomic_write_text
from ..analysis.schema import Trace

GALLERY_ENV = "FLASHTRACE_GALLERY"
INDEX = "index.json"
CHANGE_K = 10  # the index records the top-10 overlap between K=0 and K=HOPS
CHANGED_OVERLAP = 0.7  # at or below: "deeper hops change the picture"

@dataclass(frozen=True)
class GalleryItem:
    """A gallery card: what the home page lists without reading the trace itself."""

    name: str
    title: str
    description: str
    task: str
    model: str
    n_tokens: int
    hops: int
    size: int
    overlap: float | None = None  # top-10 prompt-token overlap between K=0 and K=max (`compare.depth_change`)
    top_segment_changed: bool | None = None  # whether the top prompt segment differs between K=0 and K=max
    top_segment_k0: str | None = None
    top_segment_kmax: str | None = None


def gallery_dir() -> Path:
    """``$FLASHTRACE_GALLERY``, or the checkout's ``assets/gallery`` (the wheel's copy when installed)."""
    env = os.environ.get(GALLERY_ENV)
    return Path(env) if env else bundled_gallery()


def _item(name: str, trace: Trace, size: int) -> GalleryItem:
    from ..analysis.compare import depth_change

    info = trace.extra.get("gallery", {})
    change = depth_change(trace, k=CHANGE_K)
    return GalleryItem(name=name, title=trace.title, description=str(info.get("description", "")),
                       task=str(info.get("task", "")), model=trace.model.name, n_tokens=trace.n_tokens,
                       hops=trace.settings.hops, size=size, overlap=change["overlap"],
                       top_segment_changed=change["top_segment_changed"], top_segment_k0=change["top_segment_k0"],
                       top_segment_kmax=change["top_segment_kmax"])


def change_note(change: dict) -> str:
    """One sentence for a gallery card: do deeper hops change the picture (top-k overlap at most
    `CHANGED_OVERLAP`, or another top prompt segment), or not?"""
    k, last, overlap = change["k"], change["max_hops"], change["overlap"]
    moved = (f"; the top prompt sentence moves from {change['top_segment_k0']} to {change['top_segment_kmax']}"
             if change["top_segment_changed"] else "; the top prompt sentence stays the same")
    if overlap <= CHANGED_OVERLAP or change["top_segment_changed"]:
        return f"Deeper hops change the picture: top-{k} prompt tokens at K=0 and K={last} overlap {overlap:.0%}{moved}."
    return f"Hops change little here: top-{k} prompt tokens at K=0 and K={last} overlap {overlap:.0%}{moved}."


def list_gallery(folder: Path | None = None) -> list[GalleryItem]:
    """The gallery's cards, from its index (or, without one, from the trace files themselves)."""
    folder = folder or gallery_dir()
    index = folder / INDEX
    if index.is_file():
        try:
            rows = json.loads(index.read_text(encoding="utf-8"))
            items = [GalleryItem(**row) for row in rows]
            if all((folder / f"{it.name}.json").is_file() for it in items):
                return items
        except (ValueError, TypeError):
            pass
    items = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        if path.name == INDEX:
            continue
        try:
            items.append(_item(path.stem, Trace.load(path), path.stat().st_size))
        except (ValueError, OSError):
            continue
    return items


def gallery_path(name: str, folder: Path | None = None) -> Path:
    folder = folder or gallery_dir()
    known = {it.name for it in list_gallery(folder)}
    if name not in known:
        raise ValueError(f"no gallery trace named '{name}'; the gallery has: {', '.join(sorted(known)) or 'nothing'}")
    return folder / f"{name}.json"


def load_gallery_trace(name: str, folder: Path | None = None) -> Trace:
    return Trace.load(gallery_path(name, folder))


def write_index(folder: Path, order: list[str] | None = None) -> list[GalleryItem]:
    """Write ``index.json`` for the traces in `folder` (listed in `order` where named, then by name)."""
    rank = {name: i for i, name in enumerate(order or [])}
    paths = sorted((p for p in folder.glob("*.json") if p.name != INDEX),
                   key=lambda p: (rank.get(p.stem, len(rank)), p.stem))
    items = [_item(p.stem, Trace.load(p), p.stat().st_size) for p in paths]
    atomic_write_text(folder / INDEX, json.dumps([it.__dict__ for it in items], indent=1))
    return items
