"""The library (`store.library`): saving, names, overwrite rules, renames, deletes and read-only folders."""

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flashtrace
from flashtrace.store.library import LIBRARY_ENV, Library, LibraryError, default_root, sanitize_name
from flashtrace.analysis.schema import TraceValidationError


@pytest.fixture(scope="module")
def a_trace():
    model = flashtrace.load_model("tiny-llama")
    return flashtrace.trace(model, prompt="Ann has 3 apples and buys 4. How many?", response="3 + 4 = 7.\nAnswer: 7",
                            hops=1, title="Apples / sums")


@pytest.mark.parametrize("raw, safe", [
    ("Apples / sums", "Apples-sums"), ("../../etc/passwd", "etc-passwd"), ("..", "trace"), ("", "trace"),
    (".hidden", "hidden"), ("café au lait", "cafe-au-lait"), ("a" * 200, "a" * 80), ("ok_name-1.v2", "ok_name-1.v2"),
    ("C:\\win\\x", "C-win-x"), ("<script>", "script"), ("con", "con_"), ("NUL.txt", "NUL_.txt"), ("COM1", "COM1_"),
    ("con_", "con_"), ("console", "console"), ("Apples - sums", "Apples-sums"), ("X-ray box", "X-ray-box"),
    ("..." + "a" * 100, "a" * 80), ("a" * 79 + "-b", "a" * 79),  # leading dots do not count; no dash left at the cut
])
def test_sanitize_name(raw, safe):
    assert sanitize_name(raw) == safe


def test_a_reserved_name_at_the_length_limit_stays_within_80_characters():
    name = sanitize_name("NUL." + "a" * 76)  # pathvalidate's added "_" made it 81
    assert len(name) == 80 and name.startswith("NUL_.")


@pytest.mark.parametrize("end, kept", [("-b", ""), (".b", ""), ("XY", "X")],
                         ids=["a dash at the cut", "a dot at the cut", "a letter at the cut"])
def test_a_reserved_name_cut_to_80_characters_ends_in_neither_a_dash_nor_a_dot(end, kept):
    """80 characters, a reserved first part: pathvalidate's added "_" pushes the last character out, and a
    dash or dot left at the end of the cut goes too; a letter stays."""
    name = sanitize_name("NUL." + "a" * 74 + end)
    assert name == "NUL_." + "a" * 74 + kept


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_title_gives_a_safe_stem_of_at_most_80_characters(title):
    name = sanitize_name(title)
    assert 1 <= len(name) <= 80
    assert re.fullmatch(r"[A-Za-z0-9._-]+", name) and not name.startswith(".")


def test_root_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(LIBRARY_ENV, str(tmp_path / "lib"))
    assert default_root() == tmp_path / "lib"
    assert Library().root == tmp_path / "lib"


def test_save_list_open_roundtrip(tmp_path, a_trace):
    lib = Library(tmp_path)
    assert lib.entries() == []
    name = lib.save(a_trace)
    assert name == "Apples-sums"
    assert lib.save(a_trace) == "Apples-sums-2"  # never overwrites by accident
    entries = lib.entries()
    assert {e.name for e in entries} == {"Apples-sums", "Apples-sums-2"}
    e = entries[0]
    assert e.readable and e.model == "tiny-llama" and e.n_tokens == a_trace.n_tokens and e.hops == 1
    assert lib.open(name).scores.final == a_trace.scores.final


def test_search_matches_all_words(tmp_path, a_trace):
    lib = Library(tmp_path)
    lib.save(a_trace, "first")
    lib.save(a_trace.model_copy(update={"title": "Pears", "prompt": "Bob sells pears."}), "second")
    assert [e.name for e in lib.search("apples")] == ["first"]
    assert [e.name for e in lib.search("pears bob")] == ["second"]
    assert {e.name for e in lib.search("tiny-llama")} == {"first", "second"}
    assert len(lib.search("  ")) == 2
    assert lib.search("nothing-like-this") == []


def test_rename_and_delete(tmp_path, a_trace):
    lib = Library(tmp_path)
    lib.save(a_trace, "one")
    lib.save(a_trace, "two")
    assert lib.rename("one", "un / new") == "un-new"
    assert not lib.exists("one") and lib.exists("un-new")
    with pytest.raises(LibraryError, match="already exists"):
        lib.rename("un-new", "two")
    with pytest.raises(LibraryError, match="no trace"):
        lib.rename("missing", "x")
    lib.delete("two")
    assert [e.name for e in lib.entries()] == ["un-new"]
    with pytest.raises(LibraryError, match=r"^no trace named 'two' in the library$"):
        lib.delete("two")


def test_paths_never_leave_the_library(tmp_path):
    lib = Library(tmp_path / "lib")
    for bad in ("../x", "a/b", "..", ".x", ""):
        with pytest.raises(LibraryError, match="invalid"):
            lib.path(bad)


def test_corrupted_files_are_listed_as_unreadable(tmp_path, a_trace):
    lib = Library(tmp_path)
    lib.save(a_trace, "good")
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "wrong.json").write_text(json.dumps({"prompt": 3}))
    (tmp_path / ".tmp-partial.json").write_text("{")
    entries = {e.name: e for e in lib.entries()}
    assert set(entries) == {"good", "broken", "wrong"}
    assert entries["good"].readable
    assert "not valid JSON" in entries["broken"].error
    assert "invalid trace" in entries["wrong"].error
    with pytest.raises(TraceValidationError):
        lib.open("broken")


def test_import_validates_and_export_roundtrips(tmp_path, a_trace):
    lib = Library(tmp_path)
    name = lib.import_json(a_trace.to_json().encode(), name="imported")
    assert name == "imported"
    again = flashtrace.Trace.from_json(lib.export_json(name))
    assert again.scores.prompt == a_trace.scores.prompt and again.id == a_trace.id
    bad = json.loads(a_trace.to_json())
    bad["scores"]["final"][0] = -1.0
    with pytest.raises(TraceValidationError, match="negative"):
        lib.import_json(json.dumps(bad))
    with pytest.raises(TraceValidationError):
        lib.import_json(b"[1, 2]")
    assert [e.name for e in lib.entries()] == ["imported"]


def test_listing_notices_changed_files(tmp_path, a_trace):
    lib = Library(tmp_path)
    lib.save(a_trace, "t")
    assert lib.entries()[0].readable
    (tmp_path / "t.json").write_text("garbage that is longer than before to change the size")
    assert not lib.entries()[0].readable
