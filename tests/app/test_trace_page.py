"""The Trace page (AppTest): model and preset choice, the estimate, teacher-forcing and generating, the saved trace."""

import pytest

from flashtrace.store.library import Library
from flashtrace.app.ui import plain

from .conftest import literal, no_problems

TRACE = "pages/1_Trace.py"
PROMPT = "Ann has 3 apples and buys 4 more. How many apples does she have?"
RESPONSE = "She starts with 3.\nShe buys 4, so 3 + 4 = 7.\nAnswer: 7"


def _fill(at, prompt=PROMPT, response=RESPONSE, model="tiny-llama"):
    at.selectbox(key="model_choice").set_value(model).run()
    at.text_area(key="prompt").input(prompt).run()
    at.text_area(key="response").input(response).run()
    return at


def test_run_with_a_tiny_model_saves_to_the_library(open_page, library_dir):
    at = _fill(open_page(TRACE))
    no_problems(at)
    info = " ".join(i.value for i in at.info)
    assert "tokens" in info  # the token count (and the estimate where available) shows before the run
    assert "Answer: " + "`7`" in " ".join(m.value for m in at.markdown)  # detected answer span
    at.slider(key="hops").set_value(2).run()
    at.selectbox(key="stop_tokens").set_value("punctuation").run()
    at.selectbox(key="hop0").set_value("generation").run()
    at.button(key="run").click().run()
    no_problems(at)
    entries = Library(library_dir).entries()
    assert len(entries) == 1 and entries[0].readable
    saved = Library(library_dir).open(entries[0].name)
    assert saved.model.name == "tiny-llama" and saved.settings.hops == 2 and saved.steps is not None
    assert (saved.settings.stop_tokens, saved.settings.hop0) == ("punctuation", "generation")
    assert "".join(t.text for t in saved.tokens[slice(*saved.settings.target)]) == "7"
    assert any(plain(entries[0].name) in s.value for s in at.success)


def test_a_baseline_from_the_registry_runs_without_hops(open_page, library_dir):
    """Every registered method is offered; one without hops (perturbation) runs with 0 hops and no step data."""
    at = _fill(open_page(TRACE))
    assert {"flashtrace", "ifr", "attention", "rollout", "ig", "perturbation"} <= set(at.selectbox(key="method").options)
    at.slider(key="hops").set_value(2).run()
    at.selectbox(key="method").set_value("perturbation").run()
    assert any("runs without recursive hops" in c.value for c in at.caption)
    at.button(key="run").click().run()
    no_problems(at)
    saved = Library(library_dir).open(Library(library_dir).entries()[0].name)
    assert (saved.settings.method, saved.settings.hops, saved.steps) == ("perturbation", 0, None)


def test_adjusted_answer_span_and_character_target(open_page, library_dir):
    at = _fill(open_page(TRACE))
    at.radio(key="span_mode").set_value("set the answer text").run()
    at.text_input(key="answer_text").input("3 + 4 = 7").run()
    no_problems(at)
    at.radio(key="target_kind").set_value("character range").run()
    at.slider(key="target_chars").set_value((0, 18)).run()
    at.button(key="run").click().run()
    no_problems(at)
    saved = Library(library_dir).open(Library(library_dir).entries()[0].name)
    lo, hi = saved.settings.target
    assert "".join(t.text for t in saved.tokens[lo:hi]).strip() == "She starts with 3."
    assert "".join(t.text for t in saved.tokens if t.role == "answer").strip() == "3 + 4 = 7"


def test_preset_fills_the_editors(open_page):
    at = open_page(TRACE)
    at.selectbox(key="preset").set_value("vartrack").run()
    at.button(key="load_preset").click().run()
    no_problems(at)
    assert "VAR" in at.text_area(key="prompt").value and "Answer:" in at.text_area(key="response").value


def test_bad_model_shows_an_error_and_saves_nothing(open_page, library_dir, tmp_path):
    at = _fill(open_page(TRACE), model="Other: Hugging Face id or local folder")
    at.text_input(key="model_other").input(str(tmp_path / "no-such-model")).run()
    at.button(key="run").click().run()
    assert not at.exception
    assert any("Trace failed" in e.value for e in at.error)
    assert Library(library_dir).entries() == []


