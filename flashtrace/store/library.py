"""The trace library: saved traces as JSON files in one folder.

List, search, open, save, rename, delete, import and export. Names are sanitised (letters, digits,
``.``, ``_``, ``-``; never a path), every write is atomic, saves and renames never overwrite another
trace (exclusive creation: concurrent writers of one name each get their own), temporary files left by
killed writers are removed when the library is opened, and a file that does not load is listed as
unreadable with the reason instead of breaking the listing.
The folder is ``$FLASHTRACE_LIBRARY`` or the user data directory's ``flashtrace/library``.
"""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from filelock import FileLock

from pathvalidate import sanitize_filename

from ..base.errors import EXIT_USAGE, FlashTraceError
from ..base.fileio import atomic_write_text, move_exclusive, publish_text, remove_stale_temps
from .index import LibraryIndex
from ..analysis.limits import MAX_FILE_BYTES
from ..analysis.schema import Trace, TraceValidationError

LIBRARY_ENV = "FLASHTRACE_LIBRARY"
MAX_NAME = 80
MAX_SUFFIX = 100_000  # name-2 ... name-100000: then the library refuses the save
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


UPDATE_LOCK = ".flashtrace-update.lock"  # held while a trace is read, changed and written back (`Library.update`)

class LibraryError(FlashTraceError, ValueError):
    """A library operation cannot be done (unknown name, name taken, bad import); the message says why."""

    exit_code = EXIT_USAGE


