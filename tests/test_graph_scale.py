"""The hop graph at scale (issue 28 item 5): every computation uses every edge whatever the networkx graph
keeps, the kept edges are each node's strongest, and the pruned graph folds long runs of steps into
"N more steps" nodes with a bounded number of edges. Times are measured by benchmarks/hop_graph_scale.py."""

import math

import networkx as nx
import numpy as np
import pytest

from flashtrace.analysis import graph as graph_module
from flashtrace.analysis.graph import OTHER, STEPS_ROLE, HopGraph
from flashtrace.analysis.schema import Trace
from flashtrace.run.bench.synthetic import long_reasoning_trace
from flashtrace.viz.graph import MAX_DRAWN_NODES, hop_graph_figure, node_labels


@pytest.fixture(scope="module")
def long_trace():
    return Trace.from_dict(long_reasoning_trace(260, 120, sentence_tokens=2, seed=3))


@pytest.fixture(scope="module")
def dense(long_trace):
    return HopGraph.from_trace(long_trace)  # 260 tokens: under the edge budget, every edge in `graph`


@pytest.fixture(scope="module")
def sparse(long_trace):
    budget = graph_module.EDGE_BUDGET
    graph_module.EDGE_BUDGET = 100
    try:
        return HopGraph.from_trace(long_trace.model_copy())  # another trace object: built again, not reused
    finally:
        graph_module.EDGE_BUDGET = budget


def test_the_sparse_graph_keeps_each_nodes_strongest_edges(dense, sparse):
    assert dense.graph.number_of_edges() == dense.edges.count > 100
    assert sparse.edges.count == dense.edges.count and sparse.graph.number_of_edges() < dense.graph.number_of_edges()
    for node in sparse.nodes("reasoning") + sparse.nodes("answer"):
        incoming = dense.incoming(node)
        kept = {src: s for src, s, in ((a, d["share"]) for a, _, d in sparse.graph.in_edges(node, data=True))}
        ranked = sorted(incoming.values(), reverse=True)
        assert sorted(kept.values(), reverse=True) == ranked[:len(kept)]  # the strongest, in order
        carried = np.cumsum(ranked)  # the fewest strongest edges that carry KEEP_MASS, at most KEEP_EDGES
        fewest = int(np.argmax(carried >= graph_module.KEEP_MASS * carried[-1] * (1 - 1e-12))) + 1
        assert len(kept) == min(fewest, graph_module.KEEP_EDGES)
        data = sparse.graph.nodes[node]
        assert data["incoming_share"] == pytest.approx(sum(ranked))
        assert data["kept_share"] == pytest.approx(sum(kept.values()))


def test_one_build_per_trace_and_threshold(long_trace, dense):
    assert HopGraph.from_trace(long_trace) is dense  # every view of a trace reads the same graph
    assert HopGraph.from_trace(long_trace, 0.05) is not dense


def test_every_number_uses_every_edge(dense, sparse):
    assert sparse.influence() == pytest.approx(dense.influence(), rel=1e-12)
    assert sparse.evidence(10) == dense.evidence(10)
    assert sparse.hop_depths() == dense.hop_depths()
    assert sparse.step_sources(2) == dense.step_sources(2)
    for node in dense.nodes("prompt")[::7]:
        assert sparse.strongest_path_to(node) == dense.strongest_path_to(node)
        assert sparse.outgoing(node) == dense.outgoing(node) == {b: d["share"] for _, b, d in dense.graph.out_edges(node, data=True)}
    step = dense.nodes("reasoning")[-1]
    assert sparse.incoming(step) == dense.incoming(step)
    src = next(iter(dense.incoming(step)))
    assert sparse.share(src, step) == dense.graph.edges[src, step]["share"] and sparse.share(step, src) == 0.0
    again = HopGraph.from_dict(sparse.to_dict())  # every edge is written, not only the kept ones
    assert again.graph.number_of_edges() == dense.graph.number_of_edges()
    assert again.influence() == pytest.approx(dense.influence(), rel=1e-12)


