"""An SQLite index of a library folder's trace metadata, so listing thousands of traces stays fast.

The JSON files stay the source of truth and the index is a cache: ``<folder>/.index.sqlite``
(standard-library ``sqlite3``) holds one row per file (title, model, task, tokens, hops, method, created,
size, metrics from ``extra["metrics"]``, a lower-cased search text) with the file's stamp: inode, size,
modification and change times in nanoseconds. The change time moves on every write, also one that keeps
the size and puts the modification time back, so an edited file is always re-read. `LibraryIndex.sync`
(run before every query) stats the folder's files, re-reads those whose stamp differs, and drops rows of
files that are gone.

Whatever happens to the index file, a listing answers from the files (`index_file`): a file of another
shape or version is rebuilt, a damaged one replaced when no process holds it, a folder, a symbolic link
or an unwritable file of that name is left alone, and a busy one is waited for a few seconds. In those
cases, in a read-only folder and for a read-only library, the index lives in memory for the process. A row that does not decode
(metrics that are not JSON, values of the wrong type) is read again from its file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Callable, TypeVar

from . import index_file
from .index_file import IndexUnavailable, create_table, rollback
from ..analysis.schema import Trace
from ..base.errors import InputError

INDEX_NAME = ".index.sqlite"
SCHEMA = 2
STAMP = ("mtime_ns", "size", "ctime_ns", "inode")
FIELDS = ("name", *STAMP, "title", "model", "task", "n_tokens", "hops", "method", "created", "prompt_head",
          "metrics", "error", "haystack")
META = FIELDS[5:15]  # what read_meta gives, in column order
ROW = ("name", "mtime_ns", "size", *META)  # what a query returns
_TYPES = {"name": str, "mtime_ns": int, "size": int, "title": str, "model": str, "task": str, "n_tokens": int,
          "hops": int, "method": str, "created": str, "prompt_head": str, "error": (str, type(None))}
COLUMNS = ("name TEXT PRIMARY KEY, mtime_ns INTEGER, size INTEGER, ctime_ns INTEGER, inode INTEGER, title TEXT, "
           "model TEXT, task TEXT, n_tokens INTEGER, hops INTEGER, method TEXT, created TEXT, prompt_head TEXT, "
           "metrics TEXT, error TEXT, haystack TEXT")
SORTS = {"modified": "mtime_ns", "name": "name", "title": "title", "model": "model", "task": "task",
         "tokens": "n_tokens", "hops": "hops", "method": "method", "created": "created", "size": "size"}
_MEMORY: dict[str, sqlite3.Connection] = {}  # folders whose index file cannot be used: one in-memory index each
_LOCK = threading.RLock()  # guards the shared in-memory connections
T = TypeVar("T")


def _row(tr: Trace) -> dict:
    metrics, task = tr.extra.get("metrics"), tr.extra.get("task")
    return dict(title=tr.title, model=tr.model.name, task=task if isinstance(task, str) else "", n_tokens=tr.n_tokens,
                hops=tr.settings.hops, method=tr.settings.method, created=tr.created, prompt_head=tr.prompt[:200],
                metrics=json.dumps(metrics) if isinstance(metrics, dict) else None, error=None)


def read_meta(path: Path) -> dict:
    """The index row of one trace file (``error`` set, other fields empty, when it does not load).

    Args:
        path: The trace's JSON file.

    Returns:
        The row's metadata fields (title, model, task, n_tokens, hops, method, created, prompt_head, metrics,
            error), by name.
    """
    try:
        return _row(Trace.load(path))
    except Exception as exc:  # noqa: BLE001 - a file that does not load is listed with its reason, whatever it is
        return dict(title="", model="", task="", n_tokens=0, hops=0, method="", created="", prompt_head="",
                    metrics=None, error=" ".join(str(exc).split())[:300] or type(exc).__name__)


def _haystack(name: str, row: dict) -> str:
    return " ".join((name, row["title"], row["model"], row["method"], row["task"], row["prompt_head"])).lower()


class LibraryIndex:
    """The index of `folder` (which holds ``*.json`` trace files)."""

    def __init__(self, folder: str | Path, read_only: bool = False):
        self.folder = Path(folder)
        self.read_only = read_only  # never write the folder: the index lives in memory

    def _use(self, action: Callable[[sqlite3.Connection], T]) -> T:
        """`action` on the folder's index file; when the file cannot be used (see the module docstring), or
        fails during the action, on the process's in-memory index of the folder instead."""
        try:
            conn = None if self.read_only else index_file.open_index(self.folder / INDEX_NAME, FIELDS, COLUMNS, SCHEMA)
        except (IndexUnavailable, sqlite3.Error, OSError):
            conn = None
        if conn is not None:
            try:
                return action(conn)
            except sqlite3.Error:  # busy past the timeout, read-only, damaged meanwhile: the files answer
                pass
            finally:
                conn.close()
        with _LOCK:
            return action(self._memory())

    def _memory(self) -> sqlite3.Connection:
        key = str(self.folder.resolve())
        if key not in _MEMORY:
            conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
            create_table(conn, COLUMNS, SCHEMA)
            _MEMORY[key] = conn
        return _MEMORY[key]

    def _on_disk(self) -> dict[str, tuple[int, int, int, int]]:
        found = {}
        try:
            with os.scandir(self.folder) as it:
                for item in it:
                    if item.name.endswith(".json") and not item.name.startswith("."):
                        try:
                            if not item.is_file():
                                continue
                            st = item.stat()
                        except OSError:  # removed while listing
                            continue
                        found[item.name[:-5]] = (st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino)
        except (FileNotFoundError, NotADirectoryError):
            pass
        return found

    def sync(self) -> int:
        """Bring the index up to date with the files; returns how many files were (re-)read.

        Returns:
            How many files were (re-)read (0 when the index was up to date).
        """
        return self._use(self._sync)

    def _sync(self, conn: sqlite3.Connection) -> int:
        disk = self._on_disk()
        known = {n: tuple(stamp) for n, *stamp in conn.execute(f"SELECT name, {', '.join(STAMP)} FROM traces")}
        changed = [n for n, stamp in disk.items() if known.get(n) != stamp]
        gone = [n for n in known if n not in disk]
        if not changed and not gone:
            return 0
        self._write(conn, [self._fresh(name, disk[name]) for name in changed], gone)
        return len(changed)

    def _fresh(self, name: str, stamp: tuple) -> tuple:
        row = read_meta(self.folder / f"{name}.json")
        return (name, *stamp, *(row[f] for f in META), _haystack(name, row))

    @staticmethod
    def _write(conn: sqlite3.Connection, rows: list[tuple], gone: list[str] = ()) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(f"INSERT OR REPLACE INTO traces VALUES ({', '.join('?' * len(FIELDS))})", rows)
            conn.executemany("DELETE FROM traces WHERE name = ?", [(n,) for n in gone])
            conn.commit()
        except BaseException:
            rollback(conn)
            raise

    def add(self, name: str, trace: Trace) -> None:
        """Index a trace this process has just written as ``<name>.json`` (already validated), so the next
        listing need not read it back. The index is a cache: a failure here is ignored.

        Args:
            name: The trace's name, its file ``<name>.json`` in the folder.
            trace: The trace just written to that file.
        """
        try:
            st = (self.folder / f"{name}.json").stat()
            row = _row(trace)
            values = (name, st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino, *(row[f] for f in META),
                      _haystack(name, row))
            self._use(lambda conn: self._write(conn, [values]))
        except (OSError, sqlite3.Error):
            pass

    def query(self, search: str, model: str | None, task: str | None, sort: str, limit: int | None,
              offset: int) -> tuple[list[dict], int]:
        """Rows matching every word of `search` (name, title, model, method, task, prompt start), and
        `model` / `task` when given, sorted by `sort` (newest first for "modified", else ascending); one page
        of `limit` rows from `offset` (all of them for None), and the number of matches.

        Args:
            search: The words every row must contain (in its name, title, model, method, task or prompt start);
                empty matches every row.
            model: The model a row must have; None for any.
            task: The task a row must have; None for any.
            sort: The key to sort by, one of `SORTS` (newest first for "modified", else ascending).
            limit: The page's size in rows; None for all of them.
            offset: How many matching rows come before the page.

        Returns:
            ``(rows, total)``: the page's rows (dicts of `ROW`'s fields, metrics decoded) and the number of
                matches.

        Raises:
            InputError: When `sort` is not one of `SORTS`.
        """
        if sort not in SORTS:
            raise InputError(f"sort by one of {', '.join(SORTS)}, not {sort!r}")
        where, args = [], []
        for word in search.lower().split():
            where.append("instr(haystack, ?) > 0")
            args.append(word)
        for column, value in (("model", model), ("task", task)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        clause = (" WHERE " + " AND ".join(where)) if where else ""
        order = f"{SORTS[sort]} {'DESC' if sort == 'modified' else 'ASC'}, name ASC"
        page = f" LIMIT {int(limit)} OFFSET {int(offset)}" if limit is not None else ""

        def run(conn: sqlite3.Connection) -> tuple[list[dict], int]:
            self._sync(conn)
            total = conn.execute(f"SELECT count(*) FROM traces{clause}", args).fetchone()[0]
            cursor = conn.execute(f"SELECT {', '.join(ROW)} FROM traces{clause} ORDER BY {order}{page}", args)
            return [self._decoded(conn, dict(zip(ROW, r))) for r in cursor.fetchall()], total

        return self._use(run)

    def _decoded(self, conn: sqlite3.Connection, row: dict) -> dict:
        """`row` with its metrics decoded; a row that does not decode or has values of the wrong type (a damaged
        index) is read again from its file and written back."""
        try:
            metrics = json.loads(row["metrics"]) if row["metrics"] is not None else None
            if (metrics is None or isinstance(metrics, dict)) and all(isinstance(row[k], t) for k, t in _TYPES.items()):
                return {**row, "metrics": metrics}
        except (TypeError, ValueError, RecursionError):
            pass
        name = str(row["name"])
        path = self.folder / f"{name}.json"
        try:
            st = path.stat()
        except OSError:
            return {**row, "metrics": None, "error": "the file is gone"}
        fresh = self._fresh(name, (st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino))
        try:
            self._write(conn, [fresh])
        except sqlite3.Error:  # the index stays wrong for now; this listing is right
            pass
        out = dict(zip(FIELDS, fresh))
        return {**{k: out[k] for k in ROW}, "metrics": json.loads(out["metrics"]) if out["metrics"] else None}

    def facets(self) -> dict[str, list[str]]:
        """The distinct models and tasks of readable traces (for filters).

        Returns:
            ``{"model": [...], "task": [...]}``, each list sorted, empty values left out.
        """
        def run(conn: sqlite3.Connection) -> dict[str, list[str]]:
            self._sync(conn)
            return {c: [v for (v,) in conn.execute(f"SELECT DISTINCT {c} FROM traces WHERE error IS NULL AND {c} != '' "
                                                   f"ORDER BY {c}") if isinstance(v, str)] for c in ("model", "task")}

        return self._use(run)


__all__ = ["LibraryIndex", "INDEX_NAME", "SORTS", "read_meta"]
