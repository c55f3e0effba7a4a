"""Compare → Methods (issue 13 item 15): fast methods by default, slow ones opt-in, one method at a time with
progress, the warm-up timed apart from every method, and cancelling keeps what finished."""

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
    seconds = dict(zip(table["method"], table["seconds"]))
    assert seconds == {"flashtrace-k0": 0.0, "attention": 0.0}  # the 1 s first-use cost is not counted against the method
    text = _methods_text(at)
    assert "Warm-up, once for this trace" in text and "first-use setup" in text
    setup = float(text.split("first-use setup ")[1].split(" s")[0])
    assert setup == 1.0 and len(calls) == 2  # charged once, to the warm-up; the method ran once more
    status = " ".join(literal(m.value) for m in at.markdown)
    assert "flashtrace-k0: " in status and "attention: " in status  # one progress line per finished method
    with pytest.raises(KeyError):  # the run is over: no Cancel button left behind
        at.button(key="cancel_methods")


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
    at.button(key="cancel_methods").click().run()
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
    at.button(key="cancel_methods").click().run()
    no_problems(at)
    assert "Cancelled. Run the comparison again for the rest." in _methods_text(at)
    assert not any("RISE ↓" in d.value.columns for d in at.dataframe)  # nothing finished, no method table