def test_influence_against_the_networkx_paths(dense):
    reverse_order = list(reversed(list(nx.topological_sort(dense.graph))))
    expected = dict.fromkeys(dense.graph.nodes, 0.0)
    expected[dense.answer] = 1.0
    for node in reverse_order:
        if node != dense.answer:
            expected[node] = math.fsum(s * expected[d] for _, d, s in dense.graph.out_edges(node, data="share"))
    assert dense.influence() == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_pruning_folds_runs_of_steps(dense):
    influence = dense.influence()
    steps = dense.nodes("reasoning")
    graph = dense.pruned(max_steps=10, max_edges=60)
    drawn = [n for n in graph.graph if graph.graph.nodes[n]["role"] == "reasoning"]
    runs = [n for n in graph.graph if graph.graph.nodes[n]["role"] == STEPS_ROLE]
    assert len(drawn) == 10 and 1 <= len(runs) <= 11
    top = sorted(steps, key=lambda n: -influence[n])[:10]
    assert set(drawn) == set(top)  # the most influential steps stay
    folded = [m for r in runs for m in graph.graph.nodes[r]["folded"]]
    assert sorted(folded + drawn, key=steps.index) == steps and len(set(folded)) == len(folded)
    for r in runs:
        members = graph.graph.nodes[r]["folded"]
        assert len(members) >= 2 and members == steps[steps.index(members[0]):steps.index(members[-1]) + 1]  # a run
        assert graph.graph.nodes[r]["influence"] == pytest.approx(sum(influence[m] for m in members))
        assert graph.graph.nodes[r]["text"] == f"{len(members)} more steps ({members[0]}–{members[-1]})"
    assert graph.graph.number_of_edges() <= 60 + len(graph.graph)  # the greedy edges stop at the cap
    assert nx.is_directed_acyclic_graph(graph.graph)
    for src, dst, share in graph.graph.edges(data="share"):
        assert 0 < share <= 1 + 1e-9
        if graph.graph.nodes[src].get("folded") is None and graph.graph.nodes[dst].get("folded") is None:
            assert share == dense.graph.edges[src, dst]["share"]  # true shares between nodes drawn as themselves
    assert len(dense.pruned(fold=False, max_steps=10).graph) == len(dense.graph)  # fold=False folds nothing


def test_edges_into_a_run_weigh_its_members_by_influence(dense):
    influence = dense.influence()
    graph = dense.pruned(max_steps=10, max_edges=10_000, edge_threshold=1.0)
    run = next(n for n in graph.graph if graph.graph.nodes[n]["role"] == STEPS_ROLE)
    members = graph.graph.nodes[run]["folded"]
    for src, _, share in graph.graph.in_edges(run, data="share"):
        if graph.graph.nodes[src].get("folded") is None:
            weights = np.array([influence[m] for m in members])
            shares = np.array([dense.share(src, m) for m in members])
            assert share == pytest.approx(float(shares @ weights / weights.sum()))


def test_a_large_unpruned_graph_is_drawn_pruned(long_trace, dense):
    assert len(dense.graph) > MAX_DRAWN_NODES
    fig = hop_graph_figure(dense, long_trace)
    nodes = sum(len(t.customdata) for t in fig.data if t.mode == "markers+text")
    assert nodes <= 12 + 1 + 2 * 40 + 1 + 1 and fig.layout.meta["pruning"] is not None
    assert any(t.meta == STEPS_ROLE for t in fig.data if t.mode == "markers+text")
    labels = node_labels(dense.pruned())
    shown = [labels[n] for n in dense.pruned().nodes("reasoning")]
    assert all(label.startswith("step ") for label in shown)
    numbers = [int(label.split(":")[0].split()[1]) for label in shown]
    assert numbers == [dense.nodes("reasoning").index(n) + 1 for n in dense.pruned().nodes("reasoning")]
    assert OTHER in dense.pruned().graph  # 130 prompt sentences: the weak ones fold too
