"""The torch-free summaries of stored interventions: step influence by removal against the hop graph's
(rank correlation, agreement with a margin) and the prompt-sentence removals."""

import json

import pytest

from flashtrace.analysis.interventions import intervention_facts, sentence_removal, step_influence
from flashtrace.analysis.schema import Trace

from .trace_factory import make_trace, vector

PROMPT = ["Ann has 3 apples.", "Ben has 4 pears.", "Cat sings."]
STEPS = ["Ann has 3.", "Ben has 4.", "So 7."]
ANSWER = "Answer: 7"


def _trace(edits, steps=STEPS, before=-1.0):
    args = (PROMPT, steps, ANSWER)
    raw = vector(*args, {"P0": 0.3, "P1": 0.2, "P2": 0.1, "S0": 0.2, "A": 0.2})
    step_vectors = {"A": vector(*args, {"S0": 0.5, "S1": 0.3, "S2": 0.1, "P0": 0.1}),
                    **{f"S{i}": vector(*args, {"P0" if i % 2 == 0 else "P1": 1.0}) for i in range(len(steps))}}
    if len(steps) < 3:
        step_vectors["A"] = vector(*args, {"S0": 0.5, "S1": 0.3, "P0": 0.2})
    tr = make_trace(*args, [raw], step_vectors=step_vectors, extra={"gold": [[18, 34]]})
    data = json.loads(tr.to_json())
    data["interventions"] = {"before": before, "model": "hand-made", "seed": 0, "seconds": 1.0,
                             "edits": [{"kind": k, "segments": s, "logprob": before - d} for k, s, d in edits]}
    return Trace.from_dict(data)


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


def test_no_interventions():
    tr = make_trace(PROMPT, STEPS, ANSWER, [vector(PROMPT, STEPS, ANSWER, {"P0": 1.0, "A": 1.0})])
    assert intervention_facts(tr) is None and step_influence(tr) is None and sentence_removal(tr) is None
