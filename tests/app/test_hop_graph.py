import pytest

from flashtrace.gallery import load_gallery_trace
from flashtrace.graph import HopGraph
from flashtrace.viz import heatmap_values, step_values

from .conftest import charts, figure, no_problems

GRAPH = "pages/3_Hop_graph.py"


@pytest.fixture(scope="module")
def vartrack():
    return load_gallery_trace("vartrack")


def _edges(spec) -> int:
    return spec["layout"]["meta"]["edges"]


def test_graph_renders_with_every_layer(open_page, vartrack):
    at = open_page(GRAPH, trace="gallery:vartrack")
    no_problems(at)
    spec = charts(at)["hop_graph"]
    names = {d["name"] for d in spec["data"]}
    assert {"prompt", "reasoning", "answer"} <= names
    nodes = [n for d in spec["data"] if d["name"] in ("template", "prompt", "reasoning", "answer")
             for n in d["customdata"]]
    assert sorted(nodes) == sorted(s.id for s in vartrack.segments)
    assert _edges(spec) == HopGraph.from_trace(vartrack, 0.05).graph.number_of_edges()


def test_threshold_slider_changes_the_graph(open_page, vartrack):
    at = open_page(GRAPH, trace="gallery:vartrack")
    low = _edges(charts(at)["hop_graph"])
    at.select_slider(key="qp_tau").set_value("0.20").run()
    no_problems(at)
    high = charts(at)["hop_graph"]
    assert high["layout"]["meta"]["threshold"] == 0.2
    assert _edges(high) == HopGraph.from_trace(vartrack, 0.2).graph.number_of_edges() < low
    assert str(at.query_params["tau"]).strip("[]'") == "0.20"


def test_selected_step_shows_its_own_heatmap(open_page, vartrack):
    step = next(s.id for s in vartrack.segments if s.role == "reasoning")
    at = open_page(GRAPH, trace="gallery:vartrack", node=step)
    no_problems(at)
    assert at.subheader[0].value.startswith(f"{step}: reasoning")
    values = heatmap_values(figure(charts(at)["token_heatmap"]), vartrack)
    assert values == pytest.approx(step_values(vartrack, step))
    # choosing another node in the list moves the drill-down and the URL
    answer = next(s.id for s in vartrack.segments if s.role == "answer")
    at.selectbox(key="qp_node").set_value(answer).run()
    values = heatmap_values(figure(charts(at)["token_heatmap"]), vartrack)
    assert values == pytest.approx(step_values(vartrack, answer))
    assert str(at.query_params["node"]).strip("[]'") == answer


def test_prompt_node_shows_its_tokens(open_page, vartrack):
    node = next(s for s in vartrack.segments if s.role == "prompt")
    at = open_page(GRAPH, trace="gallery:vartrack", node=node.id)
    no_problems(at)
    body = at.get("html")[0].proto.body
    assert body.count('class="ft-tok') - body.count('class="ft-tokens') == node.end - node.start


def test_no_node_selected_draws_only_the_graph(open_page):
    at = open_page(GRAPH, trace="gallery:vartrack")
    no_problems(at)
    assert set(charts(at)) == {"hop_graph"}
    assert any("Click a node" in c.value for c in at.caption)
    assert at.dataframe[0].value["path"][0].startswith("A ← ")  # the strongest paths start at the answer
