"""Where an evaluation's reasoning comes from (issue 46): the answer checker on free text, the paper protocol
keeping only a writer's right answers, the own protocol keeping both and the summary split by them, written
responses kept and read back, and `flashtrace eval --protocol` end to end on a tiny model."""

import json

import pytest

from flashtrace.cli import main
from flashtrace.engine.models import load_model
from flashtrace.evaluate.protocols import (Written, answer_is_right, answer_text, apply_protocol, cached_responses,
                                           write_responses)
from flashtrace.evaluate.report import markdown, summarise
from flashtrace.evaluate.tasks import make_example

QUESTION = "Tom has 12 marbles and loses 4. Ann gives him 7 more. How many marbles does Tom have now?"


@pytest.mark.parametrize("response, answer, right", [
    ("12 - 4 = 8.\n8 + 7 = 15.\nAnswer: 15", "15", True),
    ("12 - 4 = 8.\n8 + 7 = 15.\nAnswer: Tom has 15 marbles now.", "15", True),  # the value, not the restated line
    ("12 - 4 = 8.\nAnswer: 8", "15", False),
    ("So the total is \\boxed{4,417}.", "4417", True),  # thousands comma
    ("Answer: 1415", "15", False),  # a number that merely contains the answer
    ("Answer: Norway.", "norway", True),  # case and edge punctuation
    ("Answer: 7590156, 3148322", "7590156, 3148322", True),  # several parts, all present
    ("Answer: 7590156", "7590156, 3148322", False),  # one part missing
    ("", "15", False),  # no answer at all
])
def test_the_checker_reads_the_answer_value_of_free_text(response, answer, right):
    assert answer_is_right(response, QUESTION, answer) is right


def test_the_answer_text_is_the_value_when_the_line_restates_the_question():
    assert answer_text("Answer: Tom has 15 marbles now.", QUESTION) == "15"
    assert answer_text("", QUESTION) == ""


def _written(correct: bool, response: str = "Answer: 1") -> Written:
    return Written("P\n\nThink.", response, "writer", 64, 10, "end of text", 1.0, "1", correct)


def test_paper_keeps_only_right_answers_and_counts_the_dropped():
    examples = [(f"arithmetic-{i:04d}", make_example("arithmetic", i, length=40)) for i in range(3)]
    written = {examples[0][0]: _written(True), examples[1][0]: _written(False), examples[2][0]: _written(True)}
    applied = apply_protocol("paper", examples, written)
    assert [i for i, _ in applied.examples] == [examples[0][0], examples[2][0]]
    assert applied.record["dropped"] == [examples[1][0]] and applied.record["kept"] == 2
    assert applied.record["written"] == 3 and applied.record["right"] == 2
    kept = applied.examples[0][1]
    assert kept.response == "Answer: 1" and kept.prompt == "P\n\nThink."  # teacher-forced on the writer's text
    assert kept.gold == examples[0][1].gold and kept.answer == examples[0][1].answer  # gold and answer unchanged


def test_own_keeps_right_and_wrong_and_the_summary_splits_by_them():
    examples = [(f"arithmetic-{i:04d}", make_example("arithmetic", i, length=40)) for i in range(2)]
    applied = apply_protocol("own", examples, {examples[0][0]: _written(True), examples[1][0]: _written(False)})
    assert len(applied.examples) == 2 and applied.record["dropped"] == []
    assert [ex.meta["protocol"]["correct"] for _, ex in applied.examples] == [True, False]
    method = {"rise": 0.2, "mas": 0.3, "recovery": 0.5, "seconds": 0.1, "deletion_s": 0.1, "n": [1.0, 0.0],
              "scores": [1.0]}
    records = [{"task": "arithmetic", "meta": ex.meta, "k": 1, "n_tokens": 10, "n_prompt": 5, "n_gold": 1,
                "methods": {"flashtrace-k0": method}} for _, ex in applied.examples]
    summary = summarise(records)
    assert list(summary["tasks"]) == ["arithmetic (right)", "arithmetic (wrong)"]
    assert all(group["n"] == 1 for group in summary["tasks"].values())
    assert "### arithmetic (wrong)" in markdown(summary)