def test_run_is_disabled_without_a_response(open_page):
    at = open_page(TRACE)
    at.text_area(key="prompt").input(PROMPT).run()
    assert at.button(key="run").disabled


def test_generate_fills_the_response_then_it_can_be_traced(open_page, library_dir):
    at = open_page(TRACE)
    at.selectbox(key="model_choice").set_value("tiny-llama").run()
    at.radio(key="mode").set_value("Generate with the model").run()
    at.text_area(key="prompt").input("Tom has 3 cats and 2 dogs. How many pets?").run()
    at.slider(key="max_new").set_value(16).run()
    at.button(key="generate").click().run()
    no_problems(at)
    assert at.text_area(key="response").value.strip()
    assert "Answer:" in at.text_area(key="prompt").value  # the reasoning instruction the model saw is kept
    at.button(key="run").click().run()
    no_problems(at)
    assert len(Library(library_dir).entries()) == 1


def test_a_run_that_would_not_fit_is_refused_before_it_starts(open_page, library_dir, monkeypatch):
    from flashtrace.engine import estimate

    monkeypatch.setattr(estimate, "available_bytes", lambda: 64 * 2**10)  # less than even a short run adds
    at = _fill(open_page(TRACE))
    assert not at.exception
    assert any("Cannot run" in e.value and "would fit" in e.value for e in at.error)
    assert at.button(key="run").disabled
    assert Library(library_dir).entries() == []


def test_a_response_without_an_answer_line_shows_that_the_answer_is_a_guess(open_page):
    at = _fill(open_page(TRACE), response="She starts with 3.\nShe buys 4, so 3 + 4")
    [warning] = [w.value for w in at.warning if "guess" in w.value]
    assert "'She buys 4, so 3 + 4'" in literal(warning) and "no answer line" in literal(warning)
    at.text_area(key="response").input(RESPONSE).run()
    assert not [w for w in at.warning if "guess" in w.value]


def test_the_default_target_is_the_answers_value_and_it_is_named(open_page, library_dir):
    at = _fill(open_page(TRACE), prompt="Tom has 12 marbles. He loses 4. How many marbles does Tom have now?",
               response="12 - 4 = 8.\nAnswer: Tom has 8 marbles now.")
    assert at.radio(key="target_kind").value == "value"
    assert "Explaining: `8`" in [m.value for m in at.markdown]
    at.button(key="run").click().run()
    no_problems(at)
    [entry] = Library(library_dir).entries()
    tr = Library(library_dir).open(entry.name)
    assert "".join(t.text for t in tr.tokens[slice(*tr.settings.target)]).strip() == "8"


def test_an_answer_that_is_only_its_value_keeps_the_answer_as_the_target(open_page, library_dir):
    at = _fill(open_page(TRACE), prompt="Tom has 12 marbles. He loses 4. How many marbles does Tom have now?",
               response="12 - 4 = 8.\nAnswer: 8")
    at.button(key="run").click().run()
    no_problems(at)
    [entry] = Library(library_dir).entries()
    tr = Library(library_dir).open(entry.name)
    assert tuple(tr.settings.target) == tuple(tr.spans.answer)  # the value is the whole answer: nothing narrowed
    assert "".join(t.text for t in tr.tokens[slice(*tr.settings.target)]).strip() == "8"


def test_a_trace_made_with_the_page_defaults_explains_the_answer_at_hop_0_as_the_api_does(open_page, library_dir):
    """Issue 46's decision: the Trace page's hop-0 span is the API's (`answer`), with the API's depth."""
    import inspect

    from flashtrace.run.tracing import attribute

    at = _fill(open_page(TRACE))
    assert at.selectbox(key="hop0").value == inspect.signature(attribute).parameters["hop0"].default == "answer"
    at.button(key="run").click().run()
    no_problems(at)
    saved = Library(library_dir).open(Library(library_dir).entries()[0].name)
    assert saved.settings.hop0 == "answer"
