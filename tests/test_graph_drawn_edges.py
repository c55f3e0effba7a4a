"""Issue 30, defect 4: the drawn hop graph's size is bounded by construction (past `EDGE_BUDGET` edges, each
node keeps at most `KEEP_EDGES` incoming ones), not quadratic in the number of reasoning steps, while every
number the graph reports still uses all its edges."""

from flashtrace.analysis.graph import EDGE_BUDGET, KEEP_EDGES, HopGraph
from flashtrace.analysis.schema import Trace
from flashtrace.run.bench.synthetic import synthetic_trace_data


def test_drawn_edges_grow_linearly_with_one_token_steps():
    trace = Trace.from_dict(synthetic_trace_data(800, hops=1, n_steps=400))
    graph = HopGraph.from_trace(trace)
    nodes = graph.graph.number_of_nodes()
    assert nodes == 402
    assert graph.edges.count > EDGE_BUDGET  # every earlier segment feeds every step: 80,000+ edges
    assert graph.graph.number_of_edges() <= KEEP_EDGES * nodes
    answer = graph.answer
    node = graph.graph.nodes[answer]
    assert 0 < node["kept_share"] <= node["incoming_share"]
    vector = trace.steps.vectors[answer]
    start = next(s.start for s in trace.segments if s.id == answer)
    expected = sum(vector[:start]) / sum(vector)
    assert abs(sum(graph.incoming(answer).values()) - expected) < 1e-9  # the numbers use every edge
    assert abs(node["incoming_share"] - expected) < 1e-9
