"""Step-level tracing: one batched aggregation equals a separate aggregation per step; the Trace fields."""

import json

import pytest
import torch

from flashtrace import Trace, TraceValidationError
from flashtrace.engine.attribution import span_aggregate, tokenwise_aggregate
from flashtrace.engine.attribution.steps import range_weights, step_attributions
from flashtrace.run.tracing import attribute, prepare, stop_mask

PROMPT = "Ann has 3 red balls. Ben has 4 blue balls. How many balls do they have together?"
RESPONSE = "1. Ann has 3 balls.\n2. Ben has 4 balls.\n3. So 3 + 4 = 7.\nAnswer: 7 balls"


@pytest.fixture
def prepared(tiny_llama):
    return prepare(tiny_llama, PROMPT, RESPONSE)


def test_range_weights():
    keep = torch.tensor([True, False, True, True, False, False])
    w = range_weights([(0, 3), (3, 5), (4, 6)], keep)
    assert torch.allclose(w[0], torch.tensor([0.5, 0, 0.5, 0, 0, 0]))
    assert torch.allclose(w[1], torch.tensor([0, 0, 0, 1.0, 0, 0]))
    assert w[2].sum() == 0  # only stop tokens: nothing to attribute
    with pytest.raises(ValueError, match="outside"):
        range_weights([(2, 9)], keep)


@pytest.mark.parametrize("bad", [(3, 3), (4, 2), (-1, 2), (0, 7)])
def test_an_empty_reversed_or_outside_range_is_refused(bad):
    with pytest.raises(ValueError, match=f"range {bad[0]}:{bad[1]} is outside the 6 tokens"):
        range_weights([(0, 2), bad], torch.ones(6, dtype=torch.bool))


def test_a_range_of_one_kept_token_puts_all_its_weight_there():
    keep = torch.tensor([False, True, False, True])
    w = range_weights([(0, 3), (3, 4), (0, 1)], keep)
    assert w.tolist() == [[0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0]]
    assert not w.isnan().any()


def test_a_single_step_gets_the_aggregators_scores():
    keep = torch.tensor([True, False, True, True])
    out = step_attributions(lambda w: w * 4, [(0, 3)], keep)
    assert out[0].tolist() == [2.0, 0.0, 2.0, 0.0]
    assert step_attributions(lambda w: w, [(1, 2)], keep) == [None]


def test_one_aggregator_call_for_all_steps():
    calls = []

    def aggregate(w):
        calls.append(w.shape)
        return torch.ones_like(w)

    keep = torch.tensor([True, True, False, True, True])
    out = step_attributions(aggregate, [(0, 2), (2, 3), (3, 5)], keep)
    assert calls == [(2, 5)]  # one call, the all-stop step left out
    assert out[1] is None
    assert out[0].tolist() == [1, 1, 0, 1, 1]  # stop tokens zeroed in the scores


def test_steps_equal_separate_span_aggregations(tiny):
    prepared = prepare(tiny, PROMPT, RESPONSE)
    tr = attribute(prepared, hops=1, steps=True)
    keep = ~stop_mask(prepared.sequence)
    segments = {s.id: s for s in tr.segments}
    ids = [s.id for s in tr.segments if s.role in ("reasoning", "answer")]
    assert list(tr.steps.vectors) == ids and ids[-1] == "A" and len(ids) == 5  # 3 steps, "Answer:", answer
    for seg_id, vector in tr.steps.vectors.items():
        seg = segments[seg_id]
        w = torch.zeros(tr.n_tokens)
        w[seg.start:seg.end] = keep[seg.start:seg.end].float()
        alone = span_aggregate(prepared.recording, w).scores[0] * keep.float()
        assert torch.allclose(torch.tensor(vector), alone, atol=1e-6, rtol=1e-5), seg_id
        assert all(v == 0 for v in vector[seg.end:])  # causal: nothing after the step


