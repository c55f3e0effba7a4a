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


def test_a_graph_without_edges_prunes_to_its_nodes():
    graph = hop_graph(["P0", "P1", "S0", "A"], {})
    pruned = graph.pruned()
    assert pruned.graph.number_of_edges() == 0
    assert set(pruned.graph.nodes) == {OTHER, "S0", "A"}  # no input reaches the answer: they fold
    assert pruned.graph.nodes[OTHER]["folded"] == ["P0", "P1"]


def test_an_unfolded_graph_of_many_segments_keeps_the_true_shares():
    prompts = [f"P{i}" for i in range(1100)]  # more than 1,000 drawn nodes: the edges are grouped by sorting
    shares = {(p, "S0"): 0.5 / len(prompts) for p in prompts} | {("P7", "A"): 0.25, ("S0", "A"): 0.5}
    full = hop_graph([*prompts, "S0", "A"], shares)
    graph = full.pruned(fold=False, edge_threshold=1.0, max_edges=5_000)
    assert len(graph.graph) == 1102 and graph.graph.number_of_edges() == len(shares)
    for (src, dst), share in shares.items():
        assert graph.graph.edges[src, dst]["share"] == pytest.approx(share)


def test_edges_that_carry_nothing_are_not_drawn():
    # S1 has no path to the answer: what flows into it never reaches the answer
    full = hop_graph(["P0", "P1", "S0", "S1", "A"], {("P0", "S0"): 0.5, ("P1", "S1"): 0.5, ("S0", "A"): 0.5})
    graph = full.pruned(step_sources=0, fold=False)
    assert sorted(graph.graph.edges) == [("P0", "S0"), ("S0", "A")]


def test_on_a_tie_the_edge_to_the_earlier_step_is_drawn():
    shares = {("P0", "S0"): 0.4, ("P0", "S1"): 0.4, ("S0", "A"): 0.3, ("S1", "A"): 0.3}
    graph = hop_graph(["P0", "S0", "S1", "A"], shares).pruned(edge_threshold=0.01, step_sources=0)
    assert graph.graph.has_edge("P0", "S0") and not graph.graph.has_edge("P0", "S1")


@pytest.mark.parametrize("node, edge", [(0, 0.5), (0.5, 0), (1.5, 0.5), (0.5, 1.5), (-1, -1)])
def test_thresholds_outside_zero_to_one_are_refused(node, edge):
    graph = hop_graph(["P0", "S0", "A"], {("P0", "S0"): 0.5, ("S0", "A"): 0.5})
    with pytest.raises(ValueError, match=r"^node and edge thresholds must be in \(0, 1\]$"):
        graph.pruned(node, edge)


def test_the_drawn_graph_records_how_it_was_pruned():
    graph = hop_graph(["P0", "P1", "S0", "A"], {("P0", "S0"): 0.5, ("P1", "A"): 0.2, ("S0", "A"): 0.5})
    pruned = graph.pruned(1, 1, max_inputs=None, step_sources=1)
    assert pruned.pruning == {"node_threshold": 1, "edge_threshold": 1, "max_inputs": None, "fold": True,
                              "step_sources": 1, "max_steps": 40, "max_edges": 300}
    assert sorted(pruned.graph.edges(data="raw_share")) == [("P0", "S0", 0.5), ("P1", "A", 0.2), ("S0", "A", 0.5)]


def test_edges_carrying_under_a_billionth_of_the_flow_are_left_out():
    shares = {("P0", "S0"): 0.5, ("P1", "S0"): 0.3, ("P1", "A"): 1e-12, ("S0", "A"): 0.6}
    graph = hop_graph(["P0", "P1", "S0", "A"], shares).pruned(edge_threshold=1.0, step_sources=0)
    assert sorted(graph.graph.edges) == [("P0", "S0"), ("P1", "S0"), ("S0", "A")]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), edges=st.sampled_from([0.5, 0.9, 1.0]), cap=st.integers(1, 40))
def test_the_edges_drawn_are_the_fewest_strongest_within_the_cap(seed, edges, cap):
    full = random_hop_graph(seed, n_prompt=5, n_steps=4, density=0.7)
    influence = full.influence()
    graph = full.pruned(edge_threshold=edges, max_edges=cap, step_sources=0, fold=False)
    flow = {(s, d): sh * influence[d] for s, d, sh in full.graph.edges(data="share")}
    strongest = {s: max((f, -full.graph.nodes[d]["order"], d) for (a, d), f in flow.items() if a == s and f > 0)[2]
                 for s in {a for (a, _), f in flow.items() if f > 0}}
    forced = {(s, d) for s, d in strongest.items()}
    drawn = set(graph.graph.edges)
    assert forced <= drawn and all(flow[e] > 0 for e in drawn)
    extra = drawn - forced
    assert len(drawn) <= max(cap, len(forced))
    left = [f for e, f in flow.items() if e not in drawn and f > 0]
    carried, total = sum(flow[e] for e in drawn), sum(flow.values())
    if extra:  # the others drawn are the strongest, and no more than the threshold needs
        assert min(flow[e] for e in extra) >= max(left, default=0)
        assert carried - min(flow[e] for e in extra) < edges * total
    if left and len(drawn) < cap:
        assert carried >= edges * total * (1 - 1e-9)


def test_among_edges_of_equal_flow_the_earliest_are_drawn_first():
    prompts = [f"P{i}" for i in range(40)]
    shares = {(p, "S0"): 0.02 for p in prompts} | {(p, "A"): 0.01 for p in prompts} | {("S0", "A"): 0.5}
    graph = hop_graph([*prompts, "S0", "A"], shares).pruned(edge_threshold=0.8, step_sources=0, fold=False)
    into_answer = [p for p in prompts if graph.graph.has_edge(p, "A")]
    assert 0 < len(into_answer) < len(prompts) and into_answer == prompts[:len(into_answer)]
