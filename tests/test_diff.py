"""An edited trace against its original (analysis.diff): tokens align where the text is unchanged, each aligned
token's difference is its share in the edited trace minus its share in the original, and the verdicts on
the log-probability and on the attribution keep a margin (a tie is called a tie)."""

import pytest

from flashtrace.analysis.diff import align_tokens, answer_text, attribution_diff, default_edit, edit_outcome, editable
from flashtrace.analysis.views import view_values

from .trace_factory import make_trace, vector

PROMPT = ["Ann has 3 apples.", "Ben has 4 pears.", "Cat sings."]
STEPS = ["Ann has 3.", "So 3."]
ANSWER = "Answer: 3"


def _pair(shares_after=None):
    original = make_trace(PROMPT, STEPS, ANSWER, [vector(PROMPT, STEPS, ANSWER, {"P0": 0.5, "P1": 0.4, "P2": 0.1, "S0": 0.2})])
    kept = [PROMPT[0], PROMPT[2]]  # the middle sentence removed
    edited = make_trace(kept, STEPS, ANSWER, [vector(kept, STEPS, ANSWER, shares_after or {"P0": 0.9, "P1": 0.1, "S0": 0.2})])
    return original, edited


def test_tokens_align_where_the_text_is_unchanged():
    original, edited = _pair()
    alignment = align_tokens(original, edited)
    removed = [original.tokens[i].text for i in alignment.removed]
    assert "".join(removed) == " Ben has 4 pears."  # exactly the removed sentence's tokens
    assert alignment.inserted == ()
    for a, b in alignment.pairs:
        assert original.tokens[a].text == edited.tokens[b].text and original.tokens[a].role == edited.tokens[b].role
    lo, hi = original.settings.target
    assert not any(lo <= a < hi for a, _ in alignment.pairs)  # the answers are left out
    assert len(alignment.pairs) == original.n_tokens - len(removed) - (hi - lo)


def test_difference_is_the_edited_share_minus_the_original_share():
    original, edited = _pair()
    diff = attribution_diff(original, edited)
    before, after = view_values(original), view_values(edited)
    for a, b in diff.alignment.pairs:
        assert diff.values[b] == pytest.approx(after[b] - before[a])
    lo, hi = edited.settings.target
    assert all(diff.values[i] is None for i in range(lo, hi))
    assert diff.top == pytest.approx(max(abs(v) for v in diff.values if v is not None))
    # the first sentence's tokens held 0.5 of the prompt and now hold 0.9: each of its 4 tokens gains 0.1
    assert diff.largest_rise[1] == pytest.approx(0.1) and "gains 10.0%" in diff.sentence


def test_a_shift_within_the_margin_is_no_change():
    original = make_trace(PROMPT, STEPS, ANSWER, [vector(PROMPT, STEPS, ANSWER, {"P0": 0.5, "P1": 0.5, "S0": 0.2})])
    edited = make_trace(PROMPT, STEPS, ANSWER, [vector(PROMPT, STEPS, ANSWER, {"P0": 0.52, "P1": 0.48, "S0": 0.2})])
    diff = attribution_diff(original, edited)
    assert diff.largest_rise is None and diff.largest_fall is None
    assert diff.sentence == ("16 tokens line up with the original; 0 were removed or changed and 0 are new (the answers "
                             "left out). No unchanged token's share moved by more than 2% of the prompt's attribution: "
                             "the attribution of the unchanged text is about the same.")


def test_inserted_text_has_no_difference():
    original = make_trace(PROMPT, STEPS, ANSWER, [vector(PROMPT, STEPS, ANSWER, {"P0": 1.0, "S0": 0.2})])
    changed = [PROMPT[0], "Ben has 5 plums.", PROMPT[2]]
    edited = make_trace(changed, STEPS, ANSWER, [vector(changed, STEPS, ANSWER, {"P0": 1.0, "S0": 0.2})])
    diff = attribution_diff(original, edited)
    new = ["".join(edited.tokens[i].text for i in diff.alignment.inserted)]
    assert new == [" 5 plums."] and all(diff.values[i] is None for i in diff.alignment.inserted)


@pytest.mark.parametrize("after, verdict", [(-3.0, "lower"), (-1.95, "tie"), (-2.05, "tie"), (-1.5, "higher")])
def test_log_probability_verdict_keeps_a_margin(after, verdict):
    outcome = edit_outcome(-2.0, after, "7")
    assert outcome.verdict == verdict and outcome.change == pytest.approx(after + 2.0)
    assert ("a tie" in outcome.sentence) == (verdict == "tie")


