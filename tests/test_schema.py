"""The `Trace` record: old versions migrate with the settings they assumed named, a refused file says why in
the user's words, and the array and text views read the stored numbers."""

import json

import numpy as np
import pytest

from flashtrace.analysis import schema
from flashtrace.analysis.schema import Trace, TraceValidationError, normalised
from flashtrace.base.errors import EXIT_USAGE

from .test_facts import HOP0, HOP1, A, P, S
from .trace_factory import make_trace, vector


@pytest.fixture
def trace():
    return make_trace(P, S, A, [vector(P, S, A, HOP0), vector(P, S, A, HOP1)])


def data_of(trace) -> dict:
    return json.loads(trace.to_json())


def test_a_version_1_trace_names_the_defaults_it_assumed(trace):
    old = data_of(trace)
    old["schema_version"] = 1
    old["settings"]["stop_tokens"] = "default"
    del old["settings"]["hop0"], old["settings"]["assumed"]
    loaded = Trace.from_dict(old)
    assert loaded.schema_version == 3 and (loaded.settings.stop_tokens, loaded.settings.hop0) == ("punctuation", "answer")
    assert loaded.settings.describe_assumed() == ("written before these settings were recorded; the defaults then "
                                                  "were stop_tokens = punctuation, hop0 = answer")
    del old["settings"]["stop_tokens"]
    old["settings"]["hop0"] = "generation"
    loaded = Trace.from_dict(old)
    assert loaded.settings.assumed == ["stop_tokens"] and loaded.settings.hop0 == "generation"
    assert loaded.settings.describe_assumed().endswith("the defaults then were stop_tokens = punctuation")
    old["settings"]["stop_tokens"] = "none"
    loaded = Trace.from_dict(old)
    assert loaded.settings.assumed == [] and loaded.settings.describe_assumed() == ""
    assert loaded.settings.stop_tokens == "none"


def test_a_version_2_trace_loads_as_version_3_without_interventions(trace):
    old = data_of(trace)
    old["schema_version"] = 2
    del old["interventions"]
    loaded = Trace.from_dict(old)
    assert loaded.schema_version == 3 and loaded.interventions is None and loaded.settings.assumed == []
    assert loaded.scores == trace.scores


@pytest.mark.parametrize("version", [0, 4, True, "3", 3.0])
def test_an_unknown_version_is_refused_with_the_versions_this_one_reads(trace, version):
    bad = {**data_of(trace), "schema_version": version}
    with pytest.raises(TraceValidationError) as err:
        Trace.from_dict(bad)
    assert f"unsupported schema_version {version!r}; this version of FlashTrace reads versions 1, 2, 3" in str(err.value)
    assert err.value.exit_code == EXIT_USAGE


@pytest.mark.parametrize("where, value", [
    (("settings", "hops"), True), (("settings", "hops"), "1"), (("settings", "hops"), 1.0),
    (("tokens", 0, "id"), False), (("tokens", 0, "start"), "0"), (("spans", "answer", 0), True),
    (("timings", "forward_s"), "1.5"), (("hops", 0, "rho"), "0.5"),
])
def test_a_boolean_is_no_integer_and_a_string_is_no_number(trace, where, value):
    """Issue 48 L7 repro: ``"hops": true``, ``"1"`` and ``schema_version: 3.0`` were accepted (coerced)."""
    data = data_of(trace)
    data["timings"]["forward_s"] = 1.0
    node = data
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    with pytest.raises(TraceValidationError, match="valid (integer|number)"):
        Trace.from_dict(data)


def test_an_integer_is_a_number_and_the_ranges_stay_json_arrays(trace):
    data = data_of(trace)
    data["timings"]["forward_s"] = 2  # a float field takes a JSON integer
    loaded = Trace.from_dict(data)
    assert loaded.timings["forward_s"] == 2.0 and json.loads(loaded.to_json())["spans"]["answer"] == data["spans"]["answer"]


