"""The Trace page checks before it runs (issue 13 items 5, 7, 12, 14) and generates through the library,
honouring the chat-template checkbox (issue 18 item 5)."""

import dataclasses

import pytest
from streamlit.proto.Block_pb2 import Block

from flashtrace.engine import estimate as estimate_module
from flashtrace.engine.inputs import build_sequence
from flashtrace.store.library import Library
from flashtrace.analysis.limits import MAX_INPUT_CHARS
from flashtrace.engine.models import generation

from .conftest import literal, no_problems
from .test_trace_page import PROMPT, RESPONSE, TRACE, _fill


def _captions(at) -> str:
    return " ".join(c.value for c in at.caption)


def test_run_says_why_it_is_greyed_out(open_page):
    at = open_page(TRACE)
    at.selectbox(key="model_choice").set_value("tiny-llama").run()
    assert at.button(key="run").disabled
    assert "Run needs a prompt and a response." in _captions(at)
    at.text_area(key="prompt").input(PROMPT).run()
    assert "Run needs a response." in _captions(at)
    at.radio(key="mode").set_value("Generate with the model").run()
    at.text_area(key="prompt").input("").run()
    assert at.button(key="generate").disabled and "Generating needs a prompt." in _captions(at)


def test_an_empty_character_range_is_refused_before_any_forward_pass(open_page, library_dir, monkeypatch):
    from flashtrace.engine import models

    def no_forward(*args, **kwargs):
        raise AssertionError("the forward pass ran")

    monkeypatch.setattr(models, "record_forward", no_forward)
    at = _fill(open_page(TRACE))
    at.radio(key="target_kind").set_value("character range").run()
    at.slider(key="target_chars").set_value((5, 5)).run()
    no_problems(at)
    assert at.button(key="run").disabled
    assert "Run needs a non-empty character range." in _captions(at)
    assert Library(library_dir).entries() == []


def test_the_answer_after_the_last_answer_mark_is_detected(open_page):
    at = _fill(open_page(TRACE), response="4 * 8 = 32.\nThe answer is: Answer: 32")
    no_problems(at)
    assert "Answer: `32`" in [m.value for m in at.markdown]


def test_text_areas_are_bounded(open_page):
    at = open_page(TRACE)
    assert at.selectbox(key="method").value == "flashtrace"  # the default method is the product's own
    assert at.text_area(key="prompt").proto.max_chars == at.text_area(key="response").proto.max_chars == MAX_INPUT_CHARS
    assert at.text_input(key="title").proto.max_chars == 500


def test_a_sequence_longer_than_the_context_is_refused_before_running(open_page, library_dir):
    at = _fill(open_page(TRACE), prompt="one two three four five " * 1000, model="tiny-gpt2")
    errors = [literal(e.value) for e in at.error]
    assert any("Cannot run" in e and "reads at most 4,096" in e for e in errors), errors
    assert at.button(key="run").disabled
    assert Library(library_dir).entries() == []


def test_the_estimate_is_shown_as_a_range(open_page, monkeypatch):
    real = estimate_module.estimate

    def four_seconds(*args, **kwargs):
        return dataclasses.replace(real(*args, **kwargs), forward_s=1.5, attribution_s=2.5, load_s=0.0, warmup_s=0.0,
                                   steps_s=0.0, overhead_s=0.0)

    monkeypatch.setattr(estimate_module, "estimate", four_seconds)
    at = _fill(open_page(TRACE))
    info = " ".join(i.value for i in at.info)
    assert "2.0–8.0 s for" in info and "tokens" in info, info  # half to twice the 4 s predicted


def test_generate_calls_the_library_with_the_checkbox_and_one_instruction(open_page, monkeypatch):
    seen = []
    real = generation.generate_response

    def spy(loaded, ids, **kwargs):
        seen.append((loaded, ids))
        return real(loaded, ids, **kwargs)

    monkeypatch.setattr(generation, "generate_response", spy)
    at = open_page(TRACE)
    at.selectbox(key="model_choice").set_value("tiny-llama").run()
    at.checkbox(key="chat_template").uncheck().run()
    at.radio(key="mode").set_value("Generate with the model").run()
    asked = "Tom has 3 cats and 2 dogs. How many pets? Think step by step and end with 'Answer: N'."
    at.text_area(key="prompt").input(asked).run()
    at.slider(key="max_new").set_value(16).run()
    at.button(key="generate").click().run()
    no_problems(at)
    assert at.text_area(key="prompt").value == asked  # the prompt already asks: no second instruction
    loaded, ids = seen[-1]
    assert ids == build_sequence(loaded.tokenizer, asked, "", chat_template=False).ids  # no chat template
    assert ids != build_sequence(loaded.tokenizer, asked, "", chat_template=True).ids


@pytest.mark.parametrize("prompt, added", [("How many pets?", True), ("Reason step by step.", False),
                                           ("Give the final Answer: N", False)])
def test_the_reasoning_instruction_is_added_only_when_missing(prompt, added):
    class Tok:
        chat_template = "no thinking mode"

    out = generation.prompt_for_generation(Tok(), prompt, reasoning_instruction=True)
    assert (out != prompt) == added and (generation.REASONING_INSTRUCTION in out) == added


def test_a_failing_run_ends_with_an_error_status(open_page, library_dir, tmp_path):
    at = _fill(open_page(TRACE), model="Other: Hugging Face id or local folder")
    at.text_input(key="model_other").input(str(tmp_path / "no-such-model")).run()
    at.button(key="run").click().run()
    statuses = [n for n in at.main.children.values() if type(n).__name__ == "Status"]
    error = Block.Expandable.State.Value("ERROR")  # not "Tracing…" left running
    assert [(s.proto.label, s.proto.state) for s in statuses] == [("Trace failed (nothing was saved)", error)]
    assert Library(library_dir).entries() == []
