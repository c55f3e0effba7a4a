"""The library's naming and lookup helpers a Python user calls directly: where the library lives by default,
the name the next save would get, the filters' facets and an entry's word match; which names open a file (one
copied in by hand does, nothing outside the folder or hidden does) and what a refused write says."""

import errno
import os
import re
import shutil
from pathlib import Path

import platformdirs
import pytest

from flashtrace.run.tracing import attribute, prepare
from flashtrace.store import library
from flashtrace.analysis.schema import TraceValidationError
from flashtrace.store.library import LIBRARY_ENV, Library, LibraryError, default_root
from tests.conftest import _load


@pytest.fixture(scope="module")
def small_trace():
    return attribute(prepare(_load("tiny-llama"), "Ann has 3 apples.", "Answer: 3"), hops=0)


def test_the_default_library_is_in_the_user_data_folder(monkeypatch):
    monkeypatch.delenv(LIBRARY_ENV, raising=False)
    assert default_root() == platformdirs.user_data_path("flashtrace") / "library"
    monkeypatch.setenv(LIBRARY_ENV, "~/my-traces")
    assert default_root() == Path("~/my-traces").expanduser()


def test_unique_name_is_the_name_the_next_save_gets(tmp_path, small_trace):
    lib = Library(tmp_path)
    assert lib.unique_name("My trace / v1") == "My-trace-v1"  # sanitised, free
    for expected in ("My-trace-v1", "My-trace-v1-2", "My-trace-v1-3"):
        assert lib.unique_name("My trace / v1") == expected == lib.save(small_trace, "My trace / v1")
    long = "x" * 200
    assert lib.save(small_trace, long) == "x" * 80 and lib.unique_name(long) == "x" * 78 + "-2"  # kept within 80


def test_facets_list_the_models_and_tasks_present(tmp_path, small_trace):
    lib = Library(tmp_path / "lib")
    assert lib.facets() == {"model": [], "task": []}  # no folder yet
    lib.save(small_trace, "plain")
    tasked = small_trace.model_copy(update={"extra": {"task": "needle"}})  # as batch runs of a task write it
    lib.save(tasked, "tasked")
    (tmp_path / "lib" / "broken.json").write_text("{")
    assert lib.facets() == {"model": ["tiny-llama"], "task": ["needle"]}


def test_a_file_copied_in_by_hand_opens_and_deletes_under_its_own_name(tmp_path, small_trace):
    lib = Library(tmp_path)
    saved = lib.path(lib.save(small_trace, "original"))
    names = ["My trace (copy)", "X-ray été"]  # spaces, brackets, an X, another script: not names a save gives
    for name in names:
        shutil.copy(saved, tmp_path / f"{name}.json")
    assert {e.name for e in lib.entries()} == {"original", *names}
    for name in names:
        assert lib.exists(name) and lib.open(name).scores.final == small_trace.scores.final
        lib.delete(name)
    assert [e.name for e in lib.entries()] == ["original"]


def test_no_name_opens_a_file_outside_the_folder_or_a_hidden_one(tmp_path, small_trace):
    root = tmp_path / "lib"
    lib = Library(root)
    saved = lib.path(lib.save(small_trace, "t"))
    (root / "sub").mkdir()
    for place in (tmp_path / "outside.json", root / "sub" / "t.json", root / ".tmp-t.json", root / ".json",
                  root / "...json", root / "sub\\t.json"):
        shutil.copy(saved, place)  # a file is there: only the name check keeps it out
    for bad in ("../outside", "sub/t", "sub\\t", ".tmp-t", "..", ""):
        with pytest.raises(LibraryError, match="invalid trace name"):
            lib.open(bad)
        with pytest.raises(LibraryError, match="invalid trace name"):
            lib.delete(bad)
    assert (tmp_path / "outside.json").is_file() and (root / ".tmp-t.json").is_file()
    with pytest.raises(LibraryError, match="invalid trace name"):  # too long for the file system: refused, no OSError
        lib.open("a trace " * 40)


