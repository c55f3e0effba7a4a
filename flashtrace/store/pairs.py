"""Linked pairs in the library: an original trace and the trace of an edited version of it (a sentence or a
reasoning step removed or replaced, then re-run), saved together so that opening either finds the other.

The edited trace's ``extra["edited_from"]`` names the original (its library name, where it came from, the
edit and the answer's log-probability before and after); the original's ``extra["edited_versions"]`` lists
the names of its edited versions. Renaming either trace outside the app breaks the link (`linked` then
says the other is missing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ..analysis.schema import Trace
from .library import Library

if TYPE_CHECKING:
    from ..analysis.records import InterventionRecord

EDITED_FROM = "edited_from"
EDITED_VERSIONS = "edited_versions"


@dataclass(frozen=True)
class Link:
    """What a library trace is linked to: ``role`` "edited" (of `others[0]`) or "original" (of `others`)."""

    role: str
    others: tuple[str, ...]
    edit: dict[str, Any] | None = None  # on an edited trace: the edit and the log-probabilities
    missing: tuple[str, ...] = ()  # linked names no longer in the library


def _with_extra(trace: Trace, **items) -> Trace:
    return trace.model_copy(update={"extra": {**trace.extra, **items}})


def save_pair(library: Library, original: Trace, edited: Trace, edit: dict[str, Any], name: str,
              original_name: str | None = None) -> tuple[str, str]:
    """Save `edited` linked to `original`.

    Args:
        library: The library both traces are saved in.
        original: The original trace.
        edited: The trace of the edited version.
        edit: The edit and the answer's log-probability before and after, stored (with the original's name) as
            the edited trace's ``extra["edited_from"]``.
        name: The name a copy of the original is saved under (made unique) when `original_name` is None.
        original_name: The original already in `library`: that file gains the link (it must be there and
            readable before the edited trace is written); None saves a copy of the original under `name`.

    Returns:
        ``(original's name, edited's name)``.
    """
    if original_name is not None:
        library.open(original_name)  # it must be there (and readable) before the edited trace is written
    else:
        original_name = library.save(original, name)
    edited_name = library.save(_with_extra(edited, **{EDITED_FROM: {"name": original_name, **edit}}),
                               f"{original_name}-edited")

    def add_link(current: Trace) -> Trace:  # the original as it is on disk now: a link added meanwhile stays
        return _with_extra(current, **{EDITED_VERSIONS: [*current.extra.get(EDITED_VERSIONS, []), edited_name]})

    library.update(original_name, add_link)
    return original_name, edited_name


def store_interventions(library: Library, name: str, interventions: InterventionRecord | None) -> None:
    """Put a computed step influence into a library trace: onto the file as it is then, under the library's update
    lock, so an edited version linked meanwhile stays linked (the app's "Save it to the trace in the library").

    Args:
        library: The library holding the trace.
        name: The library trace's name (in a collection as ``collection/name``).
        interventions: The computed step influence (an `InterventionRecord`), or None.
    """
    collection, sep, name = name.rpartition("/")
    (library.collection(collection) if sep else library).update(
        name, lambda current: current.model_copy(update={"interventions": interventions}))


def linked(library: Library | None, trace: Trace, exists: Callable[[str], bool] | None = None) -> Link | None:
    """The link a trace holds.

    Args:
        library: The library the linked names are looked up in (None: none is, unless `exists` is given).
        trace: The trace whose link is read.
        exists: Looks up a linked name instead of `library` (the gallery's names, for a gallery pair).

    Returns:
        The link, with the linked names not found as `missing`; None when the trace is neither an original nor
            an edited version.
    """
    source = trace.extra.get(EDITED_FROM)
    if isinstance(source, dict) and isinstance(source.get("name"), str):
        names = (source["name"],)
        role, edit = "edited", {k: v for k, v in source.items() if k != "name"}
    else:
        versions = trace.extra.get(EDITED_VERSIONS)
        if not isinstance(versions, list) or not versions:
            return None
        names, role, edit = tuple(str(v) for v in versions), "original", None
    missing = tuple(n for n in names if not (exists(n) if exists is not None else _present(library, n)))
    return Link(role, names, edit, missing)


def _present(library: Library | None, name: str) -> bool:
    try:
        return library is not None and library.exists(name)
    except ValueError:  # not a name the library would give
        return False


__all__ = ["Link", "save_pair", "store_interventions", "linked", "EDITED_FROM", "EDITED_VERSIONS"]