def test_a_refusal_names_up_to_five_problems_and_counts_the_rest(trace):
    data = data_of(trace)
    data["model"] = {k: -1 if k.startswith("n_") or k.endswith("_size") else v for k, v in data["model"].items()}
    with pytest.raises(TraceValidationError) as err:
        Trace.from_dict(data)
    text = str(err.value)
    assert text.startswith("invalid trace: model.n_layers: Input should be greater than or equal to 0; model.n_heads: ")
    assert text.count("; ") == 4 and text.endswith(" (+1 more)")
    del data["model"]["n_params"]
    with pytest.raises(TraceValidationError) as err:
        Trace.from_dict({**data, "model": {**data["model"], "n_params": 1}})
    assert "more)" not in str(err.value) and str(err.value).count("; ") == 4
    with pytest.raises(TraceValidationError, match="^a trace must be a JSON object, got list$"):
        Trace.from_dict([data])
    with pytest.raises(TraceValidationError) as err:
        Trace.from_dict({})
    assert str(err.value) == ("invalid trace: prompt: Field required; response: Field required; model: Field required; "
                              "settings: Field required; tokens: Field required (+3 more)")
    data = data_of(trace)
    data["scores"]["final"][1] += 1  # a broken invariant: the whole trace is at fault
    with pytest.raises(TraceValidationError, match=r"^invalid trace: trace: Value error, scores.final\[1\] is 1.1"):
        Trace.from_dict(data)


def test_a_file_that_is_not_json_is_refused_in_words(trace, tmp_path):
    with pytest.raises(TraceValidationError, match=r"^not valid JSON: "):
        Trace.from_json("{")
    text = trace.to_json().replace('"rho":', '"rho": NaN, "x":', 1)
    with pytest.raises(TraceValidationError, match=r"^not valid JSON: NaN is not allowed in a trace \(numbers must be"):
        Trace.from_json(text)
    with pytest.raises(TraceValidationError, match=r"^not valid JSON: the file is not UTF-8 text \(invalid start byte "
                                                   r"at byte 1\)$"):
        Trace.from_json(b'"\xff"')
    path = tmp_path / "t.json"
    assert trace.save(path) == path and Trace.load(path).to_json() == trace.to_json()
    assert json.loads(trace.to_json(indent=2)) == data_of(trace) and "\n  " in trace.to_json(indent=2)
    with pytest.raises(TraceValidationError):
        Trace.load(tmp_path)


def test_a_file_over_the_size_limit_is_refused_before_parsing(trace, monkeypatch):
    text = trace.to_json()
    monkeypatch.setattr(schema, "MAX_FILE_BYTES", len(text) - 1)
    with pytest.raises(TraceValidationError, match=f"^trace is {len(text)} bytes; the limit is {len(text) - 1}$"):
        Trace.from_json(text)
    monkeypatch.setattr(schema, "MAX_FILE_BYTES", len(text))
    assert Trace.from_json(text).id == trace.id


def test_arrays_positions_and_the_top_prompt_tokens(trace):
    assert trace.n_tokens == 20 and trace.positions("prompt") == list(range(1, 11))
    assert trace.positions("reasoning", "answer") == list(range(11, 20)) and trace.positions("template") == [0]
    final = trace.scores_array()
    assert final.dtype == np.float64 and final.tolist() == trace.scores.final
    assert trace.scores_array("prompt").tolist() == trace.scores.prompt
    hops = trace.hop_array()
    assert hops.shape == (2, 20) and hops[1].tolist() == trace.hops[1].contribution
    assert trace.hop_array("raw")[0].tolist() == trace.hops[0].raw
    assert trace.hop_array("weights")[1].tolist() == trace.hops[1].weights
    with pytest.raises(ValueError, match="^which must be 'final' or 'prompt', got 'raw'$"):
        trace.scores_array("raw")
    with pytest.raises(ValueError, match="^field must be 'contribution', 'weights' or 'raw', got 'final'$"):
        trace.hop_array("final")
    top = trace.top_prompt_tokens(2)
    assert [i for i, _, _ in top] == [1, 2] and top[0][1:] == ("Alpha", trace.scores.prompt[1])
    facts = [f"Fact {i} here." for i in range(5)]  # 15 prompt tokens
    longer = make_trace(facts, S, A, [vector(facts, S, A, {"P0": .5, "P4": .5, "S0": .5})])
    assert len(longer.top_prompt_tokens()) == 10 and len(longer.top_prompt_tokens(11)) == 11


def test_without_registered_views_a_trace_still_prints_and_says_what_is_missing(trace, monkeypatch):
    monkeypatch.setattr(schema, "_VIEWS", {})
    assert repr(trace) == "<Trace hand-made · 20 tokens>" == str(trace)
    long = trace.model_copy(update={"model": trace.model.model_copy(update={"name": "m" * 80})})
    assert repr(long) == f"<Trace {'m' * 60} · 20 tokens>"
    with pytest.raises(RuntimeError, match=r"^no 'heatmap' view is registered for traces \(importing flashtrace "):
        trace.heatmap()
    schema.register_views(html=lambda t: "<p>trace</p>")
    assert trace._repr_html_() == "<p>trace</p>"


