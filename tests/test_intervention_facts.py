"""The torch-free summaries of stored interventions: step influence by removal against the hop graph's
(rank correlation, agreement with a margin) and the prompt-sentence removals."""

import json

import pytest

from flashtrace.analysis.interventions import intervention_facts, sentence_removal, step_influence, with_interventions
from flashtrace.analysis.schema import SCHEMA_VERSION, EditRecord, InterventionRecord, Trace

from .trace_factory import make_trace, vector

PROMPT = ["Ann has 3 apples.", "Ben has 4 pears.", "Cat sings."]
STEPS = ["Ann has 3.", "Ben has 4.", "So 7."]
ANSWER = "Answer: 7"


def _trace(edits, steps=STEPS, before=-1.0, graph=True, resampled=None, answer_on=None):
    args = (PROMPT, steps, ANSWER)
    raw = vector(*args, {"P0": 0.3, "P1": 0.2, "P2": 0.1, "S0": 0.2, "A": 0.2})
    step_vectors = {"A": vector(*args, {"S0": 0.5, "S1": 0.3, "S2": 0.1, "P0": 0.1}),
                    **{f"S{i}": vector(*args, {"P0" if i % 2 == 0 else "P1": 1.0}) for i in range(len(steps))}}
    if len(steps) < 3:
        step_vectors["A"] = vector(*args, {"S0": 0.5, "S1": 0.3, "P0": 0.2})
    if answer_on is not None:  # where the answer's step vector puts its attribution (by segment)
        step_vectors["A"] = vector(*args, answer_on)
    tr = make_trace(*args, [raw], step_vectors=step_vectors if graph else None, extra={"gold": [[18, 34]]})
    data = json.loads(tr.to_json())
    data["interventions"] = {"before": before, "model": "hand-made", "seed": 0, "seconds": 1.0,
                             "edits": [{"kind": k, "segments": s, "logprob": before - d} for k, s, d in edits],
                             "resampled": resampled}
    return Trace.from_dict(data)


def _resampled(n, rows):
    """A resampling record: per row (step, kept, removed, kept matches, removed matches)."""
    return {"n": n, "seed": 0, "max_new_tokens": 8, "seconds": 2.0,
            "steps": [dict(zip(("step", "kept", "removed", "kept_match", "removed_match"), row)) for row in rows]}


def _steps(*drops):
    return [("step", [f"S{i}"], d) for i, d in enumerate(drops)]


def test_agreeing_orders():
    info = step_influence(_trace(_steps(2.0, 1.0, 0.5)))
    assert info.ids == ("S0", "S1", "S2") and info.drops == pytest.approx((2.0, 1.0, 0.5))
    assert info.graph == pytest.approx((0.5, 0.3, 0.1))  # each step's share of the answer, no step-to-step edges
    assert info.spearman == pytest.approx(1.0) and info.verdict == "agree" and info.top == "same"
    assert "agree on the order" in info.sentence and "+1.00 over 3 steps" in info.sentence
    assert "both put \u201cAnn has 3.\u201d first" in info.sentence


def test_opposed_orders_and_different_top_steps():
    info = step_influence(_trace(_steps(0.2, 1.0, 3.0)))
    assert info.spearman == pytest.approx(-1.0) and info.verdict == "opposed"
    assert (info.top, info.top_drop, info.top_graph) == ("differ", "S2", "S0")
    assert "removal puts \u201cSo 7.\u201d first, the hop graph \u201cAnn has 3.\u201d" in info.sentence


def test_top_steps_within_the_margin_are_a_tie():
    info = step_influence(_trace(_steps(1.0, 1.05, 0.0)))  # S1 costs 0.05 nats more than S0: within 0.1
    assert (info.top, info.top_drop, info.top_graph) == ("tie", "S1", "S0")
    assert "a tie" in info.sentence and info.spearman == pytest.approx(0.5) and info.verdict == "agree"


def test_too_few_steps_claim_no_correlation():
    info = step_influence(_trace(_steps(1.0, 2.0), steps=STEPS[:2]))
    assert info.spearman is None and info.verdict == "too-few"
    assert info.sentence.startswith("With 2 steps no rank correlation is claimed")


