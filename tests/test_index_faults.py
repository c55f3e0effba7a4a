"""Issue 30, the library index is a cache that heals itself: a damaged index is rebuilt or bypassed
(defect 6), a locked one is waited for, never deleted (defect 7), a file edited in place with the same
size and modification time is re-read (defect 17), a symbolic link named like the index is never written
through (defect 18)."""

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

import pytest

from flashtrace.store import index as index_module
from flashtrace.store.index import INDEX_NAME, LibraryIndex
from flashtrace.store.library import Library
from tests.bad_files import gallery_data


@pytest.fixture
def lib(tmp_path):
    folder = tmp_path / "lib"
    folder.mkdir()
    for name in ("alpha", "beta"):
        data = gallery_data("free-form")
        data["title"] = f"title of {name}"
        (folder / f"{name}.json").write_text(json.dumps(data), encoding="utf-8")
    return Library(folder)


def titles(lib) -> dict:
    return {e.name: e.title for e in lib.entries()}


EXPECTED = {"alpha": "title of alpha", "beta": "title of beta"}


def test_an_index_that_is_a_folder_is_bypassed(lib):
    (lib.root / INDEX_NAME).mkdir()
    assert titles(lib) == EXPECTED
    assert lib.facets()["model"] == ["smollm2-135m"]


def test_an_index_of_another_table_shape_is_rebuilt(lib):
    with sqlite3.connect(lib.root / INDEX_NAME) as conn:
        conn.execute("CREATE TABLE traces (name TEXT PRIMARY KEY)")
        conn.execute(f"PRAGMA user_version = {index_module.SCHEMA}")
    assert titles(lib) == EXPECTED
    assert titles(lib) == EXPECTED  # and the rebuilt index serves the next listing


def test_a_row_whose_metrics_is_not_json_is_read_again(lib):
    data = json.loads((lib.root / "alpha.json").read_text())
    data["extra"]["metrics"] = {"rise": 0.25}
    (lib.root / "alpha.json").write_text(json.dumps(data))
    assert titles(lib) == EXPECTED
    with sqlite3.connect(lib.root / INDEX_NAME) as conn:
        conn.execute("UPDATE traces SET metrics = '{oops' WHERE name = 'alpha'")
    entries = {e.name: e for e in lib.entries()}
    assert entries["alpha"].metrics == {"rise": 0.25}


def test_garbage_in_the_index_file_is_rebuilt(lib):
    (lib.root / INDEX_NAME).write_bytes(b"not a database " * 200)
    assert titles(lib) == EXPECTED


LIST_AS_NOBODY = """
import json, os, sys
from flashtrace.store.library import Library
os.setgid(65534)
os.setuid(65534)
print(json.dumps({e.name: e.title for e in Library(sys.argv[1]).entries()}))
"""


