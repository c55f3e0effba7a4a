"""Hostile and broken trace files: the loader either returns a valid Trace or raises its own error."""

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flashtrace import Trace, TraceValidationError
from flashtrace.run.tracing import attribute, prepare
from tests.trace_checks import assert_promised

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=30,
)


@pytest.fixture(scope="module")
def valid_json(request):
    from tests.conftest import _load

    prepared = prepare(_load("tiny-llama"), "Ann has 3 balls. Ben has 4.", "3 + 4 = 7.\nAnswer: 7")
    return attribute(prepared, hops=1).to_json()


def _load_or_validation_error(text):
    try:
        trace = Trace.from_json(text)
    except TraceValidationError as exc:
        message = str(exc)  # what the CLI and the app show: one short line that names the problem
        assert message.strip() and "\n" not in message and len(message) <= 600, message
        assert "Traceback" not in message and "pydantic.dev" not in message, message
        return None
    assert isinstance(trace, Trace)
    return trace


@settings(max_examples=200, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(value=json_values)
def test_random_json_never_crashes_the_loader(value):
    """No random JSON value is a trace (it lacks the required fields): each is refused with the loader's error."""
    assert _load_or_validation_error(json.dumps(value)) is None


@settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_traces_load_or_fail_cleanly(valid_json, data):
    doc = json.loads(valid_json)
    paths = []

    def walk(node, path):
        paths.append(path)
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, path + [k])
        elif isinstance(node, list):
            for i, v in enumerate(node[:3]):
                walk(v, path + [i])

    walk(doc, [])
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths[1:]))
        parent = doc
        try:
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]] = data.draw(json_values)
        except (KeyError, IndexError, TypeError):
            continue
    trace = _load_or_validation_error(json.dumps(doc))
    if trace is not None:  # accepted: it is a trace every view can rely on, and it saves as it loaded
        assert_promised(trace)
        assert Trace.from_json(trace.to_json()) == trace


@pytest.mark.parametrize("path, value", [
    (["scores", "final", 0], -1.0), (["scores", "final"], []), (["hops", 0, "contribution", 0], 1e6),
    (["hops", 0, "k"], 3), (["settings", "target"], [0, 1]), (["settings", "hops"], -1), (["tokens", 0, "role"], "x"),
    (["scores", "prompt", 0], 5.0), (["schema_version"], 99), (["hops"], []), (["spans", "answer"], [0, 10**6]),
])
def test_each_broken_invariant_is_refused(valid_json, path, value):
    """One field broken at a time: the loader names a problem instead of returning a wrong trace."""
    doc = json.loads(valid_json)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    with pytest.raises(TraceValidationError):
        Trace.from_json(json.dumps(doc))


@settings(max_examples=60, deadline=2000)
@given(text=st.text(max_size=200) | st.binary(max_size=200))
def test_garbage_bytes_are_rejected(text):
    with pytest.raises(TraceValidationError):
        Trace.from_json(text)


def test_deeply_nested_json_is_rejected_quickly():
    with pytest.raises(TraceValidationError):
        Trace.from_json("[" * 100_000 + "]" * 100_000)


def test_a_failed_save_keeps_the_previous_file(valid_json, tmp_path, monkeypatch):
    trace = Trace.from_json(valid_json)
    path = trace.save(tmp_path / "trace.json")
    before = path.read_bytes()
    changed = trace.model_copy(update={"title": "a new title"})

    def crash(*args, **kwargs):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated"):
        changed.save(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace.json"]  # no temporary file left behind
