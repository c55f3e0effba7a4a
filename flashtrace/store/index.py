"""An SQLite index of a library folder's trace metadata, so listing thousands of traces stays fast.

The JSON files stay the source of truth: the index (``<folder>/.index.sqlite``, standard-library
``sqlite3``) holds one row per file — title, model, task, tokens, hops, method, created, size,
metrics (``extra["metrics"]``, when present) and a lower-cased search text — together with the file's
modification time and size. `LibraryIndex.sync` (run before every query) stats the folder's files and
re-reads only those that are new or changed on disk, and drops rows of files that are gone; an index
that is unreadable, or written by another schema, is rebuilt. Where the folder is read-only the index
lives in memory for the process.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path

from ..analysis.schema import Trace, TraceValidationError

INDEX_NAME = ".index.sqlite"
SCHEMA = 1
FIELDS = ("name", "mtime_ns", "size", "title", "model", "task", "n_tokens", "hops", "method", "created",
          "prompt_head", "metrics", "error", "haystack")
SORTS = {"modified": "mtime_ns", "name": "name", "title": "title", "model": "model", "task": "task",
         "tokens": "n_tokens", "hops": "hops", "method": "method", "created": "created", "size": "size"}
_MEMORY: dict[str, sqlite3.Connection] = {}  # read-only folders: one in-memory index per folder
_LOCK = threading.RLock()  # guards the shared in-memory connections


def _row(tr: Trace) -> dict:
    metrics, task = tr.extra.get("metrics"), tr.extra.get("task")
    return dict(title=tr.title, model=tr.model.name, task=task if isinstance(task, str) else "", n_tokens=tr.n_tokens,
                hops=tr.settings.hops, method=tr.settings.method, created=tr.created, prompt_head=tr.prompt[:200],
                metrics=json.dumps(metrics) if isinstance(metrics, dict) else None, error=None)


def read_meta(path: Path) -> dict:
    """The index row of one trace file (``error`` set, other fields empty, when it does not load)."""
    try:
        return _row(Trace.load(path))
    except (TraceValidationError, OSError, UnicodeDecodeError) as exc:
        return dict(title="", model="", task="", n_tokens=0, hops=0, method="", created="", prompt_head="",
                    metrics=None, error=str(exc)[:300] or type(exc).__name__)


def _haystack(name: str, row: dict) -> str:
    return " ".join((name, row["title"], row["model"], row["method"], row["task"], row["prompt_head"])).lower()


class LibraryIndex:
    """The index of `folder` (which holds ``*.json`` trace files)."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)

    def _connect(self) -> sqlite3.Connection:
        path = self.folder / INDEX_NAME
        if os.access(self.folder, os.W_OK):
            try:
                conn = sqlite3.connect(path, timeout=30, isolation_level=None)
                self._ensure(conn)
                return conn
            except sqlite3.DatabaseError:  # corrupt or foreign file: rebuild it from the traces
                path.unlink(missing_ok=True)
                conn = sqlite3.connect(path, timeout=30, isolation_level=None)
                self._ensure(conn)
                return conn
        key = str(self.folder.resolve())
        if key not in _MEMORY:
            _MEMORY[key] = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
            self._ensure(_MEMORY[key])
        return _MEMORY[key]

    @contextmanager
    def _session(self):
        conn = self._connect()
        shared = conn in _MEMORY.values()
        if shared:
            _LOCK.acquire()
        try:
            yield conn
        finally:
            if shared:
                _LOCK.release()
            else:
                conn.close()

    @staticmethod
    def _ensure(conn: sqlite3.Connection) -> None:
        if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA:
            conn.execute("DROP TABLE IF EXISTS traces")
            conn.execute("CREATE TABLE traces (name TEXT PRIMARY KEY, mtime_ns INTEGER, size INTEGER, title TEXT, "
                         "model TEXT, task TEXT, n_tokens INTEGER, hops INTEGER, method TEXT, created TEXT, "
                         "prompt_head TEXT, metrics TEXT, error TEXT, haystack TEXT)")
            conn.execute(f"PRAGMA user_version = {SCHEMA}")

    def _on_disk(self) -> dict[str, tuple[int, int]]:
        found = {}
        try:
            with os.scandir(self.folder) as it:
                for item in it:
                    if item.name.endswith(".json") and not item.name.startswith("."):
                        try:
                            st = item.stat()
                        except OSError:  # removed while listing
                            continue
                        if item.is_file():
                            found[item.name[:-5]] = (st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            pass
        return found

    def sync(self, conn: sqlite3.Connection | None = None) -> int:
        """Bring the index up to date with the files; returns how many files were (re-)read."""
        if conn is None:
            with self._session() as conn:
                return self.sync(conn)
        disk = self._on_disk()
        known = {n: (m, s) for n, m, s in conn.execute("SELECT name, mtime_ns, size FROM traces")}
        changed = [n for n, stamp in disk.items() if known.get(n) != stamp]
        gone = [n for n in known if n not in disk]
        if not changed and not gone:
            return 0
        rows = []
        for name in changed:
            row = read_meta(self.folder / f"{name}.json")
            rows.append((name, *disk[name], *(row[f] for f in FIELDS[3:13]), _haystack(name, row)))
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(f"INSERT OR REPLACE INTO traces VALUES ({', '.join('?' * len(FIELDS))})", rows)
            conn.executemany("DELETE FROM traces WHERE name = ?", [(n,) for n in gone])
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return len(changed)

    def add(self, name: str, trace: Trace) -> None:
        """Index a trace this process has just written as ``<name>.json`` (already validated), so the next
        listing need not read it back. The index is a cache: a failure here is ignored."""
        try:
            st = (self.folder / f"{name}.json").stat()
            row = _row(trace)
            with self._session() as conn:
                conn.execute(f"INSERT OR REPLACE INTO traces VALUES ({', '.join('?' * len(FIELDS))})",
                             (name, st.st_mtime_ns, st.st_size, *(row[f] for f in FIELDS[3:13]), _haystack(name, row)))
        except (OSError, sqlite3.Error):
            pass

    def query(self, search: str = "", model: str | None = None, task: str | None = None, sort: str = "modified",
              descending: bool | None = None, limit: int | None = None, offset: int = 0) -> tuple[list[dict], int]:
        """Rows matching every word of `search` (name, title, model, method, task, prompt start), and
        `model` / `task` when given, sorted (newest first by default); one page of `limit` rows from
        `offset`, and the number of matches."""
        if sort not in SORTS:
            raise ValueError(f"sort by one of {', '.join(SORTS)}, not {sort!r}")
        with self._session() as conn:
            self.sync(conn)
            where, args = [], []
            for word in search.lower().split():
                where.append("instr(haystack, ?) > 0")
                args.append(word)
            for column, value in (("model", model), ("task", task)):
                if value is not None:
                    where.append(f"{column} = ?")
                    args.append(value)
            clause = (" WHERE " + " AND ".join(where)) if where else ""
            total = conn.execute(f"SELECT count(*) FROM traces{clause}", args).fetchone()[0]
            desc = (sort == "modified") if descending is None else descending
            order = f"{SORTS[sort]} {'DESC' if desc else 'ASC'}, name ASC"
            page = f" LIMIT {int(limit)} OFFSET {int(offset)}" if limit is not None else ""
            cursor = conn.execute(f"SELECT {', '.join(FIELDS[:13])} FROM traces{clause} ORDER BY {order}{page}", args)
            rows = [dict(zip(FIELDS[:13], r)) for r in cursor]
        for row in rows:
            row["metrics"] = json.loads(row["metrics"]) if row["metrics"] else None
        return rows, total

    def facets(self) -> dict[str, list[str]]:
        """The distinct models and tasks of readable traces (for filters)."""
        with self._session() as conn:
            self.sync(conn)
            return {c: [v for (v,) in conn.execute(f"SELECT DISTINCT {c} FROM traces WHERE error IS NULL AND {c} != '' "
                                                   f"ORDER BY {c}")] for c in ("model", "task")}

__all__ = ["LibraryIndex", "INDEX_NAME", "SORTS", "read_meta"]
