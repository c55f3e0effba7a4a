"""Opening the library index's SQLite file safely: the file is a cache, never something to fight over.

- Only a regular file named ``.index.sqlite`` is used: a folder, a symbolic link (whose target could be
  anyone's database) or a device of that name is left alone and never written through.
- A table of another shape or version is rebuilt inside a write transaction (so it waits for, and never
  disturbs, another process writing the index).
- A file SQLite cannot read at all (not a database, malformed) is deleted and a fresh index made, only
  when no process holds a lock on it (an open-file-description lock probe, Linux only: elsewhere such a
  file is left alone), never under a lock holder.
- A busy index is waited for at most `BUSY_TIMEOUT_S` seconds; `open_index` and its callers then fall back
  to an in-memory index built from the files, as they do for a folder this user cannot write.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import struct
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows
    fcntl = None

BUSY_TIMEOUT_S = 5.0  # how long a listing waits for another process writing the index, then reads the files


class IndexUnavailable(Exception):
    """The index file cannot be used now (busy, read-only, not a regular file, damaged under a lock)."""


def create_table(conn: sqlite3.Connection, columns: str, schema: int) -> None:
    """(Re)create the index table in one write transaction: another writer is waited for, not broken.

    Args:
        conn: The connection to the index file.
        columns: The column definitions of the ``traces`` table, as SQL.
        schema: The schema version, stored as the file's ``user_version``.

    Raises:
        sqlite3.Error: When SQLite cannot write the table (the transaction is rolled back, the error re-raised).
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("DROP TABLE IF EXISTS traces")
        conn.execute(f"CREATE TABLE traces ({columns})")
        conn.execute(f"PRAGMA user_version = {int(schema)}")
        conn.commit()
    except BaseException:
        rollback(conn)
        raise


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back the open transaction of `conn`, if any (errors ignored: there is nothing to undo).

    Args:
        conn: The connection whose transaction is rolled back.
    """
    try:
        conn.rollback()
    except sqlite3.Error:  # no transaction open, or the connection is unusable: nothing to undo
        pass


def ensure_table(conn: sqlite3.Connection, fields: tuple[str, ...], columns: str, schema: int) -> None:
    """The table of `fields` at version `schema`, rebuilt when the file holds another version or shape.

    Args:
        conn: The connection to the index file.
        fields: The table's column names, in order.
        columns: The column definitions of the ``traces`` table, as SQL (used when it is rebuilt).
        schema: The schema version the file must hold.
    """
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    shape = tuple(row[1] for row in conn.execute("PRAGMA table_info(traces)"))
    if version != schema or shape != fields:
        create_table(conn, columns, schema)


def _regular_or_missing(path: Path) -> os.stat_result | None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(info.st_mode):
        raise IndexUnavailable(f"{path.name} is not a regular file")
    return info


def _locked_by_another(path: Path) -> bool:
    """True when a process (this one included) holds a POSIX or OFD lock on `path`, or we cannot tell (no
    open-file-description locks: not Linux)."""
    probe = getattr(fcntl, "F_OFD_SETLK", None)
    if probe is None:
        return True
    fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
    try:  # an open-file-description write lock on the whole file conflicts with any SQLite lock, ours too
        fcntl.fcntl(fd, probe, struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
        return False
    except OSError:
        return True
    finally:
        os.close(fd)  # releases the probe's lock only (OFD locks belong to this descriptor)


def _delete_damaged(path: Path) -> None:
    """Delete a file SQLite cannot read, unless a process holds a lock on it; the next connection makes a
    fresh index. A journal or WAL the damaged file left is never replayed into it: SQLite deletes those it
    finds beside an empty database."""
    if _regular_or_missing(path) is None:
        return
    if _locked_by_another(path):
        raise IndexUnavailable(f"{path.name} is damaged and in use by another process")
    path.unlink()


def _connect(path: Path, fields: tuple[str, ...], columns: str, schema: int) -> sqlite3.Connection:
    """A connection to `path` with its table ready, refused when the file was swapped while it was opened."""
    before = _regular_or_missing(path)
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    try:
        after = _regular_or_missing(path)
        if before is not None and (after is None or after.st_ino != before.st_ino):
            raise IndexUnavailable(f"{path.name} changed while it was opened")
        ensure_table(conn, fields, columns, schema)
    except BaseException:
        conn.close()
        raise
    return conn


def open_index(path: Path, fields: tuple[str, ...], columns: str, schema: int) -> sqlite3.Connection:
    """A connection to the index file `path`, its table ready.

    Args:
        path: The index file (``.index.sqlite``).
        fields: The table's column names, in order.
        columns: The column definitions of the ``traces`` table, as SQL.
        schema: The schema version the file must hold.

    Returns:
        An open connection (autocommit) whose table has `fields` at version `schema`.

    Raises:
        IndexUnavailable: When the file cannot be used now (busy, read-only folder, not a regular file, changed
            while opened, damaged under a lock); the caller then reads the files into memory.
    """
    if not os.access(path.parent, os.W_OK):
        raise IndexUnavailable(f"{path.parent} is read-only")
    try:
        return _connect(path, fields, columns, schema)
    except sqlite3.OperationalError as exc:  # busy, cannot open or write: the file itself may be fine
        raise IndexUnavailable(str(exc)) from None
    except sqlite3.DatabaseError:  # not a database, malformed: SQLite cannot read the file
        _delete_damaged(path)
    try:
        return _connect(path, fields, columns, schema)
    except sqlite3.DatabaseError as exc:
        raise IndexUnavailable(str(exc)) from None


__all__ = ["BUSY_TIMEOUT_S", "IndexUnavailable", "open_index", "ensure_table", "create_table", "rollback"]
