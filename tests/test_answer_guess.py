"""A response with no answer line is never traced silently as if its last line were the answer: the API warns
(`AnswerGuessedWarning`, naming the line and what to do), the trace records how the generation ended, the command
line prints one warning line, and the Trace page shows the warning under the detected spans."""

import warnings

import pytest

import flashtrace
from flashtrace.base.errors import AnswerGuessedWarning, FlashTraceWarning
from flashtrace.cli import main
from flashtrace.engine.inputs import answer_guess, detect_spans

PROMPT = "Tom has 3 cats and 2 dogs. How many pets?"


@pytest.fixture(scope="module")
def model():
    return flashtrace.load_model("tiny-llama")


def _guesses(call) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, [str(w.message) for w in caught if issubclass(w.category, AnswerGuessedWarning)]


@pytest.mark.parametrize("response", ["We add.\n\\boxed{5}", "We add 3 and 2.\nAnswer: 5",
                                      "<think>3 + 2</think>5 pets"])
def test_an_answer_a_rule_found_is_no_guess(response):
    assert answer_guess(detect_spans(response), response) is None


def test_the_last_line_taken_as_the_answer_is_named_with_what_to_do():
    response = "Step 1: count the cats.\nStep 2: add the dogs to"
    note = answer_guess(detect_spans(response), response)
    assert "'Step 2: add the dogs to'" in note and "no answer line" in note and "choose the target" in note
    cut = answer_guess(detect_spans(response), response, reached_limit=True)
    assert "stopped at max_new_tokens" in cut and "raise max_new_tokens" in cut
    long = "Step 1.\n" + "x" * 200
    assert "'" + "x" * 57 + "...'" in answer_guess(detect_spans(long), long)
    assert answer_guess(detect_spans("Paris"), "Paris") is None  # a one-line response is its own answer
    assert answer_guess(detect_spans("Paris"), "Paris", reached_limit=True) is not None  # unless it was cut


def test_a_generation_cut_at_max_new_tokens_warns_and_records_how_it_ended(model):
    trace, notes = _guesses(lambda: flashtrace.trace(model, PROMPT, generate=True, max_new_tokens=5, hops=1))
    assert len(notes) == 1 and "stopped at max_new_tokens" in notes[0]
    assert trace.spans.rule == "last-line"
    assert trace.extra["generation"]["stopped"] == "max_new_tokens" and trace.extra["generation"]["new_tokens"] == 5


def test_no_warning_when_the_response_has_an_answer_line_or_the_target_is_chosen(model):
    _, notes = _guesses(lambda: flashtrace.trace(model, PROMPT, "3 + 2 = 5.\nAnswer: 5", hops=1))
    assert notes == []
    _, notes = _guesses(lambda: flashtrace.trace(model, PROMPT, "3 cats.\n2 dogs make", target="response"))
    assert notes == []
    _, notes = _guesses(lambda: flashtrace.trace(model, PROMPT, "3 cats.\n2 dogs make", hops=1))
    assert len(notes) == 1 and "no answer line" in notes[0]  # teacher-forced without an answer line: still a guess


def test_a_generation_that_ends_by_itself_records_end_of_text(model, monkeypatch):
    from flashtrace.engine.models import generation

    monkeypatch.setattr(generation, "generate_response",
                        lambda loaded, ids, **kw: generation.Continuation("Answer: 5", 3, False))
    trace = flashtrace.trace(model, PROMPT, generate=True, max_new_tokens=64, hops=1)
    assert trace.extra["generation"]["stopped"] == "end of text" and trace.extra["generation"]["new_tokens"] == 3


def test_the_cli_prints_the_guess_as_one_warning_line(capsys, tmp_path):
    code = main(["trace", "--model", "tiny-llama", "--prompt", PROMPT, "--generate", "--max-new-tokens", "5",
                 "--no-progress", "--json", str(tmp_path / "t.json")])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("warning:")]
    assert code == 0 and len(lines) == 1 and "stopped at max_new_tokens" in lines[0]
    assert "AnswerGuessedWarning" not in err and "tracing.py" not in err  # no Python warning dressing


def test_flashtrace_warnings_share_one_base():
    assert issubclass(AnswerGuessedWarning, FlashTraceWarning) and issubclass(FlashTraceWarning, UserWarning)


def test_a_generation_ended_by_an_end_token_is_not_reported_as_cut(model, monkeypatch):
    from flashtrace.engine.inputs import build_sequence
    from flashtrace.engine.models import generation

    ids = build_sequence(model.tokenizer, PROMPT, "").ids
    first = generation.generate_response(model, ids, max_new_tokens=1)
    assert first.new_tokens == 1 and first.reached_limit  # one token asked, one written: cut
    greedy_first = model.tokenizer.encode(first.text, add_special_tokens=False)[0]
    monkeypatch.setattr(model.model.generation_config, "eos_token_id", [greedy_first])  # its first token now ends it
    ended = generation.generate_response(model, ids, max_new_tokens=5)
    assert ended.new_tokens == 1 and not ended.reached_limit
    ended_at_limit = generation.generate_response(model, ids, max_new_tokens=1)
    assert ended_at_limit.new_tokens == 1 and not ended_at_limit.reached_limit  # the end token came last
