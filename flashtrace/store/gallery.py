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
from ..analysis.facts import analyse
from ..analysis.failure import failure_note, failure_of
from ..analysis.views import span_text
from .pairs import EDITED_FROM, EDITED_VERSIONS
from ..analysis.schema import Trace
from ..analysis.story import card_note
from ..base.errors import InputError

GALLERY_ENV = "FLASHTRACE_GALLERY"
INDEX = "index.json"
CHANGE_K = 10  # the index records the top-10 overlap between K=0 and K=HOPS

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
    overlap: float | None = None  # top-10 prompt-token overlap between K=0 and K=max (`TraceFacts.overlap`)
    top_segment_changed: bool | None = None  # the top prompt piece changed beyond the margin (`Change.kind`)
    top_segment_k0: str | None = None
    top_segment_kmax: str | None = None
    change: str = ""  # `Change.kind`: same, changed, tie or none
    note: str = ""  # one sentence for the card (`story.card_note`)
    changes_evidence: bool = False  # the hops change the evidence beyond the margin (`TraceFacts.hops_change_evidence`)
    hop0: str = "answer"  # the hop-0 span the trace was made with
    written: bool = False  # the model wrote this reasoning itself (a generation record), not a template
    answer: str = ""  # the traced answer's value
    right_answer: str | None = None  # the task's right answer, where the task records one
    correct: bool | None = None
    edited_from: str | None = None  # this trace is the edited version of that gallery trace
    edited_versions: tuple[str, ...] = ()
    fixed: bool | None = None  # an honest failure whose edited version answers right (`Failure.fixed`)


def gallery_dir() -> Path:
    """``$FLASHTRACE_GALLERY``, or the checkout's ``assets/gallery`` (the wheel's copy when installed).

    Returns:
        The gallery folder.
    """
    env = os.environ.get(GALLERY_ENV)
    return Path(env) if env else bundled_gallery()


def _item(name: str, trace: Trace, size: int) -> GalleryItem:
    facts = analyse(trace)
    info = trace.extra.get("gallery", {})
    first, last = facts.change.first, facts.change.last
    key = (lambda i: None if i is None else facts.pieces[i].key)
    failure = failure_of(trace, facts)
    note = card_note(facts, CHANGE_K)
    source, versions = trace.extra.get(EDITED_FROM), trace.extra.get(EDITED_VERSIONS)
    right = info.get("right_answer") if isinstance(info.get("right_answer"), str) else None
    correct = info.get("correct") if isinstance(info.get("correct"), bool) else None
    return GalleryItem(name=name, title=trace.title, description=str(info.get("description", "")),
                       task=str(info.get("task", "")), model=trace.model.name, n_tokens=trace.n_tokens,
                       hops=trace.settings.hops, size=size, overlap=facts.overlap(CHANGE_K),
                       top_segment_changed=facts.change.kind == "changed", top_segment_k0=key(first),
                       top_segment_kmax=key(last), change=facts.change.kind,
                       note=f"{failure_note(facts, failure)} {note}" if failure else note,
                       changes_evidence=facts.hops_change_evidence, hop0=trace.settings.hop0,
                       written=isinstance(trace.extra.get("generation"), dict),
                       answer=span_text(trace, trace.settings.target).strip(), right_answer=right, correct=correct,
                       edited_from=source.get("name") if isinstance(source, dict) else None,
                       edited_versions=tuple(versions) if isinstance(versions, list) else (),
                       fixed=failure.fixed if failure else None)


def list_gallery(folder: Path | None = None) -> list[GalleryItem]:
    """The gallery's cards, from its index (or, without one, from the trace files themselves).

    Args:
        folder: The gallery folder; `gallery_dir()` when None.

    Returns:
        One card per trace; the index's rows when it is readable and every file it names exists, else one per
            readable trace file, by name (unreadable files skipped); empty when the folder is missing.
    """
    folder = folder or gallery_dir()
    index = folder / INDEX
    if index.is_file():
        try:
            rows = json.loads(index.read_text(encoding="utf-8"))
            items = [GalleryItem(**{**row, "edited_versions": tuple(row.get("edited_versions", ()))}) for row in rows]
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
    """The file of gallery trace `name`; ValueError naming the entries when there is none.

    Args:
        name: The gallery trace's name (its file name without ``.json``).
        folder: The gallery folder; `gallery_dir()` when None.

    Returns:
        The path of the trace's JSON file.

    Raises:
        InputError: When the gallery has no trace named `name` (a ValueError; the message names the entries).
    """
    folder = folder or gallery_dir()
    known = {it.name for it in list_gallery(folder)}
    if name not in known:
        raise InputError(f"no gallery trace named '{name}'; the gallery has: {', '.join(sorted(known)) or 'nothing'}")
    return folder / f"{name}.json"


def load_gallery_trace(name: str, folder: Path | None = None) -> Trace:
    """Load gallery trace `name`.

    Args:
        name: The gallery trace's name.
        folder: The gallery folder; `gallery_dir()` when None.

    Returns:
        The loaded trace.

    Raises:
        InputError: When the gallery has no trace named `name` (from `gallery_path`).
    """
    return Trace.load(gallery_path(name, folder))


def write_index(folder: Path, order: list[str] | None = None) -> list[GalleryItem]:
    """Write ``index.json`` for the traces in `folder`: those whose reasoning the model wrote first, then the
    synthetic ones.

    Args:
        folder: The gallery folder whose traces are indexed and where ``index.json`` is written.
        order: Trace names giving the order within each group: those named here first, as listed, then the
            others by name.

    Returns:
        The cards written, in the index's order.
    """
    rank = {name: i for i, name in enumerate(order or [])}
    paths = sorted((p for p in folder.glob("*.json") if p.name != INDEX),
                   key=lambda p: (rank.get(p.stem, len(rank)), p.stem))
    items = sorted((_item(p.stem, Trace.load(p), p.stat().st_size) for p in paths), key=lambda it: not it.written)
    atomic_write_text(folder / INDEX, json.dumps([it.__dict__ for it in items], indent=1))
    return items
