"""Hop depth comparison: per-depth prompt scores, mass split, rank agreement, convergence."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr

from flashtrace.compare import CONVERGED_OVERLAP, compare_depths, hop_depth_comparison, spearman, top_k_overlap
from flashtrace.tracing import attribute, prepare

PROMPT = "Ann has 3 red balls. Ben has 4 blue balls. How many balls do they have together?"
RESPONSE = "Ann has 3 balls.\nBen has 4 balls.\n3 + 4 = 7.\nAnswer: 7 balls"


@pytest.fixture(scope="module")
def prepared():
    from flashtrace.models import load_model

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
    assert comp.reached == [pytest.approx(1.0)] * 4
    assert comp.prompt_scores[3] == comp.prompt_scores[0] and comp.overlap == [1.0, 1.0, 1.0]
    assert comp.convergence_depth == 0


def test_mass_split_reference(prepared):
    comp = hop_depth_comparison(prepared, max_hops=1)
    tr = attribute(prepared, hops=1)
    raw = np.asarray(tr.hops[1].raw)
    reasoning = [i for i, t in enumerate(tr.tokens) if t.role == "reasoning"]
    assert comp.mass[1]["reasoning"] == pytest.approx(raw[reasoning].sum() / raw.sum())