def test_sentence_removals():
    tr = _trace([("top", ["P0"], 3.0), ("random", ["P2"], 0.1), ("random", ["P1"], 0.5), ("gold", ["P1"], 0.5)])
    removal = sentence_removal(tr)
    assert removal.top == ("P0", 3.0) and removal.random_drops == pytest.approx((0.1, 0.5))
    assert removal.gold == (("P1",), 0.5)
    assert removal.check.verdict == "above-draws"  # above both draws, too few draws for two deviations
    assert removal.sentence == ("Removing the top evidence sentence lowers the answer's log-probability by 3.00 "
                                "nats: it lowers it more than every random sentence, but not by two of their "
                                "standard deviations; 2 random sentences: 0.30 nats on average (0.10 to 0.50); "
                                "the gold sentence: 0.50 nats.")
    assert step_influence(tr) is None
    facts = intervention_facts(tr)
    assert facts.before == -1.0 and facts.steps is None and facts.removal == removal


def test_removals_that_move_nothing_say_removal_cannot_tell():
    # the answer of a model that restates its evidence in its reasoning: no removal moves it
    tr = _trace([("top", ["P0"], 0.001), ("random", ["P2"], 0.0), ("random", ["P1"], -0.002), ("gold", ["P1"], 0.0)])
    removal = sentence_removal(tr)
    assert removal.check.verdict == "no-effect"
    assert removal.sentence.startswith("Removing the top evidence sentence lowers the answer's log-probability by "
                                       "0.00 nats: it moves it by no more than 0.01 nats, nor does any random "
                                       "sentence: removal cannot tell here")


def test_no_interventions():
    tr = make_trace(PROMPT, STEPS, ANSWER, [vector(PROMPT, STEPS, ANSWER, {"P0": 1.0, "A": 1.0})])
    assert intervention_facts(tr) is None and step_influence(tr) is None and sentence_removal(tr) is None


def test_opposed_at_exactly_minus_the_agreement_level():
    info = step_influence(_trace(_steps(1.0, 3.0, 2.0)))
    assert info.spearman == -0.5 and info.verdict == "opposed"  # AGREE is 0.5: its negative is already opposed
    assert info.sentence.startswith("Removal and the hop graph order the steps in opposite ways (rank correlation "
                                    "-0.50 over 3 steps); ")


def test_step_removals_without_a_hop_graph():
    info = step_influence(_trace(_steps(0.5, 2.0, 1.0), graph=False))
    assert (info.verdict, info.top, info.top_drop, info.top_graph, info.spearman) == ("no-graph", "none", "S1", None,
                                                                                      None)
    assert info.graph == (0.0, 0.0, 0.0) and info.drops == (0.5, 2.0, 1.0)
    assert info.sentence == ("Removing \u201cBen has 4.\u201d lowers the answer's log-probability most; this trace "
                             "has no hop graph to compare with.")


def test_resampled_continuations_are_averaged_per_step():
    rows = [("S0", [-1.0, -2.0], [-1.5, -2.5], [True, True], [True, False]),
            ("S1", [-1.0, -1.0], [-4.0, -3.0], [True, False], [False, False])]
    info = intervention_facts(_trace(_steps(0.25), resampled=_resampled(2, rows))).resampled
    assert info.n == 2 and info.ids == ("S0", "S1") and info.labels == ("Ann has 3.", "Ben has 4.")
    assert info.kept == (-1.5, -1.0) and info.removed == (-2.0, -3.5) and info.drops == (0.5, 2.5)
    assert info.teacher_forced == (0.25, None)  # S1's teacher-forced removal was not stored
    assert info.kept_match == (1.0, 0.5) and info.removed_match == (0.5, 0.0)
    assert info.sentence == ("With 2 resampled continuations per step, removing \u201cBen has 4.\u201d lowers the "
                             "answer's log-probability most (2.50 nats on average); the continuations reach the "
                             "original answer 75% of the time with a step kept and 25% with it removed.")
    one = intervention_facts(_trace([], resampled=_resampled(1, [("S2", [-1.0], [-2.0], [False], [True])])))
    assert one.resampled.sentence.startswith("With 1 resampled continuation per step, removing \u201cSo 7.\u201d")
    assert one.steps is None and one.removal is None
    assert intervention_facts(_trace(_steps(0.25), resampled=_resampled(1, []))).resampled is None