def test_an_index_this_user_cannot_write_is_bypassed(lib):
    """As root the test makes the folder writable by anyone but the index read-only for others, then lists
    it as another user (nobody)."""
    shared = tempfile.mkdtemp(prefix="flashtrace-r3-")
    try:
        folder = os.path.join(shared, "lib")
        os.rename(lib.root, folder)
        assert titles(Library(folder)) == EXPECTED  # the index exists, owned by root
        os.chmod(shared, 0o755)
        os.chmod(folder, 0o777)
        os.chmod(os.path.join(folder, INDEX_NAME), 0o644)
        for name in ("alpha", "beta"):
            os.utime(os.path.join(folder, f"{name}.json"))  # changed: the listing has to write the index
        code = (f"import sys; sys.path[:0] = {sys.path!r}\n") + LIST_AS_NOBODY
        res = subprocess.run([sys.executable, "-c", code, folder], capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr[-2000:]
        assert json.loads(res.stdout.strip().splitlines()[-1]) == EXPECTED
    finally:
        subprocess.run(["rm", "-rf", shared], check=True)


HOLD_LOCK = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
conn.execute("UPDATE traces SET title = 'written by the lock holder' WHERE name = 'alpha'")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("COMMIT")
print("committed", flush=True)
"""


def test_a_locked_index_is_waited_for_and_never_deleted(lib, monkeypatch):
    assert titles(lib) == EXPECTED
    path = lib.root / INDEX_NAME
    inode = path.stat().st_ino
    (lib.root / "gamma.json").write_text((lib.root / "beta.json").read_text())  # the listing must write
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        try:  # a shorter wait for the test (the module of the fix)
            from flashtrace.store import index_file

            monkeypatch.setattr(index_file, "BUSY_TIMEOUT_S", 1.0)
        except ImportError:
            pass
        listed = titles(lib)
        assert listed == {**EXPECTED, "gamma": "title of beta"}
        assert path.stat().st_ino == inode  # the lock holder's file is still the index
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "committed"
        assert holder.wait(timeout=30) == 0
    finally:
        holder.kill()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT title FROM traces WHERE name = 'alpha'").fetchone()[0] == \
            "written by the lock holder"


def _same_size_same_time(path, new_text: str) -> None:
    """Rewrite `path` in place with `new_text` (same length) and put its modification time back."""
    st = path.stat()
    assert len(new_text.encode()) == st.st_size
    with open(path, "r+b") as handle:
        handle.write(new_text.encode())
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)


def test_an_edit_with_the_same_size_and_time_is_noticed(lib):
    assert titles(lib) == EXPECTED
    path = lib.root / "alpha.json"
    _same_size_same_time(path, path.read_text().replace("title of alpha", "title of ALPHA"))
    assert titles(lib)["alpha"] == "title of ALPHA"
    _same_size_same_time(path, "x" * path.stat().st_size)
    assert not {e.name: e for e in lib.entries()}["alpha"].readable


def test_a_symlinked_index_is_never_written_through(lib, tmp_path):
    other = tmp_path / "someone-elses.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE traces (precious TEXT)")
        conn.execute("INSERT INTO traces VALUES ('keep me')")
    before = hashlib.sha256(other.read_bytes()).hexdigest()
    (lib.root / INDEX_NAME).symlink_to(other)
    assert titles(lib) == EXPECTED
    assert hashlib.sha256(other.read_bytes()).hexdigest() == before
    assert (lib.root / INDEX_NAME).is_symlink()


def test_a_healthy_index_is_still_used(lib):
    assert titles(lib) == EXPECTED
    assert LibraryIndex(lib.root).sync() == 0  # nothing changed: nothing re-read


def _healed(lib) -> dict:
    """The index file after a listing: its version, columns and rows (it must serve the next listing)."""
    with sqlite3.connect(lib.root / INDEX_NAME) as conn:
        return {"version": conn.execute("PRAGMA user_version").fetchone()[0],
                "columns": tuple(r[1] for r in conn.execute("PRAGMA table_info(traces)")),
                "rows": dict(conn.execute("SELECT name, title FROM traces ORDER BY name").fetchall())}


HEALED = {"version": index_module.SCHEMA, "columns": index_module.FIELDS, "rows": EXPECTED}


@pytest.mark.parametrize("version, columns", [(index_module.SCHEMA - 1, None), (index_module.SCHEMA, "name TEXT")])
def test_an_index_of_another_version_or_shape_is_rebuilt_on_disk(lib, version, columns):
    with sqlite3.connect(lib.root / INDEX_NAME) as conn:
        conn.execute(f"CREATE TABLE traces ({columns or index_module.COLUMNS})")
        conn.execute("INSERT INTO traces (name) VALUES ('stale')")
        conn.execute(f"PRAGMA user_version = {version}")
    assert titles(lib) == EXPECTED
    assert _healed(lib) == HEALED


def test_a_damaged_index_is_replaced_on_disk_with_its_leftovers(lib):
    (lib.root / INDEX_NAME).write_bytes(b"not a database " * 200)
    for leftover in ("-journal", "-wal", "-shm"):  # SQLite would replay them into the fresh index
        (lib.root / f"{INDEX_NAME}{leftover}").write_bytes(b"old")
    assert titles(lib) == EXPECTED
    assert _healed(lib) == HEALED
    assert sorted(p.name for p in lib.root.iterdir() if p.name.startswith(".")) == [INDEX_NAME]
    assert LibraryIndex(lib.root).sync() == 0  # the next listing reads nothing again


def test_an_index_that_is_not_a_regular_file_is_named_and_left_alone(lib):
    from flashtrace.store.index_file import IndexUnavailable, open_index

    (lib.root / INDEX_NAME).mkdir()
    with pytest.raises(IndexUnavailable, match=f"^{INDEX_NAME} is not a regular file$"):
        open_index(lib.root / INDEX_NAME, index_module.FIELDS, index_module.COLUMNS, index_module.SCHEMA)
    assert (lib.root / INDEX_NAME).is_dir() and not any((lib.root / INDEX_NAME).iterdir())


HOLD_READ_LOCK = """
import fcntl, sys
held = open(sys.argv[1], "rb")
fcntl.lockf(held, fcntl.LOCK_SH, 510, 0x40000002)  # SQLite's shared-lock bytes, nothing else
print("locked", flush=True)
sys.stdin.readline()
"""


def test_a_damaged_index_someone_holds_a_lock_on_is_never_replaced(lib):
    from flashtrace.store.index_file import IndexUnavailable, open_index

    path = lib.root / INDEX_NAME
    path.write_bytes(b"not a database " * 200)
    holder = subprocess.Popen([sys.executable, "-c", HOLD_READ_LOCK, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)  # a reader of the old file, as SQLite locks it
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert titles(lib) == EXPECTED  # the listing answers from the files
        with pytest.raises(IndexUnavailable, match=f"^{INDEX_NAME} is damaged and in use by another process$"):
            open_index(path, index_module.FIELDS, index_module.COLUMNS, index_module.SCHEMA)
        assert path.read_bytes() == b"not a database " * 200
    finally:
        holder.kill()
        holder.wait()
    assert titles(lib) == EXPECTED
    assert _healed(lib) == HEALED  # released: replaced now


def test_an_index_that_cannot_be_opened_is_named_and_the_files_answer(lib, monkeypatch):
    from flashtrace.store import index_file

    args = (lib.root / INDEX_NAME, index_module.FIELDS, index_module.COLUMNS, index_module.SCHEMA)

    def refused(*a, **k):
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(index_file.sqlite3, "connect", refused)
    with pytest.raises(index_file.IndexUnavailable, match="^unable to open database file$"):
        index_file.open_index(*args)  # not an AttributeError of a connection never made
    monkeypatch.undo()
    monkeypatch.setattr(index_file.os, "access", lambda path, mode: False)  # a folder this user cannot write
    with pytest.raises(index_file.IndexUnavailable, match=f"^{lib.root} is read-only$"):
        index_file.open_index(*args)
    assert titles(lib) == EXPECTED and not (lib.root / INDEX_NAME).exists()
