"""Hop graphs built by hand and graph files: every number is worked out from the shares given (influences,
evidence, step sources, paths, depths), the node-link JSON other tools read, and the refusal of bad files."""

import json

import networkx as nx
import numpy as np
import pytest

from flashtrace.analysis.graph import HopGraph, incoming_shares

from .graph_factory import hop_graph, random_hop_graph


# --- a small graph by hand: every number below is worked out from its shares ---------------------------------
HAND = {("P0", "S0"): 0.5, ("P1", "S0"): 0.25, ("P0", "A"): 0.2, ("S0", "A"): 0.6, ("P1", "A"): 0.1}


def test_a_graph_built_by_hand_reads_its_shares_and_defaults():
    g = hop_graph(["T0", "P0", "P1", "S0", "A"], HAND)
    assert g.threshold == 0.0 and g.pruning is None
    assert g.incoming("A") == {"P0": 0.2, "P1": 0.1, "S0": 0.6} and g.share("T0", "A") == 0.0
    influence = g.influence()  # A 1; S0 0.6; P0 0.2 + 0.6 * 0.5; P1 0.1 + 0.6 * 0.25
    assert influence == pytest.approx({"T0": 0.0, "P0": 0.5, "P1": 0.25, "S0": 0.6, "A": 1.0})
    assert g.evidence() == [("P0", pytest.approx(0.5)), ("P1", pytest.approx(0.25))]
    assert [n for n, _ in g.evidence(1)] == ["P0"]
    assert g.step_sources() == {"S0": ["P0", "P1"], "A": ["P0", "P1"]} and g.step_sources(1)["S0"] == ["P0"]
    paths = g.strongest_paths()  # A-S0-P0 0.3, A-P0 0.2, A-S0-P1 0.15, A-P1 0.1
    assert [(p.nodes, round(p.strength, 9)) for p in paths] == [
        (("A", "S0", "P0"), 0.3), (("A", "P0"), 0.2), (("A", "S0", "P1"), 0.15), (("A", "P1"), 0.1)]
    assert [p.nodes for p in g.strongest_paths(1)] == [("A", "S0", "P0")] and g.strongest_paths(0) == []
    assert [p.nodes for p in g.strongest_paths(through_reasoning=True)] == [("A", "S0", "P0"), ("A", "S0", "P1")]
    assert g.strongest_path_to("P1").nodes == ("A", "S0", "P1") and g.strongest_path_to("A") is None
    assert g.strongest_path_to("T0") is None and g.strongest_path_to("missing") is None
    assert g.hop_depths() == {"P0": 1, "P1": 1}


def test_a_share_of_one_is_a_free_step_and_missing_shares_count_as_none():
    """An edge carrying all of its target (share 1) costs nothing on a path; an edge without a share (a graph made
    elsewhere) counts 0, and its raw share is its share."""
    g = hop_graph(["P0", "P1", "S0", "A"], {("P0", "S0"): 1.0, ("S0", "A"): 0.5, ("P1", "A"): 0.4})
    assert [(p.nodes, p.strength) for p in g.strongest_paths(2)] == [(("A", "S0", "P0"), 0.5), (("A", "P1"), 0.4)]
    graph = nx.DiGraph(answer="A")
    for order, node in enumerate(["P0", "A"]):
        graph.add_node(node, id=node, role={"P": "prompt", "A": "answer"}[node[0]], text=node, start=order,
                       end=order + 1, order=order)
    graph.add_edge("P0", "A")
    bare = HopGraph(graph)
    assert bare.incoming("A") == {"P0": 0.0} and float(bare.edges.raw[0]) == 0.0
    graph.edges["P0", "A"]["share"] = 0.3
    assert float(HopGraph(graph).edges.raw[0]) == 0.3


def test_nodes_in_the_same_place_are_ordered_by_name_and_an_empty_graph_has_no_edges():
    graph = nx.DiGraph(answer=None)
    for node in ("P1", "P0", "A"):  # P1 and P0 claim the same place in the text
        graph.add_node(node, id=node, role="answer" if node == "A" else "prompt", text=node, start=0, end=1,
                       order=1 if node == "A" else 0)
    g = HopGraph(graph)
    assert g.nodes() == ["P0", "P1", "A"] and g.edges.count == 0
    assert [n["id"] for n in g.to_dict()["graph"]["nodes"]] == ["P0", "P1", "A"]  # the file lists them so too
    assert g.influence() == {"P1": 0.0, "P0": 0.0, "A": 0.0}  # no answer: nothing is reached
    assert g.hop_depths() == {"P0": None, "P1": None} and g.strongest_paths() == []
    assert g.strongest_path_to("P0") is None


