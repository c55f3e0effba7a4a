import pytest

from flashtrace.gallery import load_gallery_trace
from flashtrace.viz import heatmap_values, view_values

from .conftest import charts, figure, no_problems

EXPLORE = "pages/2_Explore.py"


@pytest.fixture(scope="module")
def free_form():
    return load_gallery_trace("free-form")


def test_gallery_trace_heatmap_equals_its_scores(open_page, free_form):
    at = open_page(EXPLORE, trace="gallery:free-form")
    no_problems(at)
    fig = figure(charts(at)["token_heatmap"])
    values = heatmap_values(fig, free_form)
    prompt = free_form.positions("prompt")
    assert [values[i] for i in prompt] == [free_form.scores.prompt[i] for i in prompt]
    assert sum(values[i] for i in prompt) == pytest.approx(1.0, abs=1e-4)
    assert "hop" not in at.query_params  # defaults stay out of the URL


def test_hop_selector_changes_the_figure_and_the_url(open_page, free_form):
    at = open_page(EXPLORE, trace="gallery:free-form")
    before = heatmap_values(figure(charts(at)["token_heatmap"]), free_form)
    at.get("button_group")[0].set_value("1").run()
    no_problems(at)
    after = heatmap_values(figure(charts(at)["token_heatmap"]), free_form)
    assert after != before
    assert after == view_values(free_form, 1)
    assert str(at.query_params["hop"]).strip("[]'") == "1"


def test_link_with_hop_and_view_reopens_that_view(open_page, free_form):
    at = open_page(EXPLORE, trace="gallery:free-form", hop="2", view="segments")
    no_problems(at)
    spec = charts(at)["segment_bars"]
    assert spec["layout"]["meta"]["hop"] == 2
    bars = dict(zip(spec["data"][0]["y"], spec["data"][0]["x"]))
    values = view_values(free_form, 2)
    answer = next(s for s in free_form.segments if s.role == "answer")
    key = next(k for k in bars if k.startswith(f"{answer.id} ·"))
    assert bars[key] == pytest.approx(sum(values[answer.start:answer.end]))


def test_text_view_escapes_tokens(open_page):
    at = open_page(EXPLORE, trace="gallery:free-form", view="text")
    no_problems(at)
    page = at.get("html")[0].proto.body
    assert "&lt;think&gt;" in page or "&lt;" in page
    assert "<think>" not in page


def test_top_k_table_and_mass_bar(open_page, free_form):
    at = open_page(EXPLORE, trace="gallery:free-form")
    table = at.dataframe[0].value
    assert list(table["position"][:3]) == [p for p, _t, _s in free_form.top_prompt_tokens(3)]
    mass = charts(at)["mass_per_hop"]
    assert [d["name"] for d in mass["data"]] == ["prompt", "template", "reasoning", "answer"]


def test_unknown_trace_shows_an_error_not_a_traceback(open_page):
    at = open_page(EXPLORE, trace="gallery:does-not-exist")
    assert not at.exception
    assert any("does-not-exist" in e.value for e in at.error)


def test_long_trace_heatmap_pages_to_where_the_attribution_is(open_page):
    from flashtrace.viz.heatmap import heatmap_windows

    long = load_gallery_trace("long-vartrack")
    assert long.n_tokens >= 2000
    at = open_page(EXPLORE, trace="gallery:long-vartrack")
    no_problems(at)
    fig = figure(charts(at)["token_heatmap"])
    lo, hi = fig.layout.meta["range"]
    top = long.top_prompt_tokens(1)[0][0]
    assert lo <= top < hi and (lo, hi) in heatmap_windows(long.n_tokens)
    assert heatmap_values(fig, long) == long.scores.prompt[lo:hi]
    other = next(w for w in heatmap_windows(long.n_tokens) if w != (lo, hi))
    at.select_slider(key="qp_at").set_value(f"{other[0]}–{other[1] - 1}").run()
    assert figure(charts(at)["token_heatmap"]).layout.meta["range"] == list(other)
    assert str(at.query_params["at"]).strip("[]'") == f"{other[0]}–{other[1] - 1}"