def test_answer_step_is_hop_zero(prepared):
    tr = attribute(prepared, target="answer", hops=2, steps=True)
    assert torch.allclose(torch.tensor(tr.steps.vectors["A"]), torch.tensor(tr.hops[0].raw), atol=1e-6)


def test_steps_timing_progress_and_round_trip(prepared, tmp_path):
    seen = []
    tr = attribute(prepared, hops=1, steps=True, progress=lambda done, total: seen.append((done, total)))
    layers = len(prepared.recording.layers)
    assert seen[-1] == (3 * layers, 3 * layers)
    assert tr.timings["steps_s"] == tr.steps.seconds > 0
    assert Trace.load(tr.save(tmp_path / "t.json")) == tr
    plain = attribute(prepared, hops=1)
    assert plain.steps is None and "steps_s" not in plain.timings and plain.segments == tr.segments


def test_steps_with_token_wise_ifr(prepared):
    tr = attribute(prepared, hops=0, steps=True, method="ifr")
    ft = attribute(prepared, hops=0, steps=True)
    assert tr.steps.vectors.keys() == ft.steps.vectors.keys()
    keep = ~stop_mask(prepared.sequence)
    for seg in tr.segments:  # each step vector is token-wise IFR of that step's kept tokens
        if seg.id in tr.steps.vectors:
            w = range_weights([(seg.start, seg.end)], keep)
            expected = tokenwise_aggregate(prepared.recording, w)[0] * keep
            assert torch.allclose(torch.tensor(tr.steps.vectors[seg.id]), expected, atol=1e-6)
    assert max(abs(a - b) for a, b in zip(tr.steps.vectors["A"], ft.steps.vectors["A"])) > 1e-4


def test_user_segment_boundaries(prepared):
    start = prepared.sequence.response_start
    tr = attribute(prepared, hops=0, steps=True, segment_boundaries=[start + 2])
    reasoning = [s for s in tr.segments if s.role == "reasoning"]
    assert [(s.start, s.end) for s in reasoning] == [(start, start + 2), (start + 2, tr.spans.answer[0])]
    assert list(tr.steps.vectors) == [reasoning[0].id, reasoning[1].id, "A"]
    lo, hi = tr.spans.answer
    assert hi - lo > 1
    with pytest.raises(ValueError, match="inside the answer"):
        attribute(prepared, hops=0, segment_boundaries=[lo + 1])


def test_traces_without_segments_still_load(prepared):
    data = json.loads(attribute(prepared, hops=1, steps=True).to_json())
    del data["segments"], data["steps"]
    old = Trace.from_json(json.dumps(data))
    assert old.segments is None and old.steps is None


def _mutations():
    def gap(d):
        d["segments"][1]["start"] += 1

    def overlap(d):
        d["segments"][1]["start"] -= 1

    def short(d):
        d["segments"][-1]["end"] -= 1

    def order(d):
        d["segments"][0]["order"] = 5

    def dup(d):
        d["segments"][1]["id"] = d["segments"][0]["id"]

    def vec_len(d):
        d["steps"]["vectors"]["A"].pop()

    def unknown(d):
        d["steps"]["vectors"]["Z9"] = d["steps"]["vectors"]["A"]

    def negative(d):
        d["steps"]["vectors"]["A"][0] = -1.0

    def orphan(d):
        d["segments"] = None

    def bad_role(d):
        d["segments"][0]["role"] = "narration"

    return [(gap, "tile"), (overlap, "tile"), (short, "segments end"), (order, "order"), (dup, "unique"),
            (vec_len, r"steps\.vectors\[A\]"), (unknown, "Z9"), (negative, "negative"), (orphan, "needs segments"),
            (bad_role, "role")]


@pytest.mark.parametrize("mutate, needle", _mutations())
def test_malformed_step_fields_are_rejected(prepared, mutate, needle):
    data = json.loads(attribute(prepared, hops=1, steps=True).to_json())
    mutate(data)
    with pytest.raises(TraceValidationError, match=needle):
        Trace.from_json(json.dumps(data))
