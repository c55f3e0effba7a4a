"""Hop depth comparison: per-depth prompt scores, mass split, rank agreement, convergence."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr

from flashtrace.analysis.compare import (CONVERGED_OVERLAP, compare_depths, hop_additions, input_shares, prompt_shares,
                                         reached_input, spearman, top_k_overlap)
from flashtrace.analysis.schema import Trace
from flashtrace.analysis.facts import analyse
from flashtrace.analysis.story import reach_words
from flashtrace.analysis.text import pct, short_text
from flashtrace.run.tracing import attribute, hop_depth_comparison, prepare
from flashtrace.viz import visible_label
from flashtrace.viz.compare import depth_agreement, hop_segment_strips, hop_token_strips, reach_bars

from .trace_factory import layout, make_trace

PROMPT = "Ann has 3 red balls. Ben has 4 blue balls. How many balls do they have together?"
RESPONSE = "Ann has 3 balls.\nBen has 4 balls.\n3 + 4 = 7.\nAnswer: 7 balls"


@pytest.fixture(scope="module")
def prepared():
    from flashtrace.engine.models import load_model

    return prepare(load_model("tiny-llama"), PROMPT, RESPONSE)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=3, max_size=30))
def test_spearman_matches_scipy(pairs):
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    ours = spearman(a, b)
    if len(set(a)) < 2 or len(set(b)) < 2:
        assert ours is None
    else:
        assert ours == pytest.approx(spearmanr(a, b).statistic, abs=1e-12)


def test_top_k_overlap():
    a = [0.0, 5, 4, 3, 2, 1]
    b = [0.0, 1, 2, 3, 4, 5]
    positions = [1, 2, 3, 4, 5]
    assert top_k_overlap(a, a, positions, 3) == 1.0
    assert top_k_overlap(a, b, positions, 2) == 0.0
    assert top_k_overlap(a, b, positions, 3) == pytest.approx(1 / 3)
    assert top_k_overlap(a, b, positions, 50) == 1.0  # k capped at the number of positions


def test_depths_equal_separate_traces(prepared):
    comp = hop_depth_comparison(prepared, max_hops=4, k=5)
    assert comp.depths == [0, 1, 2, 3, 4] and comp.hops_run == 4
    assert len(comp.spearman) == len(comp.overlap) == 4
    for depth in comp.depths:  # depth K is exactly the trace with K hops
        alone = attribute(prepared, hops=depth)
        assert comp.prompt_scores[depth] == pytest.approx(alone.scores.prompt, abs=1e-6)
        assert comp.rho[depth] == pytest.approx(alone.hops[-1].rho, abs=1e-6)
        assert math.isclose(sum(comp.prompt_scores[depth]), 1.0, rel_tol=1e-6)
        assert sum(comp.mass[depth].values()) == pytest.approx(1.0)
        assert set(comp.mass[depth]) == {"prompt", "reasoning", "answer"}
    assert all(b >= a - 1e-9 for a, b in zip(comp.reached, comp.reached[1:]))  # mass only flows into the input
    positions = set(comp.prompt_positions)
    assert all(set(top) <= positions and len(top) == 5 for top in comp.top)


def test_convergence_depth_definition(prepared):
    comp = hop_depth_comparison(prepared, max_hops=4, k=3)
    c = comp.convergence_depth
    if c is None:
        assert comp.overlap[-1] < CONVERGED_OVERLAP
    else:
        assert all(o >= CONVERGED_OVERLAP for o in comp.overlap[c:])
        assert c == 0 or comp.overlap[c - 1] < CONVERGED_OVERLAP
    def top3(scores):
        return {p for p, _ in sorted(((p, scores[p]) for p in comp.prompt_positions), key=lambda x: -x[1])[:3]}

    for d, o in enumerate(comp.overlap):  # recomputed by hand: shared members of the two top-3 sets, over 3
        assert o == pytest.approx(len(top3(comp.prompt_scores[d]) & top3(comp.prompt_scores[d + 1])) / 3)


def test_from_a_saved_trace_without_recomputing(prepared):
    tr = attribute(prepared, hops=3)
    comp = compare_depths(tr, k=4, max_hops=2)
    assert comp.depths == [0, 1, 2]
    assert comp.to_dict()["prompt_scores"] == comp.prompt_scores
    with pytest.raises(ValueError, match="max_hops"):
        compare_depths(tr, max_hops=4)
    with pytest.raises(ValueError, match="k must"):
        compare_depths(tr, k=0)


def test_hops_that_stop_early(tiny_llama):
    prepared = prepare(tiny_llama, "What is the capital of France?", "Paris")  # no reasoning at all
    comp = hop_depth_comparison(prepared, max_hops=3, recursive="reasoning")
    assert comp.hops_run == 0 and comp.mass[1:] == [None, None, None]
    tr = attribute(prepared, hops=0, recursive="reasoning")
    on_input = sum(v for v, t in zip(tr.hops[0].raw, tr.tokens) if t.role in ("template", "prompt")) / sum(tr.hops[0].raw)
    assert comp.reached == [pytest.approx(on_input)] * 4 and on_input < 1  # what stays on the answer never arrives
    assert comp.prompt_scores[3] == comp.prompt_scores[0] and comp.overlap == [1.0, 1.0, 1.0]
    assert comp.convergence_depth == 0


def test_mass_split_reference(prepared):
    comp = hop_depth_comparison(prepared, max_hops=1)
    tr = attribute(prepared, hops=1)
    raw = np.asarray(tr.hops[1].raw)
    reasoning = [i for i, t in enumerate(tr.tokens) if t.role == "reasoning"]
    assert comp.mass[1]["reasoning"] == pytest.approx(raw[reasoning].sum() / raw.sum())


# --- what each hop adds ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def three_hops(prepared):
    return attribute(prepared, hops=3)


def test_hop_additions_are_the_stored_contributions(prepared, three_hops):
    tr = three_hops
    add = hop_additions(tr)
    assert add.hops == [0, 1, 2, 3]
    for k, hop in enumerate(tr.hops):
        assert add.added[k] == hop.contribution
    assert np.sum(add.added, axis=0) == pytest.approx(tr.scores.final, rel=1e-6)  # the hops sum to the final (float32)
    cumulative = np.cumsum(add.added, axis=0)
    for depth in add.hops:  # depth K = the trace with K hops
        assert cumulative[depth] == pytest.approx(attribute(prepared, hops=depth).scores.final, abs=1e-6)
    prompt = tr.positions("prompt")
    assert add.unit == pytest.approx(sum(tr.scores.final[i] for i in prompt))
    shares = prompt_shares(np.asarray(add.added), prompt)  # the per-depth prompt ranking of facts and compare
    for depth in add.hops:
        assert shares[depth] == pytest.approx(cumulative[depth][prompt] / cumulative[depth][prompt].sum())


def test_hop_additions_as_plain_data(three_hops):
    add = hop_additions(three_hops)
    data = add.to_dict()  # JSON-ready, the same numbers
    assert json.loads(json.dumps(data)) == data and data["added"] == add.added and data["unit"] == add.unit
    assert data["reached"] == add.reached and data["hops"] == [0, 1, 2, 3]


def test_reached_the_input(prepared, three_hops):
    add = hop_additions(three_hops)
    rho = [h.rho for h in three_hops.hops]
    assert add.rho == rho
    assert add.reached == pytest.approx([1 - r for r in rho])  # default recursive span: reached = 1 - ρ_K
    assert add.reached == pytest.approx(np.cumsum(add.input_share).tolist())
    assert compare_depths(three_hops).reached == pytest.approx(add.reached)
    text = reach_words(analyse(three_hops))
    assert text.startswith(f"Read directly, {pct(add.reached[0])} of the answer's attribution is on the input")
    assert f"after 3 hops {pct(add.reached[3])} has reached it" in text
    only_reasoning = hop_additions(attribute(prepared, hops=2, recursive="reasoning"))
    assert only_reasoning.reached[-1] < 1 - only_reasoning.rho[-1]  # answer mass is not re-attributed: lost


def test_hop_strip_figures_share_one_scale_and_carry_labels(three_hops):
    add, facts = hop_additions(three_hops), analyse(three_hops)
    texts = [t.text for t in three_hops.tokens]
    fig = hop_token_strips(facts, texts, "added", shared=True, limit=8).to_plotly_json()
    cols = fig["layout"]["meta"]["positions"]
    assert len(cols) == 8 and cols == sorted(cols) and set(cols) <= set(add.prompt_positions)
    z = np.asarray(fig["data"][0]["z"])
    assert z.shape == (4, 8)
    assert z == pytest.approx(np.asarray(add.added)[:, cols] / add.unit)  # shares of the final prompt attribution
    assert fig["data"][0]["zmax"] == pytest.approx(z.max())  # one scale: the largest cell of every hop
    assert fig["layout"]["xaxis"]["ticktext"] == [visible_label(texts[i], 14) for i in cols]
    assert list(fig["data"][0]["y"]) == ["hop 0 (direct)", "hop 1 adds", "hop 2 adds", "hop 3 adds"]
    own = np.asarray(hop_token_strips(facts, texts, "added", shared=False, limit=8).to_plotly_json()["data"][0]["z"])
    assert own.max(axis=1) == pytest.approx([1.0] * 4)  # per-hop normalisation: every row reaches its maximum
    cum = hop_token_strips(facts, texts, "cumulative", limit=200).to_plotly_json()
    rows = np.asarray(cum["data"][0]["z"])
    positions = cum["layout"]["meta"]["positions"]
    assert rows[-1] == pytest.approx([three_hops.scores.prompt[i] for i in positions])  # after all hops: Explore's scores
    for depth in range(4):  # each depth is its own picture: shares of the prompt attribution after hops 0..depth
        cumulative = np.sum(np.asarray(add.added[: depth + 1]), axis=0)
        prompt = three_hops.positions("prompt")
        assert rows[depth] == pytest.approx(cumulative[positions] / cumulative[prompt].sum())
    assert "of the prompt's attribution" in cum["layout"]["meta"]["of"]

    seg = hop_segment_strips(facts, "added", shared=True, limit=50).to_plotly_json()
    names = list(seg["data"][0]["y"])
    segs = [s for s in three_hops.segments if s.role == "prompt"]
    assert seg["layout"]["meta"]["segments"] == [s.id for s in segs] and len(segs) >= 3
    assert len(set(names)) == len(names) and not any(n.startswith(f"{s.id} · ") for n, s in zip(names, segs))
    with_ids = hop_segment_strips(facts, "added", limit=50, details=True).to_plotly_json()["data"][0]["y"]
    assert [n.split(" · ")[0] for n in with_ids] == [s.id for s in segs]  # ids with Details on
    assert all(s.text.split()[0] in n for n, s in zip(names, segs))  # rows labelled with their text
    zs = np.asarray(seg["data"][0]["z"])
    by_hand = [[sum(h.contribution[s.start:s.end]) for h in three_hops.hops] for s in segs]  # [segment][hop]
    assert zs == pytest.approx(np.asarray(by_hand) / add.unit)
    assert seg["data"][0]["zmax"] == pytest.approx(zs.max())
    own = np.asarray(hop_segment_strips(facts, "added", shared=False).to_plotly_json()["data"][0]["z"])
    assert own.max(axis=0) == pytest.approx([1.0] * 4)


def test_depth_agreement_names_rank_correlation_not_rho(three_hops):
    fig = depth_agreement(compare_depths(three_hops)).to_plotly_json()
    names = [t["name"] for t in fig["data"]]
    assert names[0] == "rank correlation (Spearman)" and "ρ" not in json.dumps(fig, ensure_ascii=False)
    bars = reach_bars(analyse(three_hops)).to_plotly_json()
    assert [sum(t["y"][d] for t in bars["data"]) for d in range(4)] == pytest.approx(hop_additions(three_hops).reached)


def test_short_text_keeps_both_ends_of_a_long_sentence():
    sentence = "One of the special magic numbers for velvet-meadow is:\n 2950138."
    assert short_text(sentence, 80) == "One of the special magic numbers for velvet-meadow is: 2950138."
    short = short_text(sentence, 40)
    assert len(short) <= 40 and short.startswith("One of the") and short.endswith("is: 2950138.") and " … " in short


# --- hand-made traces: agreement between depths and the convergence depth, known by construction ------------

WORDS = [" ".join(f"w{i}" for i in range(1, 13))]  # one prompt sentence of 12 word tokens (positions 1..12)


def _by_hand(prompt_values: list[list[float]]):
    """A trace whose hop k puts ``prompt_values[k]`` on the 12 prompt tokens (10 on each reasoning token)."""
    tokens, *_ = layout(WORDS, ["s1 s2"], "Answer: 7")
    raws = []
    for values in prompt_values:
        raw = [0.0] * len(tokens)
        raw[1:13] = values
        for i, (_text, role, _a, _b) in enumerate(tokens):
            raw[i] = 10.0 if role == "reasoning" else raw[i]
        raws.append(raw)
    return make_trace(WORDS, ["s1 s2"], "Answer: 7", raws)


def test_convergence_depth_of_hand_made_orders():
    falling = [float(13 - i) for i in range(1, 13)]  # w1 strongest ... w12 weakest
    late = [0.0] * 11 + [100.0]  # hop 1 puts w12 first
    tr = _by_hand([falling, late, [0.0] * 12])
    comp = compare_depths(tr, k=1)
    assert [t for t in comp.top] == [[1], [12], [12]] and comp.overlap == [0.0, 1.0]
    assert comp.convergence_depth == 1  # from depth 1 on the top token stays
    assert compare_depths(tr, k=1, max_hops=1).convergence_depth is None  # it never settles within depth 1
    ten = compare_depths(tr, k=10, max_hops=1)  # w12 replaces w10 in the top ten: 9 of 10 shared
    assert ten.overlap == [0.9] and ten.convergence_depth == 0  # 0.9 is converged
    default = compare_depths(tr)
    assert default.k == 10 and [len(t) for t in default.top] == [10, 10, 10]
    assert default.spearman[1] == pytest.approx(1.0)  # depths 1 and 2 hold the same scores
    assert default.spearman[0] == pytest.approx(spearmanr(default.prompt_scores[0][1:13],
                                                          default.prompt_scores[1][1:13]).statistic)


def test_tokens_without_a_score_at_any_depth_are_not_ranked():
    tr = _by_hand([[float(13 - i) for i in range(1, 12)] + [0.0], [0.0] * 10 + [50.0, 0.0]])
    comp = compare_depths(tr, k=3)
    assert comp.prompt_positions == list(range(1, 12))  # w12 never has a score
    assert comp.top == [[1, 2, 3], [11, 1, 2]]


def test_a_hop_that_moves_nothing_lands_nowhere():
    data = json.loads(_by_hand([[1.0] * 12]).to_json())
    n = len(data["tokens"])
    data["settings"]["hops"] = 1
    data["hops"].append({"k": 1, "rho": 0.0, "weights": data["hops"][0]["weights"], "raw": [0.0] * n,
                         "contribution": [0.0] * n})
    tr = Trace.from_dict(data)
    comp = compare_depths(tr)
    assert comp.mass[1] == {"prompt": 0.0, "reasoning": 0.0, "answer": 0.0}
    assert input_shares(tr) == [pytest.approx(12 / 32), 0.0] and comp.prompt_scores[1] == comp.prompt_scores[0]


# --- the numbers each piece promises (what mutation testing found unchecked) ----------------------------------

def test_tied_scores_share_their_mean_rank():
    from flashtrace.analysis.compare import _average_ranks

    assert _average_ranks(np.array([3.0, 1.0, 3.0, 2.0])).tolist() == [3.5, 1.0, 3.5, 2.0]
    assert _average_ranks(np.array([5.0, 5.0, 5.0])).tolist() == [2.0, 2.0, 2.0]


def test_two_scores_already_have_a_rank_correlation():
    assert spearman([1.0, 2.0], [2.0, 1.0]) == pytest.approx(-1.0)
    assert spearman([1.0, 2.0], [3.0, 7.0]) == pytest.approx(1.0)
    assert spearman([1.0], [2.0]) is None and spearman([1.0, 1.0], [1.0, 2.0]) is None


def test_no_positions_to_compare_count_as_full_agreement():
    assert top_k_overlap([1.0, 2.0], [2.0, 1.0], [], 3) == 1.0


def test_fewer_depths_than_the_trace_has_hops(three_hops):
    full, two = hop_additions(three_hops), hop_additions(three_hops, max_hops=1)
    assert two.hops == [0, 1] and two.added == full.added[:2] and two.rho == full.rho[:2]
    assert two.input_share == full.input_share[:2] and two.reached == full.reached[:2]
    assert input_shares(three_hops, 1) == full.input_share[:2]
    assert reached_input(three_hops, 1) == full.reached[:2]
    assert compare_depths(three_hops, max_hops=1).reached == full.reached[:2]


def test_hops_that_stopped_early_add_nothing_after_the_last_one_run(tiny_llama):
    tr = attribute(prepare(tiny_llama, "What is the capital of France?", "Paris"), hops=2, recursive="reasoning")
    assert len(tr.hops) == 1 and tr.settings.hops == 2  # no reasoning: nothing to carry further
    add = hop_additions(tr)
    assert add.added[0] == tr.hops[0].contribution and add.added[1:] == [[0.0] * tr.n_tokens] * 2
    assert add.rho == [tr.hops[0].rho] * 3 == [0.0] * 3
    assert add.unit == pytest.approx(sum(tr.scores.final[i] for i in tr.positions("prompt")))


def test_a_target_other_than_the_answer_is_named_target(prepared):
    assert hop_additions(attribute(prepared, hops=1)).target_label == "answer"
    assert hop_additions(attribute(prepared, hops=1, target="response")).target_label == "target"


def test_a_depth_that_puts_nothing_on_the_prompt_has_no_top_segment():
    sentences = ["a1 a2.", "b1 b2 b3 b4 b5."]  # a short sentence, then a long one
    tokens, *_ = layout(sentences, ["s1 s2"], "Answer: 7")
    roles = [t[1] for t in tokens]
    first = [10.0 if r == "reasoning" else 0.0 for r in roles]  # hop 0 stays on the reasoning
    second = [1.0 if r in ("prompt", "reasoning") else 0.0 for r in roles]
    facts = analyse(make_trace(sentences, ["s1 s2"], "Answer: 7", [first, second]))
    assert [p.key for p in facts.pieces] == ["P0", "P1"]
    assert [d.top for d in facts.depths] == [None, 1]  # equal shares per token: the longer sentence holds more
    short = facts.pieces[0]
    second[short.start:short.end] = [9.0] * (short.end - short.start)
    facts = analyse(make_trace(sentences, ["s1 s2"], "Answer: 7", [first, second]))
    assert [d.top for d in facts.depths] == [None, 0]


def test_a_trace_without_user_prompt_tokens_has_nothing_to_share_out():
    sentences = ["a1 a2."]
    tokens, *_ = layout(sentences, ["s1 s2"], "Answer: 7")
    raw = [1.0 if t[1] in ("prompt", "reasoning") else 0.0 for t in tokens]
    data = json.loads(make_trace(sentences, ["s1 s2"], "Answer: 7", [raw]).to_json())
    for token in data["tokens"]:
        token["role"] = "template" if token["role"] == "prompt" else token["role"]  # all template around it
    data["scores"]["prompt"] = [0.0] * len(data["tokens"])
    data.pop("segments")
    trace = Trace.from_dict(data)
    add = hop_additions(trace)
    assert add.prompt_positions == [] and add.unit == 0.0
    assert prompt_shares(np.asarray(add.added), add.prompt_positions).shape == (1, 0)
    assert compare_depths(trace).prompt_scores == [[0.0] * len(data["tokens"])]
