"""The Hop graph page (AppTest): the graph, its threshold, node drill-down and the step-influence panel."""

import html

import pytest

from flashtrace.store.gallery import load_gallery_trace
from flashtrace.analysis.facts import analyse
from flashtrace.analysis.graph import OTHER, HopGraph
from flashtrace.viz import heatmap_values, step_values
from flashtrace.app.ui import plain
from flashtrace.viz.graph import node_label, node_labels

from .conftest import charts, figure, no_problems

GRAPH = "pages/3_Hop_graph.py"


@pytest.fixture(scope="module")
def vartrack():
    return load_gallery_trace("vartrack")


def _edges(spec) -> int:
    return spec["layout"]["meta"]["edges"]


def _nodes(spec) -> dict[str, tuple[str, str, str]]:
    """``{node id: (role, label, hover)}`` of the node traces of a hop-graph figure."""
    return {n: (d["meta"], label, hover) for d in spec["data"] if d.get("mode") == "markers+text"
            for n, label, hover in zip(d["customdata"], d["text"], d["hovertext"])}


def test_graph_renders_with_every_layer(open_page, vartrack):
    at = open_page(GRAPH, trace="gallery:vartrack")
    no_problems(at)
    spec = charts(at)["hop_graph"]
    nodes = _nodes(spec)
    assert {"prompt", "reasoning", "answer", "other"} <= {role for role, _, _ in nodes.values()}
    folded = spec["layout"]["meta"]["folded"]
    assert folded > 1 and len(nodes) - 1 + folded == len(vartrack.segments)
    assert set(nodes) - {OTHER} <= {s.id for s in vartrack.segments}
    expected = HopGraph.from_trace(vartrack).pruned(0.8)
    assert _edges(spec) == expected.graph.number_of_edges() and set(nodes) == set(expected.graph.nodes)
    # every node is labelled with its text (escaped for Plotly, quotes as they are); hover keeps all of it
    labels = node_labels(expected)
    assert len(set(labels.values())) == len(labels)  # no two nodes read the same
    for seg in vartrack.segments:
        if seg.id in nodes:
            role, label, hover = nodes[seg.id]
            assert label == html.escape(labels[seg.id], quote=False)
            assert html.escape(" ".join(seg.text.split())[:40], quote=False) in hover.replace("<br>", " ")
    assert f"other context ({folded} sentences)" == nodes[OTHER][1]


def test_influence_control_and_unfolding(open_page, vartrack):
    at = open_page(GRAPH, trace="gallery:vartrack")
    wide = charts(at)["hop_graph"]
    at.select_slider(key="qp_keep").set_value("50%").run()
    no_problems(at)
    narrow = charts(at)["hop_graph"]
    assert narrow["layout"]["meta"]["pruning"]["node_threshold"] == 0.5
    assert narrow["layout"]["meta"]["inputs"] <= wide["layout"]["meta"]["inputs"]
    assert set(_nodes(narrow)) == set(HopGraph.from_trace(vartrack).pruned(0.5).graph.nodes)
    assert str(at.query_params["keep"]).strip("[]'") == "50%"
    at.toggle(key="all_inputs").set_value(True).run()
    no_problems(at)
    every = charts(at)["hop_graph"]
    assert sorted(_nodes(every)) == sorted(s.id for s in vartrack.segments) and every["layout"]["meta"]["folded"] == 0
    assert str(at.query_params["inputs"]).strip("[]'") == "all"


def test_long_trace_folds_to_at_most_15_inputs(open_page):
    trace = load_gallery_trace("long-vartrack")
    n_inputs = sum(1 for s in trace.segments if s.role in ("template", "prompt"))
    at = open_page(GRAPH, trace="gallery:long-vartrack")
    no_problems(at)
    spec = charts(at)["hop_graph"]
    inputs = [n for n, (role, _, _) in _nodes(spec).items() if role in ("template", "prompt", "other")]
    assert len(inputs) <= 15 < n_inputs
    assert spec["layout"]["meta"]["folded"] == n_inputs - (len(inputs) - 1)
    assert spec["layout"]["height"] <= 600  # the folded graph fits a 720-pixel-high screen
    # the value sentence the answer is copied from is on show, with its text as label
    value = next(s for s in trace.segments if s.text.strip() == "VAR BLYUX = 47977.")
    assert _nodes(spec)[value.id][1] == "VAR BLYUX = 47977."
    evidence = at.dataframe[0].value
    assert "VAR BLYUX = 47977." in list(evidence["sentence"])
    # the folded node opens into a list of what it holds
    at.selectbox(key="qp_node").set_value(OTHER).run()
    no_problems(at)
    assert len(at.dataframe[-1].value) == spec["layout"]["meta"]["folded"]


def test_selected_step_shows_its_own_heatmap(open_page, vartrack):
    step = next(s.id for s in vartrack.segments if s.role == "reasoning")
    at = open_page(GRAPH, trace="gallery:vartrack", node=step)
    no_problems(at)
    label = node_label(HopGraph.from_trace(vartrack), step, 60)
    assert at.subheader[0].value == f"Reasoning step · “{plain(label)}”"  # no id unless Details is on
    values = heatmap_values(figure(charts(at)["token_heatmap"]), vartrack)
    assert values == pytest.approx(step_values(vartrack, step))
    # choosing another node in the list moves the drill-down and the URL
    answer = next(s.id for s in vartrack.segments if s.role == "answer")
    at.selectbox(key="qp_node").set_value(answer).run()  # the answer's link name is its id
    values = heatmap_values(figure(charts(at)["token_heatmap"]), vartrack)
    assert values == pytest.approx(step_values(vartrack, answer))
    assert str(at.query_params["node"]).strip("[]'") == answer