def test_interventions_attached_to_a_trace_are_checked():
    older = _trace([]).model_copy(update={"interventions": None, "schema_version": 2})
    record = InterventionRecord(before=-2.0, model="m", seconds=0.5,
                                edits=[EditRecord(kind="step", segments=["S1"], logprob=-3.0)])
    out = with_interventions(older, record)
    assert out.interventions == record and out.schema_version == SCHEMA_VERSION and older.interventions is None
    assert step_influence(out).drops == (1.0,)
    bad = record.model_copy(update={"edits": [EditRecord(kind="edit", segments=["A"], logprob=-3.0)]})
    with pytest.raises(ValueError, match=r"names \['A'\], which are not prompt sentences or reasoning steps"):
        with_interventions(older, bad)


def test_sentence_removal_without_random_draws_makes_no_comparison():
    removal = sentence_removal(_trace([("top", ["P0"], 3.0), ("gold", ["P0", "P1"], 2.5)]))
    assert removal.check is None and removal.randoms == () and removal.gold == (("P0", "P1"), 2.5)
    assert removal.sentence == ("Removing the top evidence sentence lowers the answer's log-probability by 3.00 nats; "
                                "the gold sentences: 2.50 nats.")
    one = sentence_removal(_trace([("random", ["P2"], 0.25)]))
    assert one.top is None and one.check is None and one.sentence == ("1 random sentence: 0.25 nats on average "
                                                                       "(0.25 to 0.25).")


def test_the_top_sentence_is_compared_with_the_random_draws_as_one_removed_sentence():
    facts = intervention_facts(_trace([("top", ["P0"], 3.0), ("random", ["P2"], 0.1), ("random", ["P1"], 0.5)]))
    assert facts.model == "hand-made" and facts.before == facts.removal.before == -1.0
    check = facts.removal.check
    assert (check.fraction, check.n_deleted, check.before) == (1.0, 1, -1.0)  # one whole sentence each time
    assert check.drop_top == pytest.approx(3.0) and check.drops_random == pytest.approx((0.1, 0.5))


def test_top_steps_differ_only_beyond_both_margins():
    near = {"S0": 0.3, "S1": 0.31, "S2": 0.1, "P0": 0.29}  # the graph's top step S1 leads S0 by 0.01 (< 0.02)
    info = step_influence(_trace(_steps(2.0, 0.5, 0.0), answer_on=near))
    assert (info.top, info.top_drop, info.top_graph) == ("tie", "S0", "S1")
    far = {"S0": 0.1, "S1": 0.5, "S2": 0.1, "P0": 0.3}
    exact = step_influence(_trace(_steps(0.1, 0.0, 0.0), before=0.0, answer_on=far))  # S0 costs exactly 0.1 more
    assert (exact.top, exact.top_drop, exact.top_graph) == ("tie", "S0", "S1")
    assert exact.sentence.endswith("; their top steps (\u201cAnn has 3.\u201d and \u201cBen has 4.\u201d) are within the "
                                   "margin of each other: a tie.")
    beyond = step_influence(_trace(_steps(0.25, 0.0, 0.0), before=0.0, answer_on=far))
    assert (beyond.top, beyond.top_drop, beyond.top_graph) == ("differ", "S0", "S1")
    assert "removal puts \u201cAnn has 3.\u201d first, the hop graph \u201cBen has 4.\u201d" in beyond.sentence


def test_unrelated_and_agreeing_orders_in_words():
    info = step_influence(_trace(_steps(1.0, 0.0, 1.0)))  # tied ranks: no correlation with the graph's order
    assert info.spearman == 0.0 and info.verdict == "unrelated"
    assert info.sentence == ("Removal and the hop graph do not agree on the order of the steps (rank correlation +0.00 "
                             "over 3 steps); both put \u201cAnn has 3.\u201d first.")
    assert step_influence(_trace(_steps(2.0, 1.0, 0.5))).sentence == (
        "Removal and the hop graph agree on the order of the steps (rank correlation +1.00 over 3 steps); both put "
        "\u201cAnn has 3.\u201d first.")
