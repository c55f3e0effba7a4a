"""The hop graph: edge shares, DAG and threshold properties, strongest paths, hop depths, JSON."""

import json
import math

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flashtrace.evaluate.paths import make_examples, path_hits, value_line
from flashtrace.analysis.graph import OTHER, HopGraph, incoming_shares
from flashtrace.analysis.schema import StepRecord
from flashtrace.run.tracing import attribute, prepare

from .graph_factory import random_hop_graph

PROMPT = "Ann has 3 red balls. Ben has 4 blue balls. Cid has 9 green balls. How many do Ann and Ben have?"
RESPONSE = "1. Ann has 3 balls.\n2. Ben has 4 balls.\n3. So 3 + 4 = 7.\nAnswer: 7 balls"


@pytest.fixture(scope="module")
def prepared():
    from flashtrace.engine.models import load_model

    return prepare(load_model("tiny-llama"), PROMPT, RESPONSE)


@pytest.fixture(scope="module")
def trace(prepared):
    return attribute(prepared, hops=1, steps=True)


def _with_vectors(trace, rng):
    """The trace with random non-negative causal step vectors (each step sees only up to its end)."""
    vectors = {}
    for seg in trace.segments:
        if seg.id in trace.steps.vectors:
            vec = rng.random(trace.n_tokens) * (rng.random(trace.n_tokens) < 0.7)
            vec[seg.end:] = 0
            vectors[seg.id] = vec.tolist()
    return trace.model_copy(update={"steps": StepRecord(vectors=vectors, seconds=0.0)})


def test_shares_are_segment_sums(trace):
    graph = HopGraph.from_trace(trace)
    segs = {s.id: s for s in trace.segments}
    for src, dst, share in graph.graph.edges(data="share"):
        vec = trace.steps.vectors[dst]
        expected = sum(vec[segs[src].start:segs[src].end]) / sum(vec)
        assert share == pytest.approx(expected, rel=1e-9)
    assert set(graph.graph.nodes) == set(segs)
    node = graph.graph.nodes["A"]
    assert (node["role"], node["start"], node["end"]) == ("answer", segs["A"].start, segs["A"].end)
    # every positive share before a step is an edge (threshold 0)
    n_expected = sum(1 for dst in trace.steps.vectors for s in trace.segments
                     if s.end <= segs[dst].start and sum(trace.steps.vectors[dst][s.start:s.end]) > 0)
    assert graph.graph.number_of_edges() == n_expected


def test_incoming_shares_reference():
    vec = np.array([1.0, 2.0, 0.0, 3.0, 4.0])
    assert incoming_shares(vec, [(0, 2), (2, 4), (4, 5)], 2).tolist() == [0.3, 0.3]
    assert incoming_shares(np.zeros(3), [(0, 3)], 1).tolist() == [0.0]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), low=st.floats(0, 0.5), high=st.floats(0, 0.99), real=st.booleans())
def test_graph_properties(trace, seed, low, high, real):
    tr = trace if real else _with_vectors(trace, np.random.default_rng(seed))
    low, high = min(low, high), max(low, high)
    g_low, g_high = HopGraph.from_trace(tr, low), HopGraph.from_trace(tr, high)
    for g in (g_low, g_high):
        graph = g.graph
        assert nx.is_directed_acyclic_graph(graph)
        for src, dst in graph.edges:
            assert graph.nodes[src]["order"] < graph.nodes[dst]["order"]  # forward in the text
            assert graph.nodes[src]["end"] <= graph.nodes[dst]["start"]
            assert graph.edges[src, dst]["raw_share"] >= g.threshold
        for node in graph.nodes:
            assert sum(g.incoming(node).values()) <= 1 + 1e-9
    assert set(g_high.graph.edges) <= set(g_low.graph.edges)  # raising the threshold never adds edges
    for node in g_high.graph.nodes:  # renormalisation keeps each node's incoming total
        if g_high.incoming(node):
            assert sum(g_high.incoming(node).values()) == pytest.approx(sum(g_low.incoming(node).values()), rel=1e-9)


