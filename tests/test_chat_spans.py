"""A conversation of several messages as the prompt (issue 49 item 2): ``spans.prompt`` covered only the system
message ((3, 9) where 38 tokens carried the prompt role); now it runs from the first prompt token to the last,
and ``spans.prompt_ranges`` lists each message's run. Every reader of the prompt span is checked with one."""

import json

import pytest

import flashtrace
from flashtrace.analysis.schema import Trace, TraceValidationError
from flashtrace.viz.story import evidence_html

MESSAGES = [{"role": "system", "content": "You count apples for a farm."},
            {"role": "user", "content": "Ann has 3 apples and buys 4. How many?"}]
RESPONSE = "3 + 4 = 7.\nAnswer: 7"


@pytest.fixture(scope="module")
def chat_trace():
    return flashtrace.trace(flashtrace.load_model("tiny-llama"), MESSAGES, RESPONSE, hops=1)


def test_the_prompt_span_covers_every_message_and_each_has_its_run(chat_trace):
    runs = chat_trace.spans.prompt_ranges
    assert len(runs) == 2 and chat_trace.spans.prompt == (runs[0][0], runs[-1][1])
    assert [i for lo, hi in runs for i in range(lo, hi)] == chat_trace.positions("prompt")
    texts = ["".join(chat_trace.tokens[i].text for i in range(lo, hi)) for lo, hi in runs]
    assert texts == [m["content"] for m in MESSAGES]


def test_the_runs_survive_a_save_and_an_old_trace_without_them_still_loads(chat_trace, tmp_path):
    path = chat_trace.save(tmp_path / "chat.json")
    assert Trace.load(path).spans.prompt_ranges == chat_trace.spans.prompt_ranges
    data = json.loads(path.read_text())
    del data["spans"]["prompt_ranges"]
    assert Trace.from_dict(data).spans.prompt_ranges is None


@pytest.mark.parametrize("runs", [[[15, 28], [3, 10]], [[3, 16], [15, 28]], [[0, 10]]])
def test_runs_out_of_order_overlapping_or_outside_the_prompt_are_refused(chat_trace, runs):
    data = json.loads(chat_trace.to_json())
    data["spans"]["prompt_ranges"] = runs
    with pytest.raises(TraceValidationError, match="prompt_ranges .* must be ordered, disjoint runs inside"):
        Trace.from_dict(data)


def test_the_story_shows_the_evidence_over_both_messages(chat_trace):
    html = evidence_html(chat_trace)
    assert "farm" in html and "apples" in html and "buys" in html
