"""An honest failure told truthfully (`flashtrace.analysis.failure`, the Story's failure panel, the gallery card),
on hand-made traces whose numbers are known: the wrong and the right answer, the step where they part, the
misleading sentence's share in that step and in the answer, and the edit's result, said as a fix or not."""

import pytest

from flashtrace.analysis.failure import failure_note, failure_of, failure_words
from flashtrace.analysis.facts import analyse
from flashtrace.analysis.story import STEPS, story_panels
from flashtrace.analysis.text import pct
from tests.trace_factory import make_trace, vector

PROMPT = ["A bus leaves with 30 riders.", "Then 8 get off.", "The bus has 48 seats.", "How many riders are on now?"]
STEPS_TEXT = ["30 - 8 = 22.", "Add the 48 seats.", "22 + 48 = 70."]
ANSWER = "70"
FIXED = {"name": "bus-edited", "answer": "22", "correct": True, "logprob_before": -0.1, "logprob_after": -0.3}


def _record(correct=False, edit=True, result=FIXED):
    spec = {"name": "bus", "edit": {"sentence": "The bus has 48 seats."}} if edit else {"name": "bus"}
    record = {"task": "word problem", "right_answer": "22", "correct": correct, "spec": spec}
    if result is not None:
        record["edit_result"] = result
    return {"gallery": record}


def _trace(extra, step_vectors=True):
    raws = [vector(PROMPT, STEPS_TEXT, ANSWER, {"P0": 0.2, "P1": 0.1, "P2": 0.3, "P3": 0.2, "S0": 0.1, "S1": 0.1}),
            vector(PROMPT, STEPS_TEXT, ANSWER, {"P0": 0.5, "P1": 0.2, "P2": 0.2, "P3": 0.1, "S0": 0.05})]
    steps = {"S0": vector(PROMPT, STEPS_TEXT, ANSWER, {"P0": 0.6, "P1": 0.4}),
             "S1": vector(PROMPT, STEPS_TEXT, ANSWER, {"P0": 0.1, "P1": 0.1, "P2": 0.6, "P3": 0.2, "S0": 1.0}),
             "S2": vector(PROMPT, STEPS_TEXT, ANSWER, {"P0": 0.5, "P1": 0.5, "S1": 1.0})}
    return make_trace(PROMPT, STEPS_TEXT, ANSWER, raws, step_vectors=steps if step_vectors else None, extra=extra)


def test_a_right_answer_or_a_trace_without_a_task_record_has_no_failure():
    for extra in (_record(correct=True), {}, {"gallery": {"correct": False}}):  # the last: no right answer recorded
        trace = _trace(extra)
        assert failure_of(trace, analyse(trace)) is None
        assert [p.key for p in story_panels(trace)] == list(STEPS)


def test_the_failure_names_both_answers_the_parting_step_and_the_misleading_sentences_pull():
    trace = _trace(_record())
    facts = analyse(trace)
    f = failure_of(trace, facts)
    assert (f.answer, f.right) == ("70", "22")
    assert (f.step, f.step_number, f.steps, f.clue) == ("S1", 2, 3, "48")  # S0 names neither 70 nor 48
    assert facts.pieces[f.misled].text.strip() == "The bus has 48 seats."
    # in S1's own attribution the prompt holds 0.1 + 0.1 + 0.6 + 0.2 = 1.0: the seats hold 60 %, first of the
    # three context sentences (the question apart)
    assert f.in_step.share == pytest.approx(0.6) and (f.in_step.rank, f.in_step.of) == (1, 3)
    assert f.in_answer.share == pytest.approx(facts.final.shares[f.misled])
    assert (f.edited, f.answer_after, f.fixed) == ("bus-edited", "22", True)


def test_the_story_tells_the_failure_before_the_check_and_calls_a_proven_fix_a_fix():
    trace = _trace(_record())
    panels = story_panels(trace)
    assert [p.key for p in panels] == ["question", "direct", "hops", "evidence", "failure", "check"]
    caption = panels[4].caption
    assert "The model answered “70”; the right answer is “22”." in caption
    assert "at step 2 of 3, the first step that names “48”, a number only the suspected sentence holds" in caption
    assert f"The sentence that misled it is “The bus has 48 seats.”: it holds {pct(0.6)} of that step's prompt" in caption
    assert "it now answers “22”, the right answer (the edited trace, “bus-edited”)" in caption
    assert panels[4].data["suspect"].text.strip() == "The bus has 48 seats."
    assert [r.text.strip() for r in panels[4].data["sentences"]][0] == "The bus has 48 seats."


def test_an_edit_that_does_not_fix_the_answer_is_said_not_to():
    trace = _trace(_record(result={**FIXED, "answer": "26", "correct": False}))
    f = failure_of(trace, analyse(trace))
    words = failure_words(analyse(trace), f)
    assert "suspected of misleading it" in words and "does not fix it: the model then answers “26”" in words
    assert "the right answer" not in words.split("does not fix it")[1]
    assert failure_note(analyse(trace), f).endswith("makes it answer “26”, still wrong.")


def test_an_edited_version_still_wrong_says_which_sentence_is_gone_and_that_it_did_not_fix_it():
    prompt = [p for p in PROMPT if "seats" not in p]  # the edit took the seats out; the model is still wrong
    raws = [vector(prompt, STEPS_TEXT, "26", {"P0": 0.4, "P1": 0.3, "P2": 0.2, "S0": 0.1})] * 2
    extra = {**_record(result=None), "edited_from": {"name": "bus", "edit": {"sentence": "The bus has 48 seats."}}}
    trace = make_trace(prompt, STEPS_TEXT, "26", raws, extra=extra)
    f = failure_of(trace, analyse(trace))
    assert (f.misled, f.edit_of, f.edited_sentence) == (None, "bus", "The bus has 48 seats.")
    assert failure_words(analyse(trace), f).endswith(
        "This is the edited version of “bus”: the sentence suspected of misleading it, “The bus has 48 seats.”, is "
        "gone, and the model is still wrong: removing it did not fix the answer.")


def test_a_failure_whose_edit_was_not_run_or_recorded_says_so():
    trace = _trace(_record(result=None))
    assert "has not been run" in failure_words(analyse(trace), failure_of(trace, analyse(trace)))
    trace = _trace(_record(edit=False))
    assert failure_words(analyse(trace), failure_of(trace, analyse(trace))).endswith(
        "The task records no sentence that misled it.")


def test_without_step_vectors_the_share_is_the_answers_only():
    trace = _trace(_record(), step_vectors=False)
    f = failure_of(trace, analyse(trace))
    assert f.in_step is None and f.in_answer is not None
    assert "that step's" not in failure_words(analyse(trace), f)


def test_the_card_note_gives_the_wrong_answer_the_right_one_and_the_edits_result():
    trace = _trace(_record())
    assert failure_note(analyse(trace), failure_of(trace, analyse(trace))) == (
        "Answered “70”; the right answer is “22”. Removing “The bus has 48 seats.” makes it answer “22”, the right "
        "answer.")