def test_when_every_name_is_taken_the_save_is_refused_naming_it(tmp_path, small_trace, monkeypatch):
    monkeypatch.setattr(library, "MAX_SUFFIX", 3)
    lib = Library(tmp_path)
    assert [lib.save(small_trace, "My trace") for _ in range(3)] == ["My-trace", "My-trace-2", "My-trace-3"]
    for attempt in (lambda: lib.unique_name("My trace"), lambda: lib.save(small_trace, "My trace")):
        with pytest.raises(LibraryError, match=r"^no free name left for 'My-trace'$"):
            attempt()


@pytest.mark.parametrize(("error", "reason"), [
    (OSError(errno.ENOSPC, "No space left on device"), "No space left on device"),
    (PermissionError(), "PermissionError"),  # no text from the system: the kind of error
])
def test_a_write_the_folder_refuses_says_which_and_why(tmp_path, small_trace, monkeypatch, error, reason):
    lib = Library(tmp_path)
    lib.save(small_trace, "t")

    def refuse(*args, **kwargs):
        raise error

    monkeypatch.setattr(library, "publish_text", refuse)
    monkeypatch.setattr(library, "move_exclusive", refuse)
    monkeypatch.setattr(Path, "unlink", refuse)
    for verb, write in (("save to", lambda: lib.save(small_trace, "u")), ("rename in", lambda: lib.rename("t", "u")),
                        ("delete from", lambda: lib.delete("t"))):
        with pytest.raises(LibraryError, match=f"^cannot {verb} the library folder {re.escape(str(tmp_path))}: "
                                               f"{reason}$"):
            write()


def test_a_trace_deleted_by_someone_else_during_a_rename_is_reported_missing(tmp_path, small_trace, monkeypatch):
    lib = Library(tmp_path)
    lib.save(small_trace, "t")

    def gone(src, dst):
        raise FileNotFoundError(src)

    monkeypatch.setattr(library, "move_exclusive", gone)
    with pytest.raises(LibraryError, match=r"^no trace named 't' in the library$"):
        lib.rename("t", "u")


def test_a_listing_pages_from_the_newest_and_says_where_each_file_is(tmp_path, small_trace):
    lib = Library(tmp_path / "lib")
    assert lib.query() == ([], 0)  # no folder yet: nothing, and no matches
    for age, name in enumerate(("old", "mid", "new")):
        path = lib.path(lib.save(small_trace, name))
        os.utime(path, ns=(1_700_000_000_000_000_000 + age * 10**9,) * 2)
    page, total = lib.query(limit=2)
    assert [e.name for e in page] == ["new", "mid"] and total == 3
    assert [e.name for e in lib.query(limit=2, offset=2)[0]] == ["old"]
    for entry in page:
        assert entry.path == tmp_path / "lib" / f"{entry.name}.json"
        assert entry.modified == entry.path.stat().st_mtime_ns / 1e9  # seconds, as os.stat gives them


def test_a_missing_trace_is_named_when_opened(tmp_path):
    with pytest.raises(LibraryError, match=r"^no trace named 'gone' in the library$"):
        Library(tmp_path).open("gone")