def test_normalised_scores_sum_to_one_over_the_positions_or_stay_zero():
    assert normalised([1.0, 2.0, 3.0, 4.0], [1, 3]) == [0.0, 2 / 6, 0.0, 4 / 6]
    assert normalised([1.0, 0.0, 0.0], [1, 2]) == [0.0, 0.0, 0.0]
    assert normalised([1.0, float("inf"), 1.0], [1, 2]) == [0.0, 0.0, 0.0]


def test_the_notebook_views_receive_the_options_asked_for(trace, monkeypatch):
    calls = {}

    def view(name):
        def draw(*args, **kwargs):
            calls[name] = (args[1:], kwargs, args[0] is trace)
            return name
        return draw

    names = ("html", "heatmap", "hop_graph", "compare_depths", "to_pandas", "show", "repr")
    monkeypatch.setattr(schema, "_VIEWS", {n: view(n) for n in names})
    assert (trace.heatmap(), calls["heatmap"]) == ("heatmap", ((None,), {}, True))
    assert (trace.heatmap(2, height=300), calls["heatmap"]) == ("heatmap", ((2,), {"height": 300}, True))
    assert (trace.hop_graph(), calls["hop_graph"]) == ("hop_graph", ((0.8, True), {}, True))
    assert (trace.hop_graph(0.5, fold=False), calls["hop_graph"]) == ("hop_graph", ((0.5, False), {}, True))
    assert (trace.compare_depths(), calls["compare_depths"]) == ("compare_depths", (("added", True), {}, True))
    assert trace.compare_depths("cumulative", False) == "compare_depths"
    assert calls["compare_depths"][0] == ("cumulative", False)
    assert (trace.to_pandas(), calls["to_pandas"]) == ("to_pandas", ((), {}, True))
    assert (trace.show(), calls["show"]) == ("show", ((10, None), {}, True))
    assert trace.show(3, console="c") == "show" and calls["show"][0] == (3, "c")
    assert (trace._repr_html_(), calls["html"]) == ("html", ((), {}, True))
    assert (repr(trace), calls["repr"]) == ("repr", ((), {}, True))


def test_each_refusal_of_a_bad_file_says_what_is_wrong_in_its_own_words(tmp_path):
    cases = {
        '"\ud800"': "not valid JSON: the file is not UTF-8 text (invalid continuation byte at byte 1)",  # lone surrogate
        b'{"a": "\xff"}': "not valid JSON: the file is not UTF-8 text (invalid start byte at byte 7)",
        "[" * 60 + "]" * 60: "the JSON is nested deeper than 48 levels",
    }
    for text, words in cases.items():
        with pytest.raises(TraceValidationError) as refused:
            Trace.from_json(text)
        assert str(refused.value) == words
    with pytest.raises(TraceValidationError) as refused:
        Trace.load(tmp_path)
    assert str(refused.value) == f"{tmp_path} is a folder, not a trace file"
    with pytest.raises(TraceValidationError) as refused:
        Trace.from_dict({})
    assert str(refused.value).startswith("invalid trace: prompt: Field required; response: Field required; ")


def test_an_unexpected_failure_while_reading_is_still_a_refusal_in_words(trace, monkeypatch):
    """The contract the CLI and the app rely on: whatever goes wrong reading a file (here the machine runs out of
    memory parsing it), the only error is `TraceValidationError`, naming what happened, at most 500 characters."""
    def out_of_memory(holder):
        raise MemoryError("cannot allocate " + "x" * 600)

    monkeypatch.setattr(schema, "_parse", out_of_memory)
    with pytest.raises(TraceValidationError) as refused:
        Trace.from_json(trace.to_json())
    message = str(refused.value)
    assert message.startswith("invalid trace (MemoryError: cannot allocate xxx") and len(message) == 500
    assert refused.value.__cause__ is None and refused.value.__suppress_context__


def test_validation_that_fails_outside_pydantic_is_a_refusal_with_its_message(trace, monkeypatch):
    """Nesting too deep for the validator, or a number it cannot convert, fails as Python's own error, not as a
    pydantic report: it is still a `TraceValidationError` carrying that error's words."""
    for error in (RecursionError("maximum recursion depth exceeded"), OverflowError("int too large to convert")):
        def fail(data, _error=error):
            raise _error

        monkeypatch.setattr(Trace, "model_validate", fail)
        with pytest.raises(TraceValidationError) as refused:
            Trace.from_dict(data_of(trace))
        assert str(refused.value) == str(error)