def test_the_json_is_node_link_data_that_other_tools_read_and_keeps_the_pruning():
    g = hop_graph(["T0", "P0", "P1", "S0", "A"], HAND)
    plain = json.loads(g.to_json())
    assert plain["graph"]["directed"] is True and plain["graph"]["multigraph"] is False and "pruning" not in plain
    assert nx.node_link_graph(plain["graph"], edges="edges").is_directed()
    pruned = g.pruned(fold=False)
    text = pruned.to_json(indent=2)
    assert text.startswith('{\n  "threshold"') and json.loads(text)["pruning"] == pruned.pruning
    again = HopGraph.from_json(text)
    assert again.pruning == pruned.pruning and again.influence() == pruned.influence()
    data = json.loads(g.to_json())
    del data["graph"]["directed"], data["graph"]["multigraph"]  # written by hand: still read as a directed graph
    read = HopGraph.from_dict(data)
    assert read.graph.is_directed() and not read.graph.is_multigraph() and read.incoming("A") == g.incoming("A")
    broken = hop_graph(["P0", "A"], {("P0", "A"): float("nan")})
    with pytest.raises(ValueError, match="JSON"):
        broken.to_json()


@pytest.mark.parametrize("share", [1.5, -0.1, "0.5", None])
def test_a_graph_file_with_an_edge_share_outside_0_to_1_is_refused(share):
    data = json.loads(hop_graph(["P0", "A"], {("P0", "A"): 0.5}).to_json())
    if share is None:
        del data["graph"]["edges"][0]["share"]
    else:
        data["graph"]["edges"][0]["share"] = share
    with pytest.raises(ValueError) as refused:
        HopGraph.from_dict(data)
    assert str(refused.value) == "hop graph edges need a share between 0 and 1"
    for fine in (0.0, 1.0):
        data["graph"]["edges"][0]["share"] = fine
        assert HopGraph.from_dict(data).incoming("A") == {"P0": fine}


def test_pruning_defaults_and_threshold_carry_over():
    g = random_hop_graph(3, n_prompt=20, n_steps=6)
    pruned = g.pruned()
    assert pruned.threshold == g.threshold
    explicit = g.pruned(node_threshold=0.8, edge_threshold=0.98, max_inputs=12, fold=True, step_sources=2)
    assert pruned.pruning == explicit.pruning and sorted(pruned.graph.edges) == sorted(explicit.graph.edges)
    assert sorted(pruned.graph.nodes) == sorted(explicit.graph.nodes)


def test_a_step_cites_only_prompt_sources_that_give_it_something_in_text_order_among_equals():
    ids = ["T0", *(f"P{i}" for i in range(20)), "S0", "A"]
    shares = {(f"P{i}", "S0"): 0.04 for i in range(20)}  # twenty equal sources: the first in the text go first
    shares.update({("T0", "S0"): 0.1, ("P3", "A"): 0.5, ("P4", "A"): 0.0, ("S0", "A"): 0.3})
    g = hop_graph(ids, shares)
    assert g.step_sources(5) == {"S0": ["P0", "P1", "P2", "P3", "P4"], "A": ["P3"]}  # not P4 (nothing), not T0
    assert g.step_sources()["S0"] == ["P0", "P1"]  # two by default
    assert len(g.strongest_paths()) == 5  # five by default, of the 21 there are
    assert ("A", "P4") not in [p.nodes for p in g.strongest_paths(30)]  # an edge of share 0 is on no path


def test_graph_files_that_are_not_hop_graphs_are_refused_saying_why():
    data = json.loads(hop_graph(["P0", "A"], {("P0", "A"): 0.5}).to_json())
    with pytest.raises(ValueError) as refused:
        HopGraph.from_dict({"graph": data["graph"]})
    assert str(refused.value) == "not a hop graph: KeyError('threshold')"
    del data["graph"]["nodes"][0]["text"], data["graph"]["nodes"][0]["order"]
    with pytest.raises(ValueError) as refused:
        HopGraph.from_dict(data)
    assert str(refused.value) == "hop graph node 'P0' lacks ['text', 'order']"


def test_incoming_shares_are_fractions_of_the_whole_vector_whatever_its_total():
    assert incoming_shares(np.array([0.1, 0.2, 0.2]), [(0, 1), (1, 2), (2, 3)], 2).tolist() == pytest.approx([0.2, 0.4])
    assert incoming_shares(np.zeros(3), [(0, 1)], 1).tolist() == [0.0]


def test_ties_among_many_sources_keep_the_text_order_and_a_pruned_graph_keeps_full_influences():
    rng = np.random.default_rng(0)
    values = rng.choice([0.004, 0.008, 0.012], size=64)  # many ties, which a quicksort would not keep in order
    ids = [f"P{i}" for i in range(64)] + ["S0", "A"]
    g = hop_graph(ids, {**{(f"P{i}", "S0"): float(v) for i, v in enumerate(values)}, ("S0", "A"): 0.5})
    expected = [f"P{i}" for i in sorted(range(64), key=lambda i: (-values[i], i))]
    assert g.step_sources(64)["S0"] == expected
    full = random_hop_graph(5, n_prompt=8, n_steps=5, density=0.9)
    pruned = full.pruned(fold=False, edge_threshold=0.5)
    assert pruned.graph.number_of_edges() < full.graph.number_of_edges()  # fewer edges, the same influences
    assert pruned.influence() == pytest.approx(full.influence())
