"""What a library listing shows and when it reads files: the row of a trace and of a broken file, search and
sort, a trace indexed as it is written, read-only libraries (their index in memory), a listing that cannot
write the index because another process is reading it."""

import contextlib
import json
import os
import sqlite3
import threading

import pytest

from flashtrace.analysis.schema import Trace
from flashtrace.store import index as index_module
from flashtrace.store import index_file
from flashtrace.store.index import INDEX_NAME, LibraryIndex
from flashtrace.store.library import Library
from tests.bad_files import gallery_data


def _write(folder, name: str, kind: str = "free-form", **extra) -> dict:
    data = gallery_data(kind)
    data["title"] = f"Title of {name}"
    data["extra"].update(extra)
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(data), encoding="utf-8")
    return data


def _refuse_reads(monkeypatch) -> None:
    def read_meta(path):
        raise AssertionError(f"{path.name} was read again")

    monkeypatch.setattr(index_module, "read_meta", read_meta)


def test_the_row_of_a_trace_shows_its_metadata(tmp_path):
    long = _write(tmp_path, "long", "arithmetic", task="arith", metrics={"rise": 0.5})
    _write(tmp_path, "odd", task=7, metrics=[0.5])  # a task that is not text, metrics that are not a mapping
    entries = {e.name: e for e in Library(tmp_path).entries()}
    assert len(long["prompt"]) > 200
    assert entries["long"].prompt_head == long["prompt"][:200]
    assert (entries["long"].task, entries["long"].metrics, entries["long"].hops) == ("arith", {"rise": 0.5}, 3)
    assert (entries["long"].model, entries["long"].created) == (long["model"]["name"], long["created"])
    assert (entries["odd"].task, entries["odd"].metrics, entries["odd"].error) == ("", None, None)
    assert Library(tmp_path).facets() == {"model": ["smollm2-135m"], "task": ["arith"]}


def test_a_file_that_does_not_load_is_listed_empty_with_its_reason_on_one_line(tmp_path):
    data = gallery_data("free-form")
    data["zz\n  top " * 60] = 1  # an unknown field with a long name over many lines
    (tmp_path / "broken.json").write_text(json.dumps(data), encoding="utf-8")
    (entry,) = Library(tmp_path).entries()
    # the key is quoted escaped and cut (`schema._loc_part`): one short line that still names the problem
    assert entry.error.startswith("invalid trace: 'zz\\n top zz") and "\n" not in entry.error
    assert entry.error.endswith("Extra inputs are not permitted") and len(entry.error) <= 120
    assert (entry.title, entry.model, entry.task, entry.method, entry.created, entry.prompt_head) == ("",) * 6
    assert (entry.n_tokens, entry.hops, entry.metrics) == (0, 0, None)
    assert Library(tmp_path).facets() == {"model": [], "task": []}


def test_a_file_that_fails_without_a_message_is_listed_with_the_kind_of_failure(tmp_path, monkeypatch):
    _write(tmp_path, "alpha")

    def exhausted(path):  # as reading a huge file can fail: a MemoryError has no message
        raise MemoryError()

    monkeypatch.setattr(index_module.Trace, "load", exhausted)
    assert [e.error for e in Library(tmp_path).entries()] == ["MemoryError"]


def test_a_listing_skips_what_is_not_a_file_or_vanishes_and_lists_the_rest(tmp_path, monkeypatch):
    for name in ("alpha", "beta", "vanishing"):
        _write(tmp_path, name)
    (tmp_path / "folder.json").mkdir()
    lib = Library(tmp_path)
    real = os.scandir

    @contextlib.contextmanager
    def scandir(path):  # another process deletes vanishing.json while the folder is read, odd names first
        with real(path) as it:
            found = sorted(it, key=lambda e: e.name not in ("folder.json", "vanishing.json"))
        (tmp_path / "vanishing.json").unlink(missing_ok=True)
        yield iter(found)

    monkeypatch.setattr(index_module.os, "scandir", scandir)
    assert sorted(e.name for e in lib.entries()) == ["alpha", "beta"]


def test_a_search_finds_the_traces_with_every_word_in_any_case(tmp_path):
    _write(tmp_path, "alpha", task="needle")
    _write(tmp_path, "beta", "arithmetic")
    lib = Library(tmp_path)
    assert [e.name for e in lib.search("TITLE of ALPHA")] == ["alpha"]
    assert [e.name for e in lib.search("needle")] == ["alpha"]  # the task
    assert sorted(e.name for e in lib.search("title smollm2")) == ["alpha", "beta"]
    assert lib.search("xx") == [] and lib.search("alpha beta") == []
    assert [e.name for e in lib.query(model="smollm2-135m", task="needle")[0]] == ["alpha"]


