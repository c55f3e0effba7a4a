"""Issue 30, defect 4: the hop graph's size is bounded by construction (at most `MAX_IN_EDGES` incoming
edges a node), not quadratic in the number of reasoning steps; what a node's undrawn edges carried is kept."""

from flashtrace.analysis import graph as graph_module
from flashtrace.analysis.graph import HopGraph
from flashtrace.analysis.schema import Trace
from flashtrace.run.bench.synthetic import synthetic_trace_data


def test_defect04_edges_grow_linearly_with_one_token_steps():
    trace = Trace.from_dict(synthetic_trace_data(800, hops=1, n_steps=400))
    graph = HopGraph.from_trace(trace)
    nodes = graph.graph.number_of_nodes()
    assert nodes == 402
    limit = getattr(graph_module, "MAX_IN_EDGES", 64)
    assert graph.graph.number_of_edges() <= limit * nodes  # was 80,000+ (every earlier segment, every step)
    answer = graph.answer
    kept = sum(graph.incoming(answer).values())
    total = kept + graph.graph.nodes[answer].get("undrawn_share", 0.0)
    vector = trace.steps.vectors[answer]
    start = next(s.start for s in trace.segments if s.id == answer)
    assert abs(total - sum(vector[:start]) / sum(vector)) < 1e-9  # the incoming total is kept