def _all_paths(graph: HopGraph, min_hops: int = 1):
    """Strengths of every answer → prompt path with at least `min_hops` edges, strongest first."""
    out = []
    for p in graph.nodes("prompt"):
        for path in nx.all_simple_paths(graph.graph.reverse(copy=False), graph.answer, p):
            if len(path) - 1 >= min_hops:
                out.append(math.prod(graph.graph.edges[b, a]["share"] for a, b in zip(path, path[1:])))
    return sorted(out, reverse=True)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), threshold=st.sampled_from([0.0, 0.02, 0.05, 0.2]))
def test_strongest_paths_match_brute_force(trace, seed, threshold):
    graph = HopGraph.from_trace(_with_vectors(trace, np.random.default_rng(seed)), threshold)
    paths = graph.strongest_paths(6)
    brute = _all_paths(graph)[:6]
    assert [p.strength for p in paths] == pytest.approx(brute, rel=1e-9)
    for p in paths:
        assert p.nodes[0] == "A" and graph.graph.nodes[p.end]["role"] == "prompt"
        assert p.hops == len(p.nodes) - 1
    through = graph.strongest_paths(3, through_reasoning=True)
    brute_through = _all_paths(graph, min_hops=2)[:3]
    if threshold <= 0.05:  # dense random vectors: paths through a reasoning step exist
        assert brute_through
    assert [p.strength for p in through] == pytest.approx(brute_through, rel=1e-9)
    for p in through:
        assert p.hops >= 2 and all(graph.graph.nodes[n]["role"] == "reasoning" for n in p.nodes[1:-1])
    depths = graph.hop_depths()
    assert set(depths) == set(graph.nodes("prompt"))
    for node, depth in depths.items():
        lengths = [len(path) - 1 for path in nx.all_simple_paths(graph.graph.reverse(copy=False), "A", node)]
        assert depth == (min(lengths) if lengths else None)


def test_threshold_prunes_and_depths_grow(trace):
    dense, sparse = HopGraph.from_trace(trace), HopGraph.from_trace(trace, 0.1)
    assert sparse.graph.number_of_edges() < dense.graph.number_of_edges()
    assert all(d == 1 for d in dense.hop_depths().values())  # the answer sees every prompt sentence directly
    deeper = 0
    for node, depth in sparse.hop_depths().items():
        lengths = [len(p) - 1 for p in nx.all_simple_paths(sparse.graph.reverse(copy=False), "A", node)]
        assert depth == (min(lengths) if lengths else None)
        deeper += depth is None or depth > 1
    assert deeper > 0  # pruning the direct edges pushes some prompt sentences further from the answer
    with pytest.raises(ValueError, match="threshold"):
        HopGraph.from_trace(trace, 1.0)


def test_json_round_trip(trace):
    graph = HopGraph.from_trace(trace, 0.05)
    again = HopGraph.from_json(graph.to_json())
    assert again.threshold == 0.05 and again.answer == "A"
    assert dict(again.graph.nodes(data=True)) == dict(graph.graph.nodes(data=True))
    assert sorted(again.graph.edges(data=True)) == sorted(graph.graph.edges(data=True))
    assert again.strongest_paths(4) == graph.strongest_paths(4)
    assert json.loads(again.to_json()) == json.loads(graph.to_json())  # saved again: the same nodes and edges, in order
    for bad in ('{"graph": {"nodes": []}}', '{"threshold": 0, "graph": {"directed": true, "nodes": [{"id": "x"}], '
                '"edges": []}}'):
        with pytest.raises(ValueError):
            HopGraph.from_json(bad)


def test_trace_without_steps_is_refused(prepared):
    with pytest.raises(ValueError, match="steps=True"):
        HopGraph.from_trace(attribute(prepared, hops=1))


