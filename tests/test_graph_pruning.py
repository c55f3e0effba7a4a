"""Which inputs, steps and edges the drawn (pruned) hop graph keeps: the fewest most influential inputs that
hold the threshold, a single leftover shown rather than folded, folded nodes standing in text order."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flashtrace.analysis.graph import OTHER, STEPS_ROLE

from .graph_factory import hop_graph, random_hop_graph


def _priority(full, cap, k):
    sources = full.step_sources(k)
    firsts = [n for n, _ in full.evidence(1)] + [srcs[r] for r in range(k) for srcs in sources.values()
                                                 if r < len(srcs)]
    return list(dict.fromkeys(firsts))[:cap]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), density=st.floats(0.1, 0.9), keep=st.sampled_from([0.3, 0.8, 1.0]),
       cap=st.sampled_from([None, 2, 4, 8]), k=st.integers(0, 2))
def test_the_inputs_shown_are_the_fewest_most_influential(seed, density, keep, cap, k):
    full = random_hop_graph(seed, n_prompt=10, n_steps=4, density=density)
    influence = full.influence()
    inputs = full.nodes("template") + full.nodes("prompt")
    graph = full.pruned(keep, max_inputs=cap, step_sources=k)
    folded = graph.graph.nodes[OTHER]["folded"] if OTHER in graph.graph else []
    shown = [n for n in inputs if n not in folded]
    first = _priority(full, cap, k)
    assert set(first) <= set(shown)  # each step's sources (and the top segment) are never folded
    extras = [n for n in shown if n not in first]
    total, held = sum(influence[n] for n in inputs), sum(influence[n] for n in shown)
    if folded:
        # the others shown are the most influential ones, and no more of them than the threshold needs
        assert all(influence[n] >= influence[f] for n in extras for f in folded)
        if cap is None or len(shown) < cap:
            assert held >= keep * total * (1 - 1e-9)
        if extras:
            assert held - min(influence[n] for n in extras) < keep * total
    zero = [n for n in inputs if influence[n] == 0 and n not in first]
    if len(zero) >= 2:  # inputs that do not reach the answer fold, whatever the threshold
        assert set(zero) <= set(folded)


def test_a_single_leftover_input_is_shown_two_fold():
    ids = ["P0", "P1", "P2", "P3", "S0", "A"]
    strong = {("P0", "S0"): 0.5, ("P1", "A"): 0.3, ("S0", "A"): 0.4}
    three = hop_graph(ids[:3] + ids[4:], {**strong, ("P2", "A"): 0.01})
    assert OTHER not in three.pruned(max_inputs=2).graph  # P2 alone would fold: it is shown instead
    assert set(three.pruned(max_inputs=2).nodes("prompt")) == {"P0", "P1", "P2"}
    four = hop_graph(ids, {**strong, ("P2", "A"): 0.01, ("P3", "A"): 0.02})
    graph = four.pruned(max_inputs=2)
    assert sorted(graph.graph.nodes[OTHER]["folded"]) == ["P2", "P3"]
    assert graph.graph.nodes[OTHER]["text"] == "other context (2 sentences)"


def test_a_step_reading_fewer_segments_than_asked_keeps_them():
    graph = hop_graph(["P0", "P1", "P2", "P3", "S0", "S1", "A"],
                      {("P1", "S0"): 0.6, ("S0", "S1"): 0.5, ("P0", "A"): 0.2, ("P3", "A"): 0.1, ("S1", "A"): 0.5})
    pruned = graph.pruned(step_sources=2, max_inputs=3)  # S0 reads one segment, S1 none
    assert {"P0", "P1", "P3"} <= set(pruned.nodes("prompt"))
    assert pruned.graph.has_edge("P1", "S0")


def test_folded_nodes_stand_where_their_members_were():
    ids = ["P0", "P1", "P2", "P3", "P4", *(f"S{i}" for i in range(6)), "A"]
    shares = {("P0", "S0"): 0.9, ("P4", "A"): 0.05, ("P1", "A"): 0.01, ("P2", "A"): 0.01, ("P3", "A"): 0.01}
    shares |= {(f"S{i}", f"S{i + 1}"): 0.5 for i in range(5)} | {("S5", "A"): 0.3, ("S0", "A"): 0.2}
    full = hop_graph(ids, shares)
    graph = full.pruned(max_inputs=2, max_steps=2, step_sources=1)
    other = graph.graph.nodes[OTHER]
    assert sorted(other["folded"]) == ["P1", "P2", "P3"]
    # the other context stands after the last input it folds, a run of steps where its first step was
    assert other["order"] == full.graph.nodes["P3"]["order"]
    assert graph.nodes()[:3] == ["P0", OTHER, "P4"]
    runs = [n for n in graph.graph if graph.graph.nodes[n]["role"] == STEPS_ROLE]
    assert runs and all(graph.graph.nodes[r]["order"] == full.graph.nodes[graph.graph.nodes[r]["folded"][0]]["order"]
                        for r in runs)
    assert graph.nodes("reasoning") == ["S0", "S5"]
    assert [graph.graph.nodes[n]["influence"] for n in runs] == [pytest.approx(sum(full.influence()[m] for m in
                                                                 graph.graph.nodes[n]["folded"])) for n in runs]


def test_a_single_step_left_out_is_drawn_as_itself():
    graph = hop_graph(["P0", "S0", "S1", "S2", "A"], {("P0", "S0"): 0.5, ("S0", "S1"): 0.1, ("S0", "S2"): 0.5,
                                                      ("S1", "S2"): 0.1, ("S2", "A"): 0.6})
    pruned = graph.pruned(max_steps=2)
    assert pruned.nodes("reasoning") == ["S0", "S1", "S2"] and not pruned.nodes(STEPS_ROLE)