def test_a_row_of_the_wrong_type_in_a_damaged_index_is_read_again_from_its_file(tmp_path):
    _write(tmp_path, "alpha", metrics={"rise": 0.25})
    _write(tmp_path, "beta")  # no metrics
    before = Library(tmp_path).entries()
    with sqlite3.connect(tmp_path / INDEX_NAME) as conn:
        conn.execute("UPDATE traces SET title = X'00', hops = 'three'")
    assert Library(tmp_path).entries() == before
    with sqlite3.connect(tmp_path / INDEX_NAME) as conn:  # and written back
        assert conn.execute("SELECT title, hops FROM traces ORDER BY name").fetchall() == [
            ("Title of alpha", 3), ("Title of beta", 3)]


def test_a_file_deleted_while_its_damaged_row_is_listed_is_shown_as_gone(tmp_path, monkeypatch):
    _write(tmp_path, "alpha")
    assert Library(tmp_path).entries()[0].readable
    with sqlite3.connect(tmp_path / INDEX_NAME) as conn:
        conn.execute("UPDATE traces SET hops = 'three', metrics = '{}' WHERE name = 'alpha'")
    sync = LibraryIndex._sync

    def sync_then_delete(self, conn):  # another process deletes the file just after the listing synced
        found = sync(self, conn)
        (tmp_path / "alpha.json").unlink()
        return found

    monkeypatch.setattr(LibraryIndex, "_sync", sync_then_delete)
    (entry,) = Library(tmp_path).entries()
    assert (entry.name, entry.error, entry.metrics, entry.readable) == ("alpha", "the file is gone", None, False)


def test_an_unknown_sort_is_refused_naming_the_sorts(tmp_path):
    _write(tmp_path, "alpha")
    with pytest.raises(ValueError, match="^sort by one of modified, name, title, model, task, tokens, hops, method, "
                                         "created, size, not 'colour'$"):
        Library(tmp_path).query(sort="colour")


def test_an_up_to_date_listing_reads_no_file(tmp_path, monkeypatch):
    _write(tmp_path, "alpha", metrics={"rise": 0.25}, task="needle")
    _write(tmp_path, "beta")
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    before = {e.name: e for e in Library(tmp_path).entries()}
    _refuse_reads(monkeypatch)
    assert {e.name: e for e in Library(tmp_path).entries()} == before
    assert Library(tmp_path).facets() == {"model": ["smollm2-135m"], "task": ["needle"]}


def test_a_trace_indexed_as_it_is_written_is_listed_as_a_fresh_read_lists_it(tmp_path, monkeypatch):
    _write(tmp_path, "alpha")
    index = LibraryIndex(tmp_path)
    assert index.sync() == 1
    data = _write(tmp_path / "spare", "beta", "arithmetic", task="arith", metrics={"rise": 0.5})
    trace = Trace.load(tmp_path / "spare" / "beta.json")
    trace.save(tmp_path / "beta.json")
    with monkeypatch.context() as patched:
        _refuse_reads(patched)
        index.add("beta", trace)  # as the batch driver does after saving it
        listed = {e.name: e for e in Library(tmp_path).entries()}
        assert [e.name for e in Library(tmp_path).search(data["prompt"].split()[0])] == ["beta"]
    (tmp_path / INDEX_NAME).unlink()
    assert {e.name: e for e in Library(tmp_path).entries()} == listed
    index.add("gone", trace)  # a file that is not there: the index is a cache, nothing fails
    assert set(listed) == {"alpha", "beta"}


def test_read_only_libraries_keep_their_own_index_in_memory_and_write_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where a stray database file would land
    _write(tmp_path / "one", "alpha")
    _write(tmp_path / "two", "beta")
    _write(tmp_path / "two", "gamma")
    one, two = Library(tmp_path / "one", read_only=True), Library(tmp_path / "two", read_only=True)
    assert [e.name for e in one.entries()] == ["alpha"]
    assert sorted(e.name for e in two.entries()) == ["beta", "gamma"]
    for lib in (one, two):  # each folder's rows were kept: nothing is read again
        assert LibraryIndex(lib.root, read_only=True).sync() == 0
    listed = []
    worker = threading.Thread(target=lambda: listed.append([e.name for e in one.entries()]))
    worker.start()
    worker.join()
    assert listed == [["alpha"]]  # the app lists from its own threads
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == [
        "one", "one/alpha.json", "two", "two/beta.json", "two/gamma.json"]


def test_a_listing_that_cannot_write_while_the_index_is_read_answers_from_the_files(tmp_path, monkeypatch):
    _write(tmp_path, "alpha")
    assert [e.name for e in Library(tmp_path).entries()] == ["alpha"]
    _write(tmp_path, "beta")  # the next listing has to write the index
    monkeypatch.setattr(index_file, "BUSY_TIMEOUT_S", 0.05)
    reader = sqlite3.connect(tmp_path / INDEX_NAME, isolation_level=None)
    try:
        reader.execute("BEGIN")
        assert reader.execute("SELECT name FROM traces").fetchall() == [("alpha",)]  # another process reading
        assert sorted(e.name for e in Library(tmp_path).entries()) == ["alpha", "beta"]
        assert reader.execute("SELECT name FROM traces").fetchall() == [("alpha",)]
        reader.execute("COMMIT")
    finally:
        reader.close()
    assert LibraryIndex(tmp_path).sync() == 1  # written now
