"""A `Trace` is immutable after construction (issue 47 item 1): what is derived from it (`analyse`, the hop graph)
can be kept with the object. A changed trace is a copy, and the copy's analysis sees the change; the caches are
shared by the app's threads."""

import pickle
import threading

import pytest
from pydantic import ValidationError

from flashtrace.analysis.facts import analyse
from flashtrace.analysis.graph import HopGraph
from flashtrace.store.gallery import load_gallery_trace


@pytest.fixture
def trace():
    return load_gallery_trace("marbles")


def test_a_trace_and_its_extra_cannot_be_changed_in_place(trace):
    with pytest.raises(ValidationError, match="frozen"):
        trace.title = "other"
    with pytest.raises(TypeError, match="a Trace is immutable: make a changed copy"):
        trace.extra["gold"] = [[0, 4]]
    with pytest.raises(TypeError, match="immutable"):
        trace.extra.update(gold=[[0, 4]])
    with pytest.raises(ValidationError, match="frozen"):
        trace.settings.hops = 0


def test_edit_a_copy_and_analyse_sees_the_change(trace):
    """Repro: replacing ``trace.extra["gold"]`` left ``analyse(trace)`` answering with the old gold."""
    before = analyse(trace)
    assert before.gold is not None
    copy = trace.model_copy(update={"extra": {**trace.extra, "gold": []}})
    assert analyse(copy) is not before and analyse(copy).gold is None
    assert analyse(trace) is before and analyse(trace).gold == before.gold  # the original is untouched
    with pytest.raises(TypeError):
        copy.extra["gold"] = [[0, 4]]  # the copy is immutable too


def test_a_changed_threshold_or_copy_gets_its_own_graph_and_threads_share_one(trace):
    graphs = []
    workers = [threading.Thread(target=lambda: graphs.append(HopGraph.from_trace(trace, 0.05))) for _ in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len({id(g) for g in graphs}) == 1  # one graph per trace and threshold, whoever asked first
    assert HopGraph.from_trace(trace, 0.1) is not graphs[0]
    assert HopGraph.from_trace(trace.model_copy(update={"title": "x"}), 0.05) is not graphs[0]


def test_an_immutable_trace_still_pickles_and_saves(trace, tmp_path):
    again = pickle.loads(pickle.dumps(trace))  # Ray sends traces between processes
    assert again.to_json() == trace.to_json() and dict(again.extra) == dict(trace.extra)
    with pytest.raises(TypeError):
        again.extra["x"] = 1
