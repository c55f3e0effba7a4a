"""Compare → Methods (issue 13 item 15): fast methods by default, slow ones opt-in, one method at a time with
progress, the warm-up timed apart from every method, and cancelling keeps what finished."""

import re

import pytest
from streamlit.runtime.scriptrunner_utils.exceptions import StopException

import flashtrace
from flashtrace.app import methods as app_methods
from flashtrace.evaluate import methods as eval_methods
from flashtrace.evaluate import runner as eval_runner
from flashtrace.store.library import Library

from .conftest import literal, no_problems

COMPARE = "pages/4_Compare.py"


@pytest.fixture
def tiny_ref(library_dir):
    model = flashtrace.load_model("tiny-llama")
    trace = flashtrace.trace(model, prompt="Tom has 3 cats. Ann has 2 dogs. How many cats does Tom have?",
                             response="Tom has 3 cats.\nAnswer: 3", hops=1)
    Library(library_dir).save(trace, "tiny")
    app_methods.warm_context.clear()
    return "lib:tiny"


def _methods_text(at) -> str:
    return " ".join(literal(e.value) for e in [*at.caption, *at.markdown, *at.info])


def test_fast_methods_by_default_and_slow_ones_on_request(open_page, tiny_ref):
    at = open_page(COMPARE, trace=tiny_ref)
    picker = at.multiselect(key="methods")
    assert picker.value == list(app_methods.DEFAULT_CHOICE)
    assert not set(picker.options) & set(app_methods.SLOW_METHODS)
    at.checkbox(key="methods_slow").check().run()
    assert set(app_methods.SLOW_METHODS) <= set(at.multiselect(key="methods").options)