def test_the_new_answer_is_compared_with_the_old():
    assert edit_outcome(-1.0, -5.0, "7", "Answer: 7").same_answer is True
    changed = edit_outcome(-1.0, -5.0, "7", "Answer: 9")
    assert changed.same_answer is False and "now answers \u201cAnswer: 9\u201d instead of \u201c7\u201d" in changed.sentence
    assert edit_outcome(-1.0, -1.0, "7").same_answer is None


def test_answer_text_is_the_target_span():
    original, _ = _pair()
    assert answer_text(original) == ANSWER


def _with_target(trace, segment_id):
    """The trace with its target moved onto one segment (what a user picks as the span to explain)."""
    seg = next(s for s in trace.segments if s.id == segment_id)
    settings = trace.settings.model_copy(update={"target": (seg.start, seg.end)})
    return trace.model_copy(update={"settings": settings})


def test_the_prompt_sentences_and_reasoning_steps_are_editable_in_text_order():
    original, _ = _pair()
    assert editable(original) == {"P0": PROMPT[0], "P1": PROMPT[1], "P2": PROMPT[2], "S0": STEPS[0], "S1": STEPS[1]}


def test_what_the_target_covers_is_not_editable_and_its_neighbours_are():
    original, _ = _pair()
    on_step = _with_target(original, "S0")
    assert list(editable(on_step)) == ["P0", "P1", "P2", "S1"]  # the sentence just before and the step just after


def test_a_long_sentence_is_offered_under_a_short_label():
    long = ["Ann has three apples and a very long list of other fruit to count before lunch."]
    trace = make_trace(long, STEPS, ANSWER, [vector(long, STEPS, ANSWER, {"P0": 1.0, "S0": 0.2})])
    label = editable(trace)["P0"]
    assert label != long[0] and len(label) <= 48 and label.startswith("Ann has three")


def test_the_first_edit_offered_is_the_top_evidence_sentence():
    original, _ = _pair()
    assert default_edit(original) == "P0"
    flipped = make_trace(PROMPT, STEPS, ANSWER, [vector(PROMPT, STEPS, ANSWER, {"P0": 0.1, "P1": 0.2, "P2": 0.7, "S0": 0.2})])
    assert default_edit(flipped) == "P2"


def test_no_edit_is_offered_when_the_top_sentence_is_the_target():
    original, _ = _pair()
    assert default_edit(_with_target(original, "P0")) is None  # P0 holds the most attribution but cannot be edited


def test_the_diff_sentence_counts_the_alignment_and_names_both_largest_shifts():
    original = make_trace(PROMPT, STEPS, ANSWER, [vector(PROMPT, STEPS, ANSWER, {"P0": 0.5, "P1": 0.4, "P2": 0.1, "S0": 0.2})])
    shifted = make_trace(PROMPT, STEPS, ANSWER, [vector(PROMPT, STEPS, ANSWER, {"P0": 0.1, "P1": 0.4, "P2": 0.5, "S0": 0.2})])
    diff = attribution_diff(original, shifted)
    lo, hi = original.settings.target
    assert diff.sentence == (
        f"{original.n_tokens - (hi - lo)} tokens line up with the original; 0 were removed or changed and 0 are new "
        "(the answers left out). Largest shifts beyond the 2% margin: \u201cCat\u201d gains 20.0% of the prompt's "
        "attribution; \u201cAnn\u201d loses 10.0% of the prompt's attribution.")
    assert diff.largest_fall[1] == pytest.approx(-0.1) and diff.top == pytest.approx(0.2)
    _, edited = _pair()
    assert attribution_diff(edited, original).sentence.startswith(
        "12 tokens line up with the original; 0 were removed or changed and 4 are new (the answers left out).")


def test_the_outcome_sentence_reads_the_verdict_and_the_new_answer():
    rise = edit_outcome(-2.0, -0.5, "7", "Answer: 7")
    assert rise.sentence == ("The original answer's log-probability (teacher-forced) rises by 1.50 nats: the edit makes "
                             "the original answer more likely. The model still answers \u201c7\u201d.")
    fall = edit_outcome(-2.0, -3.25, "7", "  ")
    assert fall.sentence == ("The original answer's log-probability (teacher-forced) falls by 1.25 nats: the edit makes "
                             "the original answer less likely. The model now writes nothing.")
    tie = edit_outcome(-2.0, -2.04, "7")
    assert tie.sentence == ("The original answer's log-probability (teacher-forced) changes by -0.04 nats, within the "
                            "0.1-nat margin: a tie, about as likely as before.")


