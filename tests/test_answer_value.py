"""The answer's value: when the answer line restates the question ("Tom has 15 marbles now."), the default target
is the value in it ("15"), with the whole answer line one option away; an answer that is only its value is its own
target, exactly as before; the trace records the value's tokens and the Story names both."""

import pytest

import flashtrace
from flashtrace.analysis.story import story_panels
from flashtrace.cli import main
from flashtrace.engine.inputs import answer_value, asked_text, detect_spans
from flashtrace.run.tracing import attribute, prepare

MARBLES = "Tom has 12 marbles. He loses 4 and then finds 7 more. How many marbles does Tom have now?"
REASONED = "12 - 4 = 8.\n8 + 7 = 15.\nAnswer: Tom has 15 marbles now."


def _value(response: str, prompt: str) -> str | None:
    found = answer_value(response, detect_spans(response).answer, prompt)
    return response[found[0]:found[1]] if found else None


@pytest.mark.parametrize(("response", "prompt", "value"), [
    ("Answer: Tom has 15 marbles now.", MARBLES, "15"),
    ("Answer: 12 + 7 - 4 = 15", "What is 12 + 7 - 4?", "15"),  # the last number, not one the question holds
    ("Answer: The capital of France is Paris.", "What is the capital of France?", "Paris"),
    ("Answer: 7 balls", "How many balls do Ann and Ben have?", "7"),
    ("Answer: Alice lives in Rome, which is in Italy.",
     "Alice lives in Rome. Rome is in Italy. In which country does Alice live?", "Rome, which is in Italy"),
])
def test_a_restating_answer_line_gives_the_value_it_carries(response, prompt, value):
    assert _value(response, prompt) == value


@pytest.mark.parametrize("response", ["Answer: 7", "We add.\n\\boxed{15}", "Answer: Paris", "Answer: France"])
def test_an_answer_that_is_only_its_value_has_no_separate_value(response):
    assert _value(response, "What is the capital of France? How many?") is None


def test_the_question_is_what_the_prompt_asks_not_the_passage_before_it():
    assert asked_text("Rome is in Italy. Alice lives in Rome.\nWhere does Alice live?") == "Where does Alice live?"
    assert asked_text("Summarise this.\nThe list: a, b") == "The list: a, b"  # no question: the last line


def test_the_default_target_is_the_value_and_the_whole_line_is_one_option_away(tiny_llama):
    prepared = prepare(tiny_llama, MARBLES, REASONED)
    value, whole = attribute(prepared, hops=1), attribute(prepared, target="answer", hops=1)
    text = lambda tr: "".join(t.text for t in tr.tokens[slice(*tr.settings.target)]).strip()  # noqa: E731
    assert text(value) == "15" and text(whole) == "Tom has 15 marbles now."
    assert tuple(value.spans.value) == tuple(value.settings.target)
    assert value.spans.answer[0] <= value.spans.value[0] and value.spans.value[1] <= value.spans.answer[1]
    caption = story_panels(value)[0].caption
    assert "answered “Tom has 15 marbles now.”" in caption and "value in that answer, “15”" in caption
    assert "value in that answer" not in story_panels(whole)[0].caption


def test_a_bare_answer_is_traced_exactly_as_the_answer_target(tiny_llama):
    prepared = prepare(tiny_llama, MARBLES, "12 - 4 = 8.\n8 + 7 = 15.\nAnswer: 15")
    value, whole = attribute(prepared, hops=1), attribute(prepared, target="answer", hops=1)
    assert value.spans.value is None and value.settings.target == whole.settings.target
    assert value.scores.final == whole.scores.final


def test_a_value_outside_the_answer_is_refused_on_load(tiny_llama, tmp_path):
    import json

    tr = attribute(prepare(tiny_llama, MARBLES, REASONED), hops=1)
    data = json.loads(tr.to_json())
    data["spans"]["value"] = [0, 2]
    with pytest.raises(flashtrace.TraceValidationError, match="spans.value .* is not inside spans.answer"):
        flashtrace.Trace.from_dict(data)


def test_the_cli_explains_the_value_by_default(capsys, tmp_path):
    out = tmp_path / "t.json"
    assert main(["trace", "--model", "tiny-llama", "--prompt", MARBLES, "--response", REASONED, "--no-progress",
                 "--json", str(out)]) == 0
    tr = flashtrace.Trace.load(out)
    assert "".join(t.text for t in tr.tokens[slice(*tr.settings.target)]).strip() == "15"
