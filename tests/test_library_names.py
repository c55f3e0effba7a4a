"""The library's naming and lookup helpers a Python user calls directly: where the library lives by default,
the name the next save would get, the filters' facets and an entry's word match."""

from pathlib import Path

import platformdirs
import pytest

from flashtrace.run.tracing import attribute, prepare
from flashtrace.store.library import LIBRARY_ENV, Entry, Library, default_root
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
    lib = Library(tmp_path)
    assert lib.facets() == {"model": [], "task": []}  # no folder yet
    lib.save(small_trace, "plain")
    tasked = small_trace.model_copy(update={"extra": {"task": "needle"}})  # as batch runs of a task write it
    lib.save(tasked, "tasked")
    (tmp_path / "broken.json").write_text("{")
    assert lib.facets() == {"model": ["tiny-llama"], "task": ["needle"]}


def test_an_entry_matches_every_word_of_a_query_in_any_field():
    entry = Entry(name="apples-1", path=Path("apples-1.json"), size=1, modified=0.0, title="Fruit Sums",
                  model="tiny-llama", method="flashtrace", prompt_head="Ann has 3 apples")
    assert entry.matches("") and entry.matches("APPLES fruit") and entry.matches("llama ann flashtrace")
    assert not entry.matches("apples pears") and not entry.matches("needle")