def test_a_long_new_answer_is_quoted_cut_and_an_empty_old_answer_is_never_kept():
    outcome = edit_outcome(-2.0, -2.0, "7", "x" * 400)
    quoted = outcome.sentence.split("now answers \u201c")[1].split("\u201d")[0]
    assert len(quoted) == 160 and "\u2026" in quoted
    assert edit_outcome(-2.0, -2.0, "", "anything").same_answer is False


def test_text_moved_between_prompt_and_reasoning_is_not_aligned():
    original = make_trace(["Cat sings."], ["Dog barks."], ANSWER, [vector(["Cat sings."], ["Dog barks."], ANSWER, {"P0": 1.0, "S0": 0.2})])
    swapped = make_trace(["Dog barks."], ["Cat sings."], ANSWER, [vector(["Dog barks."], ["Cat sings."], ANSWER, {"P0": 1.0, "S0": 0.2})])
    alignment = align_tokens(original, swapped)
    assert alignment.pairs == ((0, 0),)  # only the template: the same words on the other side are an edit
    assert len(alignment.removed) == 4 and len(alignment.inserted) == 4


def test_a_whitespace_token_is_named_by_its_repr_in_the_sentence():
    prompt = ["Ann  has 3."]  # the double space is a token of its own: " "
    flat_raw = vector(prompt, STEPS, ANSWER, {"P0": 1.0, "S0": 0.2})
    raised = list(flat_raw)
    raised[2] += 0.5  # the " " token
    diff = attribution_diff(make_trace(prompt, STEPS, ANSWER, [flat_raw]), make_trace(prompt, STEPS, ANSWER, [raised]))
    assert diff.largest_rise[0] == 2 and "\u201c' '\u201d gains" in diff.sentence


def test_traces_with_nothing_in_common_have_no_difference():
    original, edited = _pair()
    other = edited.model_copy(update={"tokens": [edited.tokens[0].model_copy(update={"text": "<|system|>"}),
                                                 *edited.tokens[1:]]})
    different = make_trace(["Zed."], ["Yes."], "No", [vector(["Zed."], ["Yes."], "No", {"P0": 1.0, "S0": 0.2})])
    diff = attribution_diff(different, other)
    assert diff.alignment.pairs == () and set(diff.values) == {None}
    assert diff.top == 0.0 and diff.largest_rise is None and diff.largest_fall is None


def test_a_log_probability_change_of_exactly_the_margin_is_a_tie():
    assert edit_outcome(0.0, 0.1, "7").verdict == "tie" and edit_outcome(0.0, -0.1, "7").verdict == "tie"
    outcome = edit_outcome(-2.0, -3.0, "7", "Answer: 9")
    assert (outcome.before, outcome.after, outcome.old_answer, outcome.new_answer) == (-2.0, -3.0, "7", "Answer: 9")


def test_a_long_repetitive_passage_between_two_edits_stays_aligned():
    """Over 200 tokens a matcher's popular-token heuristic would drop the repeated word; every unchanged token
    must still line up."""
    chant = " ".join(["la"] * 250)
    before, after = ["Alpha.", chant, "Omega."], ["Beta.", chant, "Zeta."]
    original = make_trace(before, STEPS, ANSWER, [vector(before, STEPS, ANSWER, {"P0": 0.5, "P1": 0.5, "S0": 0.2})])
    edited = make_trace(after, STEPS, ANSWER, [vector(after, STEPS, ANSWER, {"P0": 0.5, "P1": 0.5, "S0": 0.2})])
    alignment = align_tokens(original, edited)
    assert [original.tokens[i].text for i in alignment.removed] == ["Alpha.", " Omega."]
    assert [edited.tokens[i].text for i in alignment.inserted] == ["Beta.", " Zeta."]


def test_no_edit_is_offered_when_no_prompt_token_has_attribution():
    original, _ = _pair()
    zero = [0.0] * original.n_tokens
    silent = original.model_copy(update={
        "scores": original.scores.model_copy(update={"final": zero, "prompt": zero}),
        "hops": [h.model_copy(update={"contribution": zero}) for h in original.hops]})
    assert editable(silent) and default_edit(silent) is None
