"""The hop-graph drawing: text labels (escaped once, quotes as they are), folded inputs, colours, size."""

import re
import zlib

import networkx as nx
import pytest

from flashtrace.analysis.graph import OTHER, HopGraph
from flashtrace.viz.graph import (PATH_COLOR, SELECTED_COLOR, hop_graph_figure, node_label, path_text, plain,
                                  short_label)

NASTY = 'Keep <b>bold</b> & "quoted" \'text\' safe.'


def _graph(n_prompt: int = 20) -> HopGraph:
    """T0, P0.., S0, S1, A: every prompt sentence feeds both steps and the answer; P3 holds markup."""
    graph = nx.DiGraph(answer="A")
    texts = {"T0": "<|im_start|>system\nYou are helpful<|im_end|>", "S0": "First <step> here.", "S1": NASTY,
             "A": "42 & <more>", **{f"P{i}": f"Sentence number {i} says something long enough to be cut." for i in range(n_prompt)}}
    texts["P3"] = NASTY
    ids = ["T0", *(f"P{i}" for i in range(n_prompt)), "S0", "S1", "A"]
    for order, node in enumerate(ids):
        role = {"T": "template", "P": "prompt", "S": "reasoning", "A": "answer"}[node[0]]
        graph.add_node(node, id=node, role=role, text=texts[node], start=order, end=order + 1, order=order)
    for dst in ("S0", "S1", "A"):
        srcs = [n for n in ids[: ids.index(dst)]]
        weights = [3.0 if s in ("P3", "S1") else 1.0 + (zlib.crc32((s + dst).encode()) % 5) / 10 for s in srcs]
        total = sum(weights) * 1.25
        for src, w in zip(srcs, weights):
            graph.add_edge(src, dst, share=w / total, raw_share=w / total)
    return HopGraph(graph)


def _nodes(fig) -> dict[str, tuple[str, str, str]]:
    return {n: (t.meta, label, hover) for t in fig.data if t.mode == "markers+text"
            for n, label, hover in zip(t.customdata, t.text, t.hovertext)}


def test_labels_are_first_words_escaped_once():
    assert short_label("  Question:\n What is   the value of VAR X?  ", 60) == "Question: What is the value of VAR X?"
    assert short_label("One two three four five six seven eight nine ten", 20) == "One … nine ten"  # both ends, whole words
    assert short_label("<|im_end|>\n<|im_start|>assistant") == "assistant"
    assert plain(NASTY) == 'Keep &lt;b&gt;bold&lt;/b&gt; &amp; "quoted" \'text\' safe.'
    fig = hop_graph_figure(_graph(4))
    nodes = _nodes(fig)
    role, label, hover = nodes["P3"]
    assert role == "prompt" and label == plain(node_label(_graph(4), "P3")) and "&lt;b&gt;" in label
    assert "&quot;" not in label and "&#x27;" not in label and "&amp;amp;" not in hover
    assert '"quoted"' in hover and "&lt;b&gt;bold&lt;/b&gt;" in hover and "<b>bold" not in hover
    assert nodes["S0"][1] == "step 1: First &lt;step&gt; here."  # steps are numbered, text escaped
    assert nodes["T0"][1] == "template: system You are helpful"
    assert "&lt;|im_start|&gt;" in nodes["T0"][2]  # hover shows the whole text, markers included, escaped
    assert nodes["A"][1] == "42 &amp; &lt;more&gt;"
    for trace in fig.data:  # edge hovers name both ends in words, escaped, and no segment id
        if trace.name == "edge info":
            assert any(t.startswith("“Keep &lt;b&gt;b") for t in trace.text)
            assert not any(re.search(r"\b[PST]\d+\b", t) for t in trace.text), trace.text
    assert not any(re.search(r"\b[PST]\d+\b", hover) for _, _, hover in nodes.values())


def test_node_ids_show_in_the_hovers_only_when_asked_for():
    fig = hop_graph_figure(_graph(4), ids=True)
    nodes = _nodes(fig)
    assert nodes["P3"][2].startswith("<b>P3</b> · prompt sentence")
    edges = next(t for t in fig.data if t.name == "edge info")
    assert any(t.startswith("P3 “Keep &lt;b&gt;b") for t in edges.text)
    plain_edges = next(t for t in hop_graph_figure(_graph(4)).data if t.name == "edge info")
    assert any("of step 1's attribution" in t for t in plain_edges.text) or any(
        "of the answer's attribution" in t for t in plain_edges.text)


def test_folded_inputs_selected_ring_and_paths_apart():
    graph = _graph(30).pruned(0.8, max_inputs=8)
    assert OTHER in graph.graph
    fig = hop_graph_figure(graph, selected="S1")
    nodes = _nodes(fig)
    inputs = [n for n, (role, _, _) in nodes.items() if role in ("template", "prompt", "other")]
    assert len(inputs) == 9
    folded = graph.graph.nodes[OTHER]["folded"]
    assert nodes[OTHER][1] == f"other context ({len(folded)} sentences)" and len(folded) == 31 - 8
    assert fig.layout.meta["folded"] == len(folded) and fig.layout.meta["inputs"] == 9
    assert "P3" in nodes  # the most influential prompt sentence is on show
    outline = {n: (c, w) for t in fig.data if t.mode == "markers+text"
               for n, c, w in zip(t.customdata, t.marker.line.color, t.marker.line.width)}
    assert outline.pop("S1") == (SELECTED_COLOR, 5) and all(c != SELECTED_COLOR for c, _ in outline.values())
    assert nodes["S1"][1].startswith("<b>")  # the selected node's label is bold too
    paths = [t for t in fig.data if t.name == "evidence path"]
    assert len(paths) == 1 and paths[0].line.color == PATH_COLOR != SELECTED_COLOR
    assert fig.layout.height <= 600  # a folded graph fits a 720-pixel-high screen
    top = graph.evidence(1)[0][0]
    assert path_text(graph, graph.strongest_path_to(top)).startswith("“42 & <more>” ← ")  # not escaped: for tables
    assert path_text(graph, graph.strongest_path_to(top), ids=True).startswith("A “42 & <more>” ← ")
    assert node_label(graph, OTHER) == nodes[OTHER][1]


def test_show_all_grows_the_figure_to_keep_labels_apart():
    graph = _graph(60).pruned(fold=False)
    fig = hop_graph_figure(graph)
    n_inputs = fig.layout.meta["inputs"]
    assert n_inputs == 61 and fig.layout.meta["folded"] == 0
    assert fig.layout.height / n_inputs >= 15


@pytest.mark.parametrize("selected", [None, "nope"])
def test_no_outline_without_a_shown_selection(selected):
    fig = hop_graph_figure(_graph(3), selected=selected)
    assert all(c != SELECTED_COLOR for t in fig.data if t.mode == "markers+text" for c in t.marker.line.color)