def default_root() -> Path:
    """The library's folder: $FLASHTRACE_LIBRARY when set, else the user's data folder.

    Returns:
        ``$FLASHTRACE_LIBRARY`` (``~`` expanded) when set, else the user data directory's ``flashtrace/library``.
    """
    env = os.environ.get(LIBRARY_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return platformdirs.user_data_path("flashtrace") / "library"


def sanitize_name(name: str) -> str:
    """A safe file stem: ASCII letters, digits, ``.``, ``_`` and ``-`` only, no leading dot, at most
    80 characters; anything else becomes ``-``.

    Args:
        name: The wanted name (any text).

    Returns:
        The sanitised stem; ``trace`` for empty input. A name a platform reserves (``con``, ``nul.txt``,
            ``COM1``: Windows) gets ``_`` after its first part (pathvalidate's rules).
    """
    text = unicodedata.normalize("NFKD", name or "").encode("ascii", "ignore").decode("ascii")
    text = _UNSAFE.sub("-", text.strip())
    text = re.sub(r"-{2,}", "-", text).strip(".-_")[:MAX_NAME].strip(".-_")
    if not text:
        return "trace"
    safe = sanitize_filename(text, platform="universal", max_len=MAX_NAME)
    # a reserved name's added "_" is not counted by max_len ("NUL." + 76 letters gave 81 characters): cut the end
    return safe if len(safe) <= MAX_NAME else safe[:MAX_NAME].rstrip(".-")


@dataclass(frozen=True)
class Entry:
    """One file in the library. `error` is set (and the trace fields are empty) when it does not load."""

    name: str
    path: Path
    size: int
    modified: float
    title: str = ""
    model: str = ""
    n_tokens: int = 0
    hops: int = 0
    method: str = ""
    created: str = ""
    prompt_head: str = ""
    error: str | None = None
    task: str = ""
    metrics: dict | None = None

    @property
    def readable(self) -> bool:
        """Whether the trace file could be read."""
        return self.error is None


class Library:
    """Saved traces in `root` (created on first write). Opening it removes temporary files that killed
    writers left behind (never a live writer's)."""

    def __init__(self, root: str | Path | None = None, read_only: bool = False):
        self.root = Path(root).expanduser() if root is not None else default_root()
        self.read_only = read_only  # a read-only demo: nothing in the folder is written, renamed or deleted
        if self.root.is_dir() and not read_only:
            remove_stale_temps(self.root)

    def path(self, name: str) -> Path:
        """The file of `name`; refuses anything that is not already a sanitised name.

        Args:
            name: The trace's name: a sanitised name, or that of a file a listing shows (copied in by hand).

        Returns:
            The path of ``<name>.json`` in the library's folder (which may not exist).

        Raises:
            LibraryError: When `name` is empty, or neither a sanitised name nor that of a listed file.
        """
        if not name or (sanitize_name(name) != name and not self._listed(name)):
            raise LibraryError(f"invalid trace name {name!r}: use letters, digits, '.', '_' and '-' only")
        return self.root / f"{name}.json"

    def _listed(self, name: str) -> bool:
        """Whether `name` is that of a file in the folder that a listing shows, though not a name the library
        would give (copied in by hand: spaces, other scripts, control characters): it can be opened and
        deleted. Never a path: no separator, no leading dot."""
        if any(c in name for c in "/\\\0") or name.startswith(".") or name in ("", ".."):
            return False
        try:
            return (self.root / f"{name}.json").is_file()
        except (OSError, ValueError):
            return False

    def entries(self) -> list[Entry]:
        """All files, newest first; unreadable ones included with their `error`.

        Returns:
            One `Entry` per file, newest first.
        """
        return self.query()[0]

    def search(self, query: str) -> list[Entry]:
        """Entries whose name, title, model, method, task or prompt contain every word of `query`.

        Args:
            query: The words to look for (case-insensitive); empty matches every entry.

        Returns:
            The matching entries, newest first.
        """
        return self.query(query)[0]

    def query(self, search: str = "", model: str | None = None, task: str | None = None, sort: str = "modified",
              limit: int | None = None, offset: int = 0) -> tuple[list[Entry], int]:
        """One page of matching entries and the number of matches, from the folder's metadata index
        (`flashtrace.store.index`: files re-read only when they change on disk).

        Args:
            search: The words every entry must contain (in its name, title, model, method, task or prompt
                start); empty matches every entry.
            model: The model an entry must have; None for any.
            task: The task an entry must have; None for any.
            sort: The key to sort by, one of `flashtrace.store.index.SORTS` (newest first for "modified", else
                ascending).
            limit: The page's size in entries; None for all of them.
            offset: How many matching entries come before the page.

        Returns:
            ``(entries, total)``: the page's entries and the number of matches (``([], 0)`` when the folder
                does not exist).

        Raises:
            InputError: When `sort` is not a known sort key.
        """
        if not self.root.is_dir():
            return [], 0
        rows, total = LibraryIndex(self.root, self.read_only).query(search, model=model, task=task, sort=sort, limit=limit,
                                                    offset=offset)
        return [Entry(path=self.root / f"{r['name']}.json", modified=r.pop("mtime_ns") / 1e9, **r) for r in rows], total

    def facets(self) -> dict[str, list[str]]:
        """The models and tasks present (for filters).

        Returns:
            ``{"model": [...], "task": [...]}``: the distinct models and tasks of readable traces, sorted.
        """
        return LibraryIndex(self.root, self.read_only).facets() if self.root.is_dir() else {"model": [], "task": []}

    def collection(self, name: str) -> "Library":
        """The library of the collection `name` (a sub-folder; a sanitised name, never a path).

        Args:
            name: The collection's name (a sanitised name, never a path).

        Returns:
            The library of the sub-folder `name`, read-only when this one is.

        Raises:
            LibraryError: When `name` is empty or not a sanitised name.
        """
        if not name or sanitize_name(name) != name:
            raise LibraryError(f"invalid collection name {name!r}: use letters, digits, '.', '_' and '-' only")
        return Library(self.root / name, self.read_only)

    def collections(self) -> list[str]:
        """Sub-folders holding traces (e.g. `flashtrace batch` outputs): open one with `Library(root / name)`.

        Returns:
            The names of the sub-folders (sanitised names only) that hold at least one ``.json`` file, sorted.
        """
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and sanitize_name(p.name) == p.name
                      and any(q.suffix == ".json" and not q.name.startswith(".") for q in p.iterdir()))

    def exists(self, name: str) -> bool:
        """Whether a trace named `name` is in the library.

        Args:
            name: The trace's name.

        Returns:
            True when the file of `name` exists.

        Raises:
            LibraryError: When `name` is not a valid library name (see `path`).
        """
        return self.path(name).is_file()

    def open(self, name: str) -> Trace:
        """Load the trace `name`; LibraryError when there is none.

        Args:
            name: The trace's name.

        Returns:
            The trace, validated on read.

        Raises:
            LibraryError: When there is no trace named `name`, or `name` is not a valid library name.
            TraceValidationError: When the file is not a valid trace.
        """
        path = self.path(name)
        if not path.is_file():
            raise LibraryError(f"no trace named '{name}' in the library")
        return Trace.load(path)

    @staticmethod
    def _candidates(base: str):
        """`base`, then ``base-2``, ``base-3``, ... (shortened to stay within `MAX_NAME`)."""
        yield base
        for i in range(2, MAX_SUFFIX + 1):
            suffix = f"-{i}"
            yield base[: MAX_NAME - len(suffix)] + suffix

    def unique_name(self, wanted: str) -> str:
        """The name a save of `wanted` would get now (another writer may take it first; `save` then
        moves on to the next free one).

        Args:
            wanted: The wanted name (any text: it is sanitised first).

        Returns:
            The sanitised name, or the first free ``<name>-2``, ``<name>-3``, ... when it is taken.

        Raises:
            LibraryError: When every suffix up to `MAX_SUFFIX` is taken.
        """
        for name in self._candidates(sanitize_name(wanted)):
            if not self.path(name).exists():
                return name
        raise LibraryError(f"no free name left for '{sanitize_name(wanted)}'")

    def save(self, trace: Trace, name: str | None = None, overwrite: bool = False) -> str:
        """Write `trace` atomically; returns the name used. Unless `overwrite`, the name is made unique
        at the moment of creation: a file of that name, even one written concurrently, is never replaced.

        Args:
            trace: The trace to save.
            name: The wanted name (sanitised); None takes the trace's title, else its id.
            overwrite: Replace the trace of exactly that `name`: a file copied in by hand under a name the library
                would not give ("a b") is replaced in place, and a name that would be cleaned into another
                trace's ("a b" into an existing "a-b") is refused (`LibraryError`), never written over that
                other trace.

        Returns:
            The name the trace was saved under.

        Raises:
            LibraryError: When the library is read-only, no free name is left, an overwrite would replace
                another trace, or the folder refuses the write.
        """
        self._writable("saved")
        wanted = sanitize_name(name or trace.title or trace.id)
        text = trace.to_json()
        try:
            if overwrite:
                target = self._overwritten(name, wanted)
                atomic_write_text(self.path(target), text)
                return target
            return publish_text(self.root, self._candidates(wanted), text)
        except FileExistsError:
            raise LibraryError(f"no free name left for '{wanted}'") from None
        except OSError as exc:
            raise self._cannot("save to", exc) from None

    def update(self, name: str, change: Callable[[Trace], Trace]) -> Trace:
        """Read-modify-write the trace `name` under the library's update lock. Two writers adding a link or a
        result to the same trace at once both keep theirs. Returns the stored trace.

        Args:
            name: The trace's name.
            change: Gets the trace as it is now on disk (not a copy read earlier) and returns the one to store
                in its place.

        Returns:
            The stored trace (what `change` returned).

        Raises:
            LibraryError: When the library is read-only, there is no trace named `name`, or the folder refuses
                the write.
        """
        self._writable("updated")
        try:
            with FileLock(str(self.root / UPDATE_LOCK)):
                changed = change(self.open(name))
                self.save(changed, name, overwrite=True)
                return changed
        except OSError as exc:
            raise self._cannot("update", exc) from None

    def _overwritten(self, name: str | None, wanted: str) -> str:
        """The name an overwriting save writes to (see `save`)."""
        if name and name != wanted:
            if self._listed(name):
                return name
            if self.path(wanted).exists():
                raise LibraryError(f"'{name}' is not a library name: it would be saved as '{wanted}', which is "
                                   "another trace; nothing was written")
        return wanted

    def rename(self, old: str, new: str) -> str:
        """Rename `old` to `new` (sanitised); refuses when `new` exists, also against a concurrent rename.

        Args:
            old: The trace's current name.
            new: The new name (sanitised).

        Returns:
            The trace's name now (the sanitised `new`, or `old` when they are the same).

        Raises:
            LibraryError: When the library is read-only, there is no trace named `old`, a trace named `new`
                already exists, or the folder refuses the rename.
        """
        self._writable("renamed")
        src, new = self.path(old), sanitize_name(new)
        if not src.is_file():
            raise LibraryError(f"no trace named '{old}' in the library")
        if new == old:
            return old
        try:
            moved = move_exclusive(src, self.path(new))
        except FileNotFoundError:  # renamed or deleted meanwhile by someone else
            raise LibraryError(f"no trace named '{old}' in the library") from None
        except OSError as exc:
            raise self._cannot("rename in", exc) from None
        if not moved:
            raise LibraryError(f"a trace named '{new}' already exists")
        return new

    def delete(self, name: str) -> None:
        """Delete the trace `name`; LibraryError when there is none or it cannot be deleted.

        Args:
            name: The trace's name.

        Raises:
            LibraryError: When the library is read-only, there is no trace named `name` (also when deleted
                meanwhile by someone else), or it cannot be deleted.
        """
        self._writable("deleted")
        path = self.path(name)
        try:
            if not path.is_file():
                raise FileNotFoundError(path)
            path.unlink()
        except FileNotFoundError:  # also when deleted meanwhile by someone else
            raise LibraryError(f"no trace named '{name}' in the library") from None
        except OSError as exc:
            raise self._cannot("delete from", exc) from None

    def _writable(self, done: str) -> None:
        if self.read_only:
            raise LibraryError(f"this library is read-only (a read-only demo): nothing is {done}")

    def _cannot(self, verb: str, exc: OSError) -> LibraryError:
        """One line for a write the folder refuses (never the name of a hidden temporary file)."""
        reason = exc.strerror or type(exc).__name__
        return LibraryError(f"cannot {verb} the library folder {self.root}: {reason}")

    def import_json(self, data: bytes | str, name: str | None = None) -> str:
        """Validate `data` as a trace and save it; raises `TraceValidationError` for a bad file.

        Args:
            data: The trace file's content (JSON), at most `MAX_FILE_BYTES`.
            name: The wanted name (sanitised, made unique); None takes the trace's title, else its id.

        Returns:
            The name the trace was saved under.

        Raises:
            LibraryError: When the library is read-only, or the save fails (see `save`).
            TraceValidationError: When `data` is larger than `MAX_FILE_BYTES` or not a valid trace.
        """
        self._writable("imported")
        if len(data) > MAX_FILE_BYTES:
            raise TraceValidationError(f"file is {len(data)} bytes; the limit is {MAX_FILE_BYTES}")
        trace = Trace.from_json(data)
        return self.save(trace, name)

    def export_json(self, name: str) -> bytes:
        """The trace's JSON, validated (a corrupted file raises instead of being passed on).

        Args:
            name: The trace's name.

        Returns:
            The trace's JSON (indented by 1), UTF-8 encoded.

        Raises:
            LibraryError: When there is no trace named `name`.
            TraceValidationError: When the file is not a valid trace.
        """
        return self.open(name).to_json(indent=1).encode("utf-8")