def test_templated_examples_are_left_as_they_are_and_not_split():
    examples = [("needle-0000", make_example("needle", 0, length=40))]
    applied = apply_protocol("templated", examples)
    assert applied.examples == examples and applied.record == {"name": "templated", "n": 1}
    with pytest.raises(ValueError, match="no written response"):
        apply_protocol("own", examples, {})
    with pytest.raises(ValueError, match="protocol must be one of"):
        apply_protocol("mine", examples)


def test_written_responses_are_kept_and_read_back_for_the_same_prompt_writer_and_limit(tmp_path):
    loaded = load_model("tiny-llama")
    examples = [("multihop-0000", make_example("multihop", 0, length=40))]
    first = write_responses(loaded, examples, tmp_path, "tiny-llama", 6)
    written = first["multihop-0000"]
    assert written.prompt.startswith(examples[0][1].prompt) and written.prompt.endswith("'Answer:'.")
    assert written.new_tokens == 6 and written.stopped == "max_new_tokens" and written.writer == "tiny-llama"
    assert cached_responses(examples, tmp_path, "tiny-llama", 6) == {"multihop-0000"}
    assert write_responses(None, examples, tmp_path, "tiny-llama", 6) == first  # read back: no model needed
    assert cached_responses(examples, tmp_path, "tiny-llama", 7) == set()  # another limit is another response
    assert cached_responses(examples, tmp_path, "other", 6) == set()


@pytest.mark.slow
def test_eval_own_protocol_records_the_protocol_and_targets_the_value(tmp_path, capsys):
    out = tmp_path / "ev"
    assert main(["eval", "--model", "tiny-llama", "--protocol", "own", "--task", "arithmetic", "--n", "2",
                 "--length", "40", "--write-tokens", "8", "--methods", "flashtrace-k0,flashtrace-k1", "--k", "4",
                 "--out", str(out), "--no-progress", "--no-plots"]) == 0
    settings = json.loads((out / "settings.json").read_text())
    assert settings["target"] == "value"
    assert settings["protocol"] | {"dropped": []} == {"name": "own", "writer": "tiny-llama", "max_new_tokens": 8,
                                                      "written": 2, "kept": 2, "right": 0, "dropped": []}
    record = json.loads((out / "examples" / "arithmetic-0000.json").read_text())
    written = json.loads((out / "responses" / "arithmetic-0000.json").read_text())["written"]
    assert record["response"] == written["response"] and record["meta"]["protocol"]["correct"] is False
    assert "arithmetic (wrong)" in json.loads((out / "summary.json").read_text())["tasks"]
    assert "writes 2 of 2 responses" in capsys.readouterr().err


@pytest.mark.slow
def test_eval_paper_protocol_refuses_when_the_writer_answers_nothing_right(tmp_path, capsys):
    out = tmp_path / "ev"
    assert main(["eval", "--model", "tiny-llama", "--protocol", "paper", "--writer", "tiny-gpt2", "--task", "needle",
                 "--n", "1", "--length", "40", "--write-tokens", "4", "--methods", "flashtrace-k0", "--k", "4",
                 "--out", str(out), "--no-progress", "--no-plots"]) == 2
    assert "the writer answered none of the 1 right" in capsys.readouterr().err
    assert (out / "responses" / "needle-0000.json").exists()  # kept for the next run


def test_k_zero_runs_no_deletion_curve_and_keeps_recovery(tmp_path):
    """``--k 0``: Recovery@10% from the attributions alone, no RISE or MAS and no scoring pass (a recovery run
    on a big model costs its recordings, not 20 forwards per method)."""
    out = tmp_path / "ev"
    assert main(["eval", "--model", "tiny-llama", "--task", "needle", "--n", "1", "--length", "40", "--k", "0",
                 "--methods", "flashtrace-k0,attention", "--out", str(out), "--no-progress", "--no-plots"]) == 0
    record = json.loads((out / "examples" / "needle-0000.json").read_text())
    for entry in record["methods"].values():
        assert entry["rise"] is None and entry["mas"] is None and entry["deletion_runs"] == 0 and entry["n"] == []
        assert 0.0 <= entry["recovery"] <= 1.0
    task = json.loads((out / "summary.json").read_text())["tasks"]["needle"]
    assert task["methods"]["attention"]["recovery"]["n"] == 1 and task["methods"]["attention"]["rise"]["n"] == 0
    assert task["mean_deletion_curve"] == {}
    assert main(["eval", "--model", "tiny-llama", "--task", "needle", "--k", "1", "--out", str(out)]) == 2