def test_a_save_that_overwrites_replaces_the_trace_of_that_name(tmp_path, small_trace):
    lib = Library(tmp_path)
    lib.save(small_trace, "t")
    retitled = small_trace.model_copy(update={"title": "second version"})
    assert lib.save(retitled, "t", overwrite=True) == "t"
    assert [e.name for e in lib.entries()] == ["t"] and lib.open("t").title == "second version"


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_a_read_only_library_refuses_every_write_and_writes_nothing_at_all(tmp_path, small_trace):
    saved = Library(tmp_path).path(Library(tmp_path).save(small_trace, "t"))
    (tmp_path / "batch").mkdir()
    shutil.copy(saved, tmp_path / "batch" / "b.json")
    stale = tmp_path / ".tmp-left-by-a-dead-writer.json"
    stale.write_text("{")
    os.utime(stale, (1_700_000_000, 1_700_000_000))  # old and unlocked: a writable library removes it on opening
    before = _files(tmp_path)
    demo = Library(tmp_path, read_only=True)
    for done, write in (("saved", lambda: demo.save(small_trace, "u")), ("renamed", lambda: demo.rename("t", "u")),
                        ("deleted", lambda: demo.delete("t")),
                        ("imported", lambda: demo.import_json(small_trace.to_json(), "u"))):
        with pytest.raises(LibraryError, match=rf"^this library is read-only \(a read-only demo\): nothing is {done}$"):
            write()
    batch = demo.collection("batch")
    with pytest.raises(LibraryError, match="read-only"):  # its collections are read-only too
        batch.save(small_trace, "u")
    assert [e.name for e in demo.entries()] == ["t"] and [e.name for e in batch.entries()] == ["b"]
    assert demo.facets() == {"model": ["tiny-llama"], "task": []} == batch.facets()
    assert _files(tmp_path) == before  # not even the listing's index file, nor the dead writer's file
    Library(tmp_path)
    assert not stale.exists()


def test_only_sub_folders_holding_trace_files_are_collections(tmp_path):
    for folder, file in (("partial", ".tmp-1.json"), ("notes", "readme.txt"), ("batch", "t.json"), ("empty", None)):
        (tmp_path / folder).mkdir()
        if file:
            (tmp_path / folder / file).write_text("{")
    (tmp_path / "top.json").write_text("{")  # a trace file beside them is no collection
    assert Library(tmp_path).collections() == ["batch"]


def test_an_import_is_refused_above_the_size_limit_and_taken_at_it(tmp_path, small_trace, monkeypatch):
    text = small_trace.to_json()
    monkeypatch.setattr(library, "MAX_FILE_BYTES", len(text))
    lib = Library(tmp_path)
    with pytest.raises(TraceValidationError, match=rf"^file is {len(text) + 1} bytes; the limit is {len(text)}$"):
        lib.import_json(text + " ", "over")
    assert lib.import_json(text, "at") == "at" and [e.name for e in lib.entries()] == ["at"]


def test_an_exported_trace_reads_one_field_a_line(tmp_path, small_trace):
    lib = Library(tmp_path)
    lines = lib.export_json(lib.save(small_trace, "t")).decode("utf-8").splitlines()
    assert lines[0] == "{" and lines[1].startswith(' "schema_version": ') and lines[-1] == "}"


def test_an_overwriting_save_never_replaces_another_trace_under_a_cleaned_name(tmp_path):
    """Issue 48 M1: saving 'a b' with overwrite replaced the separate trace 'a-b'."""
    import shutil

    from flashtrace.store.library import Library, LibraryError
    from flashtrace.store.pairs import save_pair

    from .trace_factory import make_trace, vector

    def trace(title):
        made = make_trace(["A is one."], ["So one."], "one",
                          [vector(["A is one."], ["So one."], "one", {"P0": 0.5, "S0": 0.5})])
        return made.model_copy(update={"title": title})

    lib = Library(tmp_path)
    assert lib.save(trace("dash"), "a-b") == "a-b"
    shutil.copy(tmp_path / "a-b.json", tmp_path / "a b.json")  # a copy put in by hand, under its own name
    assert lib.save(trace("spaced"), "a b", overwrite=True) == "a b"  # replaced in place
    assert (lib.open("a b").title, lib.open("a-b").title) == ("spaced", "dash")
    (tmp_path / "a b.json").unlink()
    with pytest.raises(LibraryError, match="would be saved as 'a-b', which is another trace"):
        lib.save(trace("lost"), "a b", overwrite=True)
    assert lib.open("a-b").title == "dash"
    shutil.copy(tmp_path / "a-b.json", tmp_path / "c d.json")
    original, edited = save_pair(lib, lib.open("c d"), trace("edited"), {"edit": "x"}, "c d", original_name="c d")
    assert original == "c d" and lib.open("c d").extra["edited_versions"] == [edited]
    assert lib.open("a-b").title == "dash"