class _Clock:
    """A perf_counter that moves only when told: the timings below are exact, whatever the machine's load."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


def test_the_methods_say_which_stop_tokens_they_use_when_the_trace_has_others(open_page, tiny_ref):
    """The evaluation's method rows use the ``paper`` stop tokens; a trace made with the default ``punctuation``
    is told so beside them (a gallery trace, made with ``paper``, is not)."""
    text = _methods_text(open_page(COMPARE, trace=tiny_ref))
    assert "stop tokens, as in the evaluation's tables" in text and "punctuation" in text, text
    gallery = open_page(COMPARE, trace="gallery:needle")
    assert "Offer the slow methods" in " ".join(c.label for c in gallery.checkbox)  # the methods are drawn
    assert "as in the evaluation's tables" not in _methods_text(gallery)


def test_warm_up_is_timed_apart_from_each_method(open_page, tiny_ref, monkeypatch):
    real = eval_methods.EVAL_METHODS["flashtrace-k0"]
    calls = []
    clock = _Clock()
    for module in (app_methods, eval_runner):
        monkeypatch.setattr(module, "time", clock)

    def slow_first_use(ctx):  # a one-time cost on first use, as kernels and caches have
        calls.append(1)
        if len(calls) == 1:
            clock.now += 1.0
        return real(ctx)

    monkeypatch.setitem(eval_methods.EVAL_METHODS, "flashtrace-k0", slow_first_use)
    at = open_page(COMPARE, trace=tiny_ref)
    at.multiselect(key="methods").set_value(["flashtrace-k0", "attention"]).run()
    at.button(key="run_methods").click().run()
    no_problems(at)
    table = at.dataframe[-1].value
    assert list(table["method"]) == ["flashtrace-k0", "attention"]
    seconds = dict(zip(table["method"], table["attribution s"]))
    assert seconds == {"flashtrace-k0": 0.0, "attention": 0.0}  # the 1 s first-use cost is not counted against the method
    text = _methods_text(at)
    assert "Warm-up, once for this trace" in text and "first-use setup" in text
    setup = float(text.split("first-use setup ")[1].split(" s")[0])
    assert setup == 1.0 and len(calls) == 2  # charged once, to the warm-up; the method ran once more
    status = " ".join(literal(m.value) for m in at.markdown)
    assert "flashtrace-k0: " in status and "attention: " in status  # one progress line per finished method
    with pytest.raises(KeyError):  # the run is over: no Cancel button left behind
        at.button(key="cancel_methods")


def test_run_times_add_up_and_states_are_shared(open_page, tiny_ref, monkeypatch):
    from flashtrace.evaluate.deletion import DeletionScorer

    clock = _Clock()  # attribution 2 s per method, 3 s per deletion curve, the rest instantaneous
    for module in (app_methods, eval_runner):
        monkeypatch.setattr(module, "time", clock)
    for name in ("flashtrace-k0", "flashtrace-k1"):
        def timed(ctx, real=eval_methods.get_eval_method(name)):
            clock.now += 2.0
            return real(ctx)

        monkeypatch.setitem(eval_methods.EVAL_METHODS, name, timed)
    real_score = DeletionScorer.score

    def timed_score(self, masks, progress=None):
        clock.now += 3.0
        return real_score(self, masks, progress)

    monkeypatch.setattr(DeletionScorer, "score", timed_score)
    at = open_page(COMPARE, trace=tiny_ref)
    at.multiselect(key="methods").set_value(["flashtrace-k0", "flashtrace-k1"]).run()
    at.button(key="run_methods").click().run()
    no_problems(at)
    table = at.dataframe[-1].value
    assert list(table["attribution s"]) == [2.0, 2.0] and list(table["deletion curve s"]) == [3.0, 3.0]
    status = " ".join(literal(m.value) for m in at.markdown)
    runs = [int(status.split(f"{m}: ")[1].split("(")[1].split(" new")[0]) for m in ("flashtrace-k0", "flashtrace-k1")]
    assert runs[1] <= runs[0] - 2  # nothing deleted and everything deleted: scored once, by the first method
    line = next(literal(c.value) for c in at.caption if literal(c.value).startswith("Last run: "))
    assert re.findall(r"(\d+\.\d) s", line) == ["12.0", "2.0", "4.0", "6.0", "0.0"]  # wall = the parts


def test_an_error_leaves_no_running_panel_and_is_not_retried(open_page, tiny_ref, monkeypatch):
    calls = []

    def fails(key):
        calls.append(key)
        raise ValueError("no model named 'nope'")

    monkeypatch.setattr(app_methods, "warm_context", fails)
    at = open_page(COMPARE, trace=tiny_ref)
    at.button(key="run_methods").click().run()
    assert not at.exception
    assert [literal(e.value) for e in at.error] == ["Comparison failed: no model named 'nope'"]
    with pytest.raises(KeyError):
        at.button(key="cancel_methods")
    assert not [s for s in at.get("expandable") if "Running the methods" in str(s.proto)]
    at.checkbox(key="methods_slow").check().run()  # any later interaction: the failed run does not start again
    assert len(calls) == 1


def test_cancel_keeps_what_finished_and_runs_nothing_more(open_page, tiny_ref, monkeypatch):
    ran = []

    def interrupted(ctx):  # the user clicks Cancel while this method runs: Streamlit stops the script run
        ran.append("attention")
        raise StopException()

    def never(ctx):
        ran.append("ifr")
        raise AssertionError("ran after cancel")

    monkeypatch.setitem(eval_methods.EVAL_METHODS, "attention", interrupted)
    at = open_page(COMPARE, trace=tiny_ref)
    at.multiselect(key="methods").set_value(["flashtrace-k0", "attention", "ifr"]).run()
    at.button(key="run_methods").click().run()
    monkeypatch.setitem(eval_methods.EVAL_METHODS, "ifr", never)
    with pytest.raises(KeyError):  # the stopped run cleared its Cancel button
        at.button(key="cancel_methods")
    at.session_state["methods_cancelled"] = True  # what the click on Cancel that stopped the run did
    at.run()
    no_problems(at)
    assert ran == ["attention"]
    assert "Cancelled" in _methods_text(at)
    assert list(at.dataframe[-1].value["method"]) == ["flashtrace-k0"]
    with pytest.raises(KeyError):
        at.button(key="cancel_methods")


def test_cancel_during_the_warm_up_says_so(open_page, tiny_ref, monkeypatch):
    def interrupted(key):  # Cancel clicked while the model loads and the trace is recorded
        raise StopException()

    monkeypatch.setattr(app_methods, "warm_context", interrupted)
    at = open_page(COMPARE, trace=tiny_ref)
    at.button(key="run_methods").click().run()
    with pytest.raises(KeyError):  # the stopped run cleared its Cancel button
        at.button(key="cancel_methods")
    at.session_state["methods_cancelled"] = True  # what the click on Cancel that stopped the run did
    at.run()
    no_problems(at)
    assert "Cancelled. Run the comparison again for the rest." in _methods_text(at)
    assert not any("RISE ↓" in d.value.columns for d in at.dataframe)  # nothing finished, no method table


def test_an_estimate_before_the_run_and_the_time_left_during_it(open_page, tiny_ref):
    at = open_page(COMPARE, trace=tiny_ref)
    text = _methods_text(at)
    assert f"for {len(app_methods.DEFAULT_CHOICE):d} method(s) on" in text and "with the warm-up" in text
    at.multiselect(key="methods").set_value(["attention"]).run()
    at.button(key="run_methods").click().run()
    no_problems(at)
    assert "Estimated" not in _methods_text(at)  # nothing left to run
    at.multiselect(key="methods").set_value(["attention", "ifr"]).run()
    text = _methods_text(at)
    assert "for 1 method(s)" in text and "with the warm-up" not in text  # warm now: only the method's cost


def test_live_progress_draws_the_time_left():
    from flashtrace.evaluate.estimate import Countdown

    class Bar:
        def __init__(self):
            self.drawn = []

        def progress(self, value, text):
            self.drawn.append((value, text))

    bar = Bar()
    live = app_methods.LiveProgress(bar, 1, 2, (Countdown(10.0), 0.0, 5.0, (1.0, 4.0)), every_s=0.0)
    live("ifr", "attribution", 0, 1)
    live("ifr", "deletion", 5, 10)
    live("ifr", "deletion", 10, 10)
    assert [round(v, 2) for v, _ in bar.drawn] == [0.55, 0.78, 1.0]
    assert all(t.startswith("ifr (2 of 2): ") and t.endswith(" left") for _, t in bar.drawn)
    assert "deletion curve 50%" in bar.drawn[1][1]


def test_deletion_scoring_precision_is_offered_named_and_kept_apart(open_page, tiny_ref, monkeypatch):
    import torch

    from flashtrace.app.state import TraceRef
    from flashtrace.engine.attribution.baselines import target_logprob
    from flashtrace.engine.models import scoring

    monkeypatch.setattr(scoring, "_cpu_bf16", lambda: True)  # a processor with bfloat16 arithmetic
    at = open_page(COMPARE, trace=tiny_ref)
    radio = at.radio(key="methods_precision")
    assert radio.options == ["bfloat16 (faster)", "float32 (exact)"] and radio.value == "bfloat16"
    at.multiselect(key="methods").set_value(["attention"]).run()
    at.button(key="run_methods").click().run()
    no_problems(at)
    fast = at.session_state["methods_results"]["attention"]
    assert fast["_record"]["score_dtype"] == "bfloat16" and "scored with bfloat16 matrix products" in _methods_text(at)
    at.radio(key="methods_precision").set_value("float32").run()
    assert at.session_state["methods_results"] == {}  # curves of one precision at a time
    at.button(key="run_methods").click().run()
    no_problems(at)
    exact = at.session_state["methods_results"]["attention"]
    assert exact["_record"]["score_dtype"] == "float32" and "scored in float32" in _methods_text(at)
    assert exact["deletion_runs"] == fast["deletion_runs"] > 0  # its own states, not the bfloat16 ones
    ctx, _ = app_methods.warm_context(app_methods.stamp(TraceRef.parse(tiny_ref)))
    nothing_deleted = target_logprob(ctx.loaded.model, ctx.ids[None], ctx.target)  # float32, independently
    assert exact["s"][0] == pytest.approx(float(nothing_deleted), abs=1e-4)
    assert fast["s"][0] != pytest.approx(float(nothing_deleted), abs=1e-4)
    assert ctx.loaded.model.dtype == torch.float32
