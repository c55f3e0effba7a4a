"""The Library's SQLite metadata index: right answers at 1,000 traces, follows the files on disk."""

import os

import pytest

import flashtrace
from flashtrace.run.bench.synthetic import synthetic_library
from flashtrace.store.library import Library
from flashtrace.store.index import INDEX_NAME, LibraryIndex


@pytest.fixture(scope="module")
def base():
    model = flashtrace.load_model("tiny-llama")
    return flashtrace.trace(model, prompt="Ann has 3 apples.", response="Answer: 3", hops=0, title="base")


@pytest.fixture(scope="module")
def big(tmp_path_factory, base):
    folder = tmp_path_factory.mktemp("big")
    synthetic_library(folder, 1000, base)
    Library(folder).entries()  # builds the index (reads every file once)
    return folder


def test_thousand_traces_list_search_filter_sort(big):
    """What the listing, search, filter and sort return at 1,000 traces; their speed is measured by
    benchmarks/batch_scaling.py (part 2), not asserted here."""
    lib = Library(big)
    everything = lib.entries()
    found = lib.search("planets 12")
    rows, total = lib.query(model="qwen3-8b", task="needle", sort="title", limit=50, offset=50)
    page, n_tokens = lib.query(sort="tokens", limit=25)
    assert len(everything) == 1000 and all(e.readable for e in everything)
    assert {e.name for e in found} == {f"syn-{i:06d}" for i in range(1000) if i % 7 == 2 and "12" in str(i)}
    wanted = [i for i in range(1000) if i % 3 == 2 and i % 4 == 0]  # qwen3-8b and needle: 83 traces
    titles = sorted(f"synthetic {i} about" for i in wanted)
    assert total == len(wanted) == 83 and len(rows) == 33
    assert [r.title.rsplit(" ", 1)[0] for r in rows] == titles[50:]  # the second page, sorted by title
    assert all(r.model == "qwen3-8b" and r.task == "needle" and r.metrics["rise"] >= 0 for r in rows)
    assert n_tokens == 1000 and len(page) == 25


def test_index_follows_files_changed_on_disk(tmp_path, base):
    synthetic_library(tmp_path, 3, base)
    lib = Library(tmp_path)
    assert len(lib.entries()) == 3 and (tmp_path / INDEX_NAME).is_file()
    index = LibraryIndex(tmp_path)
    assert index.sync() == 0  # nothing changed: nothing re-read
    changed = base.model_copy(update={"title": "a brand new title"})
    changed.save(tmp_path / "syn-000001.json")
    os.utime(tmp_path / "syn-000001.json", ns=(1, 2_000_000_000_000_000_000))  # newest, whatever the clock
    (tmp_path / "syn-000002.json").unlink()
    (tmp_path / "broken.json").write_text("{")
    entries = {e.name: e for e in lib.entries()}
    assert set(entries) == {"syn-000000", "syn-000001", "broken"}
    assert entries["syn-000001"].title == "a brand new title" and lib.entries()[0].name == "syn-000001"
    assert entries["broken"].error and not entries["broken"].readable
    assert [e.name for e in lib.search("brand new")] == ["syn-000001"]
    (tmp_path / INDEX_NAME).write_bytes(b"this is not a database")  # a damaged index is rebuilt
    assert len(lib.entries()) == 3


def test_collections_and_facets(tmp_path, base):
    root = Library(tmp_path)
    synthetic_library(tmp_path / "batch-a", 4, base)
    (tmp_path / "empty").mkdir()
    assert root.collections() == ["batch-a"]
    coll = root.collection("batch-a")
    assert coll.facets() == {"model": ["qwen3-8b", "smollm2-135m", "tiny-llama"],
                             "task": ["arithmetic", "multihop", "needle", "vartrack"]}
    assert [e.name for e in coll.query(task="multihop")[0]] == ["syn-000002"]
    with pytest.raises(ValueError, match="invalid collection"):
        root.collection("../x")
