import pytest

import flashtrace
from flashtrace.library import Library

from .conftest import no_problems

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


def test_rename_and_delete_with_confirmation(open_page, library_dir, tiny_trace):
    lib = Library(library_dir)
    lib.save(tiny_trace, "first")
    at = open_page(LIBRARY)
    at.selectbox(key="chosen").set_value("first").run()
    at.text_input(key="rename_to_first").input("renamed / trace")
    at.button(key="rename").click().run()
    no_problems(at)
    assert [e.name for e in lib.entries()] == ["renamed-trace"]
    assert at.selectbox(key="chosen").value == "renamed-trace"
    assert at.button(key="delete").disabled
    at.checkbox(key="confirm_delete").check().run()
    at.button(key="delete").click().run()
    assert lib.entries() == []


def test_export_buttons_offer_json_and_html(open_page, library_dir, tiny_trace):
    Library(library_dir).save(tiny_trace, "exp")
    at = open_page(LIBRARY)
    no_problems(at)
    urls = {el.proto.label: el.proto.url for el in at.get("download_button")}
    assert set(urls) == {"Export JSON", "Export HTML"}  # the served file's type follows the mime type
    assert urls["Export JSON"].endswith(".json") and urls["Export HTML"].endswith(".html")
