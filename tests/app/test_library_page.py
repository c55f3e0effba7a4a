"""The Library page (AppTest): listing, search, filters, collections, rename, delete and unreadable files."""

import json

import pytest

import flashtrace
from flashtrace.store.gallery import load_gallery_trace
from flashtrace.store.library import Library
from flashtrace.analysis.schema import Trace

from .conftest import literal, no_problems

LIBRARY = "pages/5_Library.py"


@pytest.fixture(scope="module")
def tiny_trace():
    model = flashtrace.load_model("tiny-llama")
    return flashtrace.trace(model, prompt="Ann has 3 apples and buys 4. How many?", response="3 + 4 = 7.\nAnswer: 7")


def test_empty_library(open_page):
    at = open_page(LIBRARY)
    no_problems(at)
    assert any("empty" in i.value for i in at.info)


def test_lists_searches_and_flags_unreadable_files(open_page, library_dir, tiny_trace):
    lib = Library(library_dir)
    lib.save(tiny_trace, "apples")
    lib.save(tiny_trace.model_copy(update={"title": "Pears"}), "pears")
    (library_dir / "broken.json").write_text("{oops")
    at = open_page(LIBRARY)
    assert not at.exception
    assert set(at.dataframe[0].value["name"]) == {"apples", "pears", "broken"}
    assert any("broken" in w.value and "unreadable" in w.value for w in at.warning)
    at.text_input(key="search").input("pears").run()
    assert list(at.dataframe[0].value["name"]) == ["pears"]


def _chosen(at):
    return next(sb for sb in at.selectbox if sb.key and sb.key.startswith("chosen_"))


def _texts(at) -> str:
    return " ".join(literal(e.value) for e in [*at.success, *at.info, *at.warning])


def test_rename_tells_the_final_name_and_delete_moves_on(open_page, library_dir, tiny_trace):
    lib = Library(library_dir)
    for name in ("second", "first"):
        lib.save(tiny_trace, name)
    at = open_page(LIBRARY)
    _chosen(at).set_value("first").run()
    at.text_input(key="rename_to_first").input("renamed / trace")
    at.button(key="rename").click().run()
    no_problems(at)
    assert sorted(e.name for e in lib.entries()) == ["renamed-trace", "second"]
    assert _chosen(at).value == "renamed-trace"
    notice = _texts(at)
    assert "Renamed `first` to `renamed-trace`" in notice and "became `renamed-trace`" in notice, notice
    delete_box = next(c for c in at.checkbox if c.key.startswith("confirm_delete_renamed-trace"))
    assert at.button(key="delete").disabled
    delete_box.check().run()
    at.button(key="delete").click().run()
    no_problems(at)
    assert [e.name for e in lib.entries()] == ["second"]
    assert "Deleted `renamed-trace`" in _texts(at)
    chosen = _chosen(at)  # a fresh selectbox on the remaining trace, its delete box not ticked
    assert chosen.value == "second" and chosen.options == ["second"]
    assert at.text_input(key="rename_to_second").value == "second"
    assert not any(c.value for c in at.checkbox if c.key.startswith("confirm_delete"))
    assert at.button(key="delete").disabled


def test_a_plain_rename_says_nothing_about_adjusting(open_page, library_dir, tiny_trace):
    Library(library_dir).save(tiny_trace, "old")
    at = open_page(LIBRARY)
    at.text_input(key="rename_to_old").input("new-name")
    at.button(key="rename").click().run()
    assert "Renamed `old` to `new-name`." in _texts(at) and "became" not in _texts(at)


def test_renaming_to_the_same_name_says_nothing_changed(open_page, library_dir, tiny_trace):
    Library(library_dir).save(tiny_trace, "two-plus-two")
    at = open_page(LIBRARY)
    at.button(key="rename").click().run()  # the box holds the current name
    assert "`two-plus-two` already has that name: nothing changed." in _texts(at)
    assert "Renamed" not in _texts(at) and [e.name for e in Library(library_dir).entries()] == ["two-plus-two"]


def test_every_table_column_has_room(open_page, library_dir, tiny_trace):
    Library(library_dir).save(tiny_trace, "a-rather-long-library-name-for-the-table")
    at = open_page(LIBRARY)
    columns = json.loads(at.dataframe[0].proto.columns)
    widths = {name: col["width"] for name, col in columns.items() if name != "_index"}
    assert set(widths) == set(at.dataframe[0].value.columns)  # every column sized
    assert sum(widths.values()) <= 940  # the main column of the wide layout at 1400 px


@pytest.fixture
def downloads(monkeypatch):
    """``{key: (file_name, data)}`` of every download button drawn, with deferred data resolved."""
    from streamlit.delta_generator import DeltaGenerator

    seen = {}
    real = DeltaGenerator.download_button

    def record(self, label, data, file_name=None, *args, **kwargs):
        seen[kwargs.get("key")] = (file_name, data)
        return real(self, label, data, file_name, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "download_button", record)
    return seen


def test_export_buttons_offer_json_and_html(open_page, library_dir, tiny_trace, downloads):
    Library(library_dir).save(tiny_trace, "exp")
    at = open_page(LIBRARY)
    no_problems(at)
    file_name, data = downloads["export_json"]
    assert file_name == "exp.json" and Trace.from_json(data()).id == tiny_trace.id
    file_name, data = downloads["export_html"]
    assert file_name == "exp.html" and "<html" in data().lower()


def test_gallery_traces_export_without_importing(open_page, library_dir, gallery_items, downloads):
    at = open_page(LIBRARY)
    no_problems(at)
    at.selectbox(key="gallery_pick").set_value(gallery_items[1].name).run()
    file_name, data = downloads["gallery_json"]
    exported = Trace.from_json(data())
    assert file_name == f"{gallery_items[1].name}.json"
    assert exported.id == load_gallery_trace(gallery_items[1].name).id
    assert "<html" in downloads["gallery_html"][1]().lower()
    assert Library(library_dir).entries() == []  # nothing imported


def test_collection_pages_and_filters(open_page, library_dir, tiny_trace):
    """A batch output folder inside the library is a collection: paged 50 rows at a time, filtered by
    model and task, and its traces open in Explore as lib:COLLECTION/NAME."""
    from flashtrace.app.state import load_trace
    from flashtrace.run.bench.synthetic import synthetic_library

    Library(library_dir).save(tiny_trace, "loose")
    synthetic_library(library_dir / "batch-1", 60, tiny_trace)
    at = open_page(LIBRARY)
    assert list(at.dataframe[0].value["name"]) == ["loose"]
    at.selectbox(key="collection").select("batch-1").run()
    assert len(at.dataframe[0].value) == 50
    at.number_input(key="library_page").set_value(2).run()
    assert sorted(at.dataframe[0].value["name"]) == [f"syn-{i:06d}" for i in range(60)][:10]  # newest first: the first written are last
    at.selectbox(key="filter_task").select("multihop").run()  # page 2 no longer exists: back to 1
    names = list(at.dataframe[0].value["name"])
    assert sorted(names) == [f"syn-{i:06d}" for i in range(60) if i % 4 == 2]
    at.selectbox(key="filter_model").select("qwen3-8b").run()
    assert sorted(at.dataframe[0].value["name"]) == [f"syn-{i:06d}" for i in range(60) if i % 12 == 2]
    link = next(e for e in at.get("page_link") if "Explore" in e.proto.label)
    first = list(at.dataframe[0].value["name"])[0]
    assert link.proto.query_string == f"trace=lib%3Abatch-1%2F{first}"
    assert load_trace("lib:batch-1/syn-000002").title.startswith("synthetic 2 ")