def test_a_step_is_named_in_the_link_by_the_number_the_page_shows(open_page, vartrack):
    steps = [s.id for s in vartrack.segments if s.role == "reasoning"]
    graph = HopGraph.from_trace(vartrack)
    at = open_page(GRAPH, trace="gallery:vartrack", node=steps[2])  # an older link, by the segment's id
    no_problems(at)
    assert node_label(graph, steps[2], 60).startswith("step 3: ")
    assert str(at.query_params["node"]).strip("[]'") == "step-3"
    assert at.selectbox(key="qp_node").value == "step-3"
    again = open_page(GRAPH, trace="gallery:vartrack", node="step-3")  # the link as the page now writes it
    assert again.subheader[0].value == at.subheader[0].value == f"Reasoning step · “{plain(node_label(graph, steps[2], 60))}”"
    again.selectbox(key="qp_node").set_value("A").run()
    assert str(again.query_params["node"]).strip("[]'") == "A"


def test_prompt_node_shows_its_tokens(open_page, vartrack):
    node = next(s for s in vartrack.segments if s.role == "prompt")
    at = open_page(GRAPH, trace="gallery:vartrack", node=node.id)
    no_problems(at)
    body = at.get("html")[0].proto.body
    assert body.count('class="ft-tok') - body.count('class="ft-tokens') == node.end - node.start


def test_no_node_selected_draws_only_the_graph(open_page, vartrack):
    at = open_page(GRAPH, trace="gallery:vartrack")
    no_problems(at)
    assert set(charts(at)) == {"hop_graph"}
    assert any("Click a node" in c.value for c in at.caption)
    # the evidence table names sentences and paths in words; the value sentence the answer copies is there
    table = at.dataframe[0].value
    full = HopGraph.from_trace(vartrack)
    answer = node_label(full, next(s.id for s in vartrack.segments if s.role == "answer"), 18)
    shown = [path for path in table["strongest path"] if path != "(not shown at this setting)"]
    assert shown and all(path.startswith(f"“{answer}” ← ") for path in shown)
    facts = analyse(vartrack)  # ranked by the trace's own scores, in words (no ids unless Details is on)
    assert list(table["sentence"][:5]) == [piece.label for piece, _share in facts.evidence(5)]
    assert "VAR RPBER = 16819." in list(table["sentence"])  # the value sentence the answer copies is listed (gold)
    # the chain table: the step that states the value reads the value sentence most
    chain = at.dataframe[1].value
    row = next(i for i, step in enumerate(chain["step"]) if step.endswith(": VAR RPBER = 16819."))
    assert chain["reads most"][row].startswith("VAR RPBER = 16819. (")


@pytest.mark.browser
def test_long_trace_in_chromium_at_1280x720(gallery_app):
    """The folded long trace as drawn: ≤ 15 input nodes, labels with segment text, all inside the figure,
    the figure inside a 1280×720 window."""
    playwright = pytest.importorskip("playwright.sync_api")
    from .browser import ROOT, launch, settle

    trace = load_gallery_trace("long-vartrack")
    url = gallery_app
    with playwright.sync_playwright() as p:
        browser = launch(p)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.goto(f"{url}/Hop_graph?trace=gallery:long-vartrack", timeout=120_000)
            page.get_by_role("heading", name="Hop graph").wait_for(timeout=120_000)
            page.locator(".js-plotly-plot .scatterlayer .textpoint").first.wait_for(timeout=60_000)
            settle(page)
            page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
            (ROOT / "test-artifacts").mkdir(exist_ok=True)
            page.screenshot(path=str(ROOT / "test-artifacts" / "hop_graph_long_folded_1280x720.png"))
            drawn = page.evaluate("""() => {
                const gd = [...document.querySelectorAll('.js-plotly-plot')].find(g => g._fullLayout.meta?.view === 'hop_graph');
                const box = gd.getBoundingClientRect();
                const inputs = gd._fullData.filter(t => ['template', 'prompt', 'other'].includes(t.meta))
                    .reduce((n, t) => n + t.customdata.length, 0);
                const labels = [...gd.querySelectorAll('.scatterlayer .textpoint text')].map(el => {
                    const r = el.getBoundingClientRect();
                    return {text: el.textContent, inside: r.left >= box.left - 1 && r.right <= box.right + 1
                            && r.top >= box.top - 1 && r.bottom <= box.bottom + 1};
                });
                return {inputs, labels, width: box.width, height: box.height};
            }""")
        finally:
            browser.close()
    texts = [label["text"] for label in drawn["labels"]]
    assert drawn["inputs"] <= 15
    assert "VAR BLYUX = 47977." in texts and any(t.startswith("Question:") and t.endswith("VAR HWRXJ?") for t in texts)
    assert any(t.startswith("other context (") for t in texts)
    labels = node_labels(HopGraph.from_trace(trace))
    steps = [labels[s.id] for s in trace.segments if s.role == "reasoning"]
    assert all(step in texts for step in steps)
    assert all(label["inside"] for label in drawn["labels"]), [l["text"] for l in drawn["labels"] if not l["inside"]]
    assert drawn["width"] <= 1280 and drawn["height"] <= 720
