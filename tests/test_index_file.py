"""The library index file when something else touches it: a damaged index where locks cannot be probed, a busy
one, one being read while it needs a rebuild, one swapped while it is opened, one whose writer crashed."""

import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from flashtrace.store import index as index_module
from flashtrace.store import index_file
from flashtrace.store.index import INDEX_NAME
from flashtrace.store.index_file import IndexUnavailable, open_index
from tests.test_index_faults import EXPECTED, HEALED, _healed, lib, titles  # noqa: F401 - lib is a fixture

GARBAGE = b"not a database " * 200


def _open(lib):
    return open_index(lib.root / INDEX_NAME, index_module.FIELDS, index_module.COLUMNS, index_module.SCHEMA)


def _dot_files(lib) -> list[str]:
    return sorted(p.name for p in lib.root.iterdir() if p.name.startswith("."))


def test_a_damaged_index_is_left_alone_where_locks_cannot_be_probed(lib, monkeypatch):
    import fcntl

    monkeypatch.delattr(fcntl, "F_OFD_SETLK")  # as on macOS: no open-file-description locks
    path = lib.root / INDEX_NAME
    path.write_bytes(GARBAGE)
    assert titles(lib) == EXPECTED  # the files answer
    with pytest.raises(IndexUnavailable, match=f"^{INDEX_NAME} is damaged and in use by another process$"):
        _open(lib)
    assert path.read_bytes() == GARBAGE  # someone may hold it: never deleted


def test_a_busy_index_is_reported_busy_and_its_writer_keeps_it(lib, monkeypatch):
    assert titles(lib) == EXPECTED
    path = lib.root / INDEX_NAME
    inode = path.stat().st_ino
    monkeypatch.setattr(index_file, "BUSY_TIMEOUT_S", 0.05)
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        writer.execute("BEGIN EXCLUSIVE")
        writer.execute("UPDATE traces SET title = 'written by the writer' WHERE name = 'alpha'")
        with pytest.raises(IndexUnavailable, match="^database is locked$"):  # busy, not taken for damage
            _open(lib)
        assert titles(lib) == EXPECTED
        writer.execute("COMMIT")
    finally:
        writer.close()
    assert path.stat().st_ino == inode
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT title FROM traces WHERE name = 'alpha'").fetchone()[0] == "written by the writer"


def test_an_outdated_index_being_read_is_rebuilt_once_the_reader_is_done(lib, monkeypatch):
    assert titles(lib) == EXPECTED
    path = lib.root / INDEX_NAME
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {index_module.SCHEMA - 1}")  # written by an older version
    monkeypatch.setattr(index_file, "BUSY_TIMEOUT_S", 0.05)
    reader = sqlite3.connect(path, isolation_level=None)
    try:
        reader.execute("BEGIN")
        assert reader.execute("SELECT count(*) FROM traces").fetchone()[0] == 2  # holds the file while reading
        with pytest.raises(IndexUnavailable, match="^database is locked$"):  # the rebuild cannot commit
            _open(lib)
        assert titles(lib) == EXPECTED  # the files answer
        assert reader.execute("SELECT count(*) FROM traces").fetchone()[0] == 2  # the reader's table is intact
        reader.execute("COMMIT")
    finally:
        reader.close()
    assert titles(lib) == EXPECTED
    assert _healed(lib) == HEALED  # rebuilt by the next listing


@pytest.mark.parametrize("swap", ["deleted", "replaced"])
def test_an_index_swapped_while_it_is_opened_is_not_used(lib, monkeypatch, tmp_path, swap):
    assert titles(lib) == EXPECTED
    path = lib.root / INDEX_NAME
    connect = sqlite3.connect

    def racing(target, *args, **kwargs):  # another process swaps the index just after this one opened it
        conn = connect(target, *args, **kwargs)
        if target == path and path.exists():
            if swap == "deleted":
                path.unlink()
            else:
                shutil.copy(path, tmp_path / "copy")
                os.replace(tmp_path / "copy", path)
        return conn

    monkeypatch.setattr(index_file.sqlite3, "connect", racing)
    with pytest.raises(IndexUnavailable, match=f"^{INDEX_NAME} changed while it was opened$"):
        _open(lib)
    assert titles(lib) == EXPECTED  # the files answer


CRASH = """
import os, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("UPDATE traces SET title = 'never committed'")
os._exit(0)  # the writer dies mid-write: its journal stays beside the index
"""


def test_a_damaged_index_whose_writer_crashed_is_rebuilt_without_its_journal(lib):
    assert titles(lib) == EXPECTED
    path = lib.root / INDEX_NAME
    subprocess.run([sys.executable, "-c", CRASH, str(path)], check=True, timeout=60)
    assert _dot_files(lib) == [INDEX_NAME, f"{INDEX_NAME}-journal"]
    with open(path, "r+b") as handle:
        handle.write(GARBAGE[:100])  # the header is damaged
    assert titles(lib) == EXPECTED
    assert _healed(lib) == HEALED
    assert _dot_files(lib) == [INDEX_NAME]


def test_an_index_damaged_again_as_soon_as_it_is_replaced_is_named_and_the_files_answer(lib, monkeypatch):
    path = lib.root / INDEX_NAME
    connect = sqlite3.connect

    def damaging(target, *args, **kwargs):  # another program keeps writing garbage over the index
        if target == path:
            path.write_bytes(GARBAGE)
        return connect(target, *args, **kwargs)

    monkeypatch.setattr(index_file.sqlite3, "connect", damaging)
    with pytest.raises(IndexUnavailable, match="^file is not a database$"):
        _open(lib)
    assert titles(lib) == EXPECTED