def test_vartrack_examples_are_deterministic():
    a, b = make_examples(20, seed=0), make_examples(20, seed=0)
    assert a == b and len({ex.prompt for ex in a}) == 20
    for ex in a:
        lines = ex.prompt.splitlines()
        assert value_line(ex) in lines and ex.response.endswith(f"Answer: {ex.answer}")
        assert ex.gold_texts() and all(text in lines for text in ex.gold_texts())
        chain = ex.meta["chain"]  # the response restates the chain from the asked variable back to the value
        assert ex.response.splitlines()[:-1] == [f"VAR {chain[i]} = VAR {chain[i - 1]}." for i in
                                                 range(len(chain) - 1, 0, -1)] + [value_line(ex)]


@pytest.mark.slow
def test_vartrack_strongest_path_hits_the_value_sentence(smollm):
    """Measured on SmolLM2 with the default `paper` stop tokens (benchmarks/vartrack_paths.py, `lines`
    layout of the vartrack task): direct path 20/20, through the reasoning 19/20 (docs/method.md). The floors
    guard against regressions."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # on a busy machine one thread is much faster than two
    try:
        result = path_hits(smollm, make_examples(20, seed=0))
    finally:
        torch.set_num_threads(threads)
    assert result["hit_rate"] >= 0.85
    assert result["hit_rate_through_reasoning"] >= 0.85


# --- influence and pruning ------------------------------------------------------------------------------
def _brute_influence(graph: HopGraph, node: str) -> float:
    if node == graph.answer:
        return 1.0
    return sum(math.prod(graph.graph.edges[a, b]["share"] for a, b in zip(path, path[1:]))
               for path in nx.all_simple_paths(graph.graph, node, graph.answer))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), density=st.floats(0.2, 1.0))
def test_influence_is_the_sum_over_paths_of_share_products(seed, density):
    graph = random_hop_graph(seed, density=density)
    influence = graph.influence()
    for node in graph.graph.nodes:
        assert influence[node] == pytest.approx(_brute_influence(graph, node), rel=1e-9, abs=1e-12)
    # the answer's attribution flows back and stops on the inputs: their influences add up to what reaches them
    inputs = sum(influence[n] for n in graph.nodes("template") + graph.nodes("prompt"))
    assert 0 <= inputs <= 1 + 1e-9
    assert [n for n, _ in graph.evidence()] == sorted((n for n in graph.nodes("prompt") if influence[n] > 0),
                                                      key=lambda n: (-influence[n], int(n[1:])))
    for node in graph.nodes("prompt"):  # the best path to a node: the largest product over all its paths
        best = graph.strongest_path_to(node)
        products = [math.prod(graph.graph.edges[b, a]["share"] for a, b in zip(p, p[1:]))
                    for p in nx.all_simple_paths(graph.graph.reverse(copy=False), "A", node)]
        if not products:
            assert best is None
        else:
            assert best.nodes[0] == "A" and best.end == node
            assert best.strength == pytest.approx(max(products), rel=1e-9)
            assert best.strength == pytest.approx(math.prod(graph.graph.edges[b, a]["share"]
                                                            for a, b in zip(best.nodes, best.nodes[1:])), rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), keep=st.sampled_from([0.3, 0.8, 1.0]), edges=st.sampled_from([0.5, 0.98]),
       cap=st.integers(1, 8), k=st.integers(0, 2))
def test_pruning_keeps_the_evidence_and_folds_the_rest(seed, keep, edges, cap, k):
    full = random_hop_graph(seed, n_prompt=12, n_steps=4)
    influence = full.influence()
    inputs = full.nodes("template") + full.nodes("prompt")
    graph = full.pruned(keep, edges, max_inputs=cap, step_sources=k)
    shown = [n for n in graph.graph.nodes if graph.graph.nodes[n]["role"] in ("template", "prompt")]
    folded = graph.graph.nodes[OTHER]["folded"] if OTHER in graph.graph else []
    assert sorted(shown + folded) == sorted(inputs) and not set(shown) & set(folded)
    assert len(folded) != 1 and (not folded or len(shown) <= cap)
    if folded:
        other = graph.graph.nodes[OTHER]
        assert other["text"] == f"other context ({len(folded)} sentences)"
        assert other["influence"] == pytest.approx(sum(influence[n] for n in folded))
        for dst, share in ((d, s) for _, d, s in graph.graph.out_edges(OTHER, data="share")):
            assert share == pytest.approx(sum(full.graph.edges[n, dst]["share"] for n in folded
                                              if full.graph.has_edge(n, dst)))
    # first the most influential prompt segment, then what each step reads most (first choices first)
    sources = full.step_sources(k)
    for dst, srcs in sources.items():
        ranked = sorted((s for s in full.incoming(dst) if s.startswith("P")), key=lambda s: -full.incoming(dst)[s])
        assert srcs == ranked[:k]
    priority = [n for n, _ in full.evidence(1)] + [srcs[r] for r in range(k) for srcs in sources.values() if r < len(srcs)]
    assert set(list(dict.fromkeys(priority))[:cap]) <= set(shown)
    held = sum(influence[n] for n in shown)
    if folded and len(shown) < cap:
        assert held >= keep * sum(influence[n] for n in inputs) - 1e-9
    for node in graph.graph.nodes:
        assert graph.graph.nodes[node]["influence"] == pytest.approx(influence.get(node, graph.graph.nodes[node]["influence"]))
    # edges keep their true shares and carry at least `edges` of the influence flowing along all edges
    flow = lambda g: sum(s * influence[d] for _, d, s in g.graph.edges(data="share"))  # noqa: E731
    assert flow(graph) >= edges * flow(full) - 1e-9
    for src, dst, share in graph.graph.edges(data="share"):
        if src != OTHER:
            assert share == full.graph.edges[src, dst]["share"]
    for node in shown:  # no shown input floats free: its strongest edge is kept
        out = [(s * influence[d], d) for _, d, s in full.graph.out_edges(node, data="share") if s * influence[d] > 0]
        if out:
            assert graph.graph.has_edge(node, max(out)[1])
    for dst, srcs in sources.items():  # each step's kept sources keep their edge into it
        assert all(graph.graph.has_edge(src, dst) for src in srcs if src in shown)
    everything = full.pruned(keep, edges, max_inputs=cap, step_sources=k, fold=False)
    assert OTHER not in everything.graph and set(everything.graph.nodes) == set(full.graph.nodes)


def test_pruning_on_the_long_gallery_trace():
    from flashtrace.store.gallery import load_gallery_trace

    trace = load_gallery_trace("long-vartrack")
    full = HopGraph.from_trace(trace)
    graph = full.pruned()
    inputs = [n for n in graph.graph.nodes if graph.graph.nodes[n]["role"] in ("template", "prompt", "other")]
    n_inputs = sum(1 for s in trace.segments if s.role in ("template", "prompt"))
    assert n_inputs > 150 and len(inputs) <= 15
    folded = graph.graph.nodes[OTHER]["folded"]
    assert len(folded) == n_inputs - (len(inputs) - 1)
    assert graph.graph.nodes[OTHER]["text"] == f"other context ({len(folded)} sentences)"
    assert set(graph.graph.nodes[OTHER]) == {"id", "role", "text", "start", "end", "order", "folded", "influence"}
    value = next(s.id for s in trace.segments if s.role == "prompt" and s.text.strip() == "VAR BLYUX = 47977.")
    assert value in inputs and graph.strongest_path_to(value) is not None  # the value sentence and its path stay
    assert len(full.pruned(fold=False).graph) == len(trace.segments)


# --- graphs of edited traces: segments, step vectors, the cache of built graphs ---------------------------------
def test_a_step_right_after_the_only_prompt_segment_gets_its_edges(trace):
    """Segments without a template segment (a model with no chat template and no BOS): the first step is the
    second segment; a step whose vector is all zero has no edges, and the steps after it still do; a source
    that gives a step nothing is no edge; a share exactly at the threshold stays."""
    from flashtrace.analysis.schema import Trace

    data = json.loads(trace.to_json())
    segs = data["segments"]
    prompt_end = max(s["end"] for s in segs if s["role"] in ("template", "prompt"))
    steps = [s for s in segs if s["role"] in ("reasoning", "answer")]
    first, second, answer = steps[0], steps[1], steps[-1]
    data["segments"] = [{"id": "P0", "role": "prompt", "text": "the prompt", "start": 0, "end": prompt_end,
                         "order": 0}] + [dict(s, order=i + 1) for i, s in enumerate(steps)]
    n = len(data["tokens"])

    def vec(parts):  # {(start, end): value} spread evenly
        out = [0.0] * n
        for (lo, hi), value in parts.items():
            for i in range(lo, hi):
                out[i] = value / (hi - lo)
        return out

    vectors = {s["id"]: vec({(s["start"], s["end"]): 1.0}) for s in steps}  # each step on itself only
    vectors[first["id"]] = vec({(0, prompt_end): 0.25, (first["start"], first["end"]): 0.75})
    vectors[second["id"]] = [0.0] * n
    vectors[answer["id"]] = vec({(0, prompt_end): 0.5, (first["start"], first["end"]): 0.25,
                                 (answer["start"], answer["end"]): 0.25})
    data["steps"] = {"vectors": vectors, "seconds": 0.0}
    made = Trace.from_dict(data)
    g = HopGraph.from_trace(made)
    at = g.graph.edges["P0", first["id"]]["raw_share"]  # 0.25, as the sums round it
    assert HopGraph.from_trace(made, at).incoming(first["id"]) == {"P0": pytest.approx(0.25)}  # at τ: kept
    assert g.incoming(first["id"]) == {"P0": pytest.approx(0.25)}
    assert g.incoming(second["id"]) == {}
    assert g.incoming(answer["id"]) == {"P0": pytest.approx(0.5), first["id"]: pytest.approx(0.25)}
    assert g.graph.edges["P0", first["id"]]["raw_share"] == pytest.approx(0.25)


def test_a_graph_built_for_a_trace_is_kept_while_the_trace_lives_and_dropped_with_it(trace):
    import gc

    from flashtrace.analysis import graph as graph_module

    copy = trace.model_copy(deep=True)
    key = (id(copy), 0.0)
    assert HopGraph.from_trace(copy) is HopGraph.from_trace(copy) and key in graph_module._BUILT
    del copy
    gc.collect()
    assert key not in graph_module._BUILT


def test_a_graph_at_exactly_its_edge_budget_holds_every_edge(trace, monkeypatch):
    from flashtrace.analysis import graph as graph_module

    count = HopGraph.from_trace(trace).edges.count
    monkeypatch.setattr(graph_module, "EDGE_BUDGET", count)
    at_budget = HopGraph.from_trace(trace.model_copy(deep=True))
    assert at_budget.graph.number_of_edges() == count
    assert not any("kept_share" in d for _, d in at_budget.graph.nodes(data=True))
    assert HopGraph.from_trace(trace, 0.05).pruned().threshold == 0.05
    with pytest.raises(ValueError) as refused:
        HopGraph.from_trace(trace.model_copy(update={"steps": None}))
    assert str(refused.value) == "this trace has no step-level attribution; make it with attribute(..., steps=True)"


def test_a_trace_file_whose_segments_name_no_answer_gives_a_graph_without_one(trace):
    data = json.loads(trace.to_json())
    for seg in data["segments"]:
        seg["role"] = "reasoning" if seg["role"] == "answer" else seg["role"]
    from flashtrace.analysis.schema import Trace

    g = HopGraph.from_trace(Trace.from_dict(data))
    assert g.answer is None and g.evidence() == [] and g.strongest_paths() == []
    assert set(g.influence().values()) == {0.0}
