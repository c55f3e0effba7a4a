"""The Explore page (AppTest): the heatmap, text and segment views, hop choice, windows on long traces, gold marks."""

import html
from html.parser import HTMLParser

import pytest

from flashtrace.analysis.facts import analyse
from flashtrace.analysis.text import pct
from flashtrace.store.gallery import load_gallery_trace
from flashtrace.viz.colors import TARGET_OUTLINE
from flashtrace.viz import heatmap_values, view_values

from .conftest import charts, figure, no_problems

EXPLORE = "pages/2_Explore.py"


class _Cells(HTMLParser):
    """The text of each table row's cells, header row first."""

    def __init__(self):
        super().__init__()
        self.rows: list[list[str]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append("".join(self.cell))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def top_k_table(at) -> list[dict[str, str]]:
    """The top-k table as shown: one dict per row, column name to the cell's text."""
    body = next(h.proto.body for h in at.get("html") if 'class="ft-topk"' in h.proto.body)
    parser = _Cells()
    parser.feed(body)
    head, *rows = parser.rows
    return [dict(zip(head, row)) for row in rows]


@pytest.fixture(scope="module")
def free_form():
    return load_gallery_trace("free-form")


def test_gallery_trace_heatmap_equals_its_scores(open_page, free_form):
    at = open_page(EXPLORE, trace="gallery:free-form")
    no_problems(at)
    fig = figure(charts(at)["token_heatmap"])
    values = heatmap_values(fig, free_form)
    prompt = free_form.positions("prompt")
    drawn = [i for i in prompt if values[i] is not None]
    assert len(drawn) >= 10 and [values[i] for i in drawn] == [free_form.scores.prompt[i] for i in drawn]
    top10 = [p for p, _t, _s in free_form.top_prompt_tokens(10)]
    assert all(values[i] is not None for i in top10)  # the salient tokens are never folded away
    at.get("button_group")[2].set_value("all").run()  # Tokens: all
    values = heatmap_values(figure(charts(at)["token_heatmap"]), free_form)
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
    hop1 = view_values(free_form, 1)
    assert [v for v in after if v is not None] == [hop1[i] for i, v in enumerate(after) if v is not None]
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
    marked = [t.text for t in load_gallery_trace("free-form").tokens if "<" in t.text or ">" in t.text]
    assert marked  # the trace has tokens of markup (its <think> tags)
    for text in marked:
        assert html.escape(text, quote=False) in page, text
    assert "<think" not in page and "</think" not in page


def test_top_k_table_and_mass_bar(open_page, free_form):
    at = open_page(EXPLORE, trace="gallery:free-form")
    table = top_k_table(at)
    words = [p for p, t, _s in free_form.top_prompt_tokens(40) if any(c.isalnum() for c in t)]
    assert [row["share"] for row in table[:3]] == [pct(free_form.scores.prompt[p], 2) for p in words[:3]]
    assert [row["rank"] for row in table] == [str(r) for r in range(1, 11)]  # the slider's default k
    assert "position" not in table[0]  # in words unless Details is on
    assert "mass_per_hop" not in charts(at)  # drawn when its expander is opened
    at.session_state["explore_mass"] = True
    at.run()
    mass = charts(at)["mass_per_hop"]
    assert [d["name"] for d in mass["data"]] == ["prompt", "template", "reasoning", "answer"]


def test_unknown_trace_shows_an_error_not_a_traceback(open_page):
    at = open_page(EXPLORE, trace="gallery:does-not-exist")
    assert not at.exception
    assert any("does-not-exist" in e.value.replace("\\", "") for e in at.error)  # shown escaped, as plain text


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
    drawn = heatmap_values(fig, long)
    assert [v for v in drawn if v is not None] == [long.scores.prompt[i] for i, v in enumerate(drawn, lo) if v is not None]
    other = next(w for w in heatmap_windows(long.n_tokens) if w != (lo, hi))
    at.select_slider(key="qp_at").set_value(f"{other[0]}–{other[1] - 1}").run()
    assert figure(charts(at)["token_heatmap"]).layout.meta["range"] == list(other)
    assert str(at.query_params["at"]).strip("[]'") == f"{other[0]}–{other[1] - 1}"


@pytest.mark.parametrize("name", ["kitty", "notice-board"])
def test_a_long_trace_that_knows_its_evidence_opens_its_heatmap_on_the_gold(open_page, name):
    from flashtrace.analysis.facts import analyse
    from flashtrace.viz.heatmap import heatmap_windows

    long = load_gallery_trace(name)
    gold = sorted(set(analyse(long).gold.positions) & set(long.positions("prompt")))
    assert long.n_tokens >= 1500 and gold and len(heatmap_windows(long.n_tokens)) > 1
    at = open_page(EXPLORE, trace=f"gallery:{name}")
    no_problems(at)
    fig = figure(charts(at)["token_heatmap"])
    lo, hi = fig.layout.meta["range"]
    best = max(gold, key=lambda i: long.scores.prompt[i])  # the best-scored gold token is drawn, outlined
    assert lo <= best < hi and fig.layout.meta["gold"]
    top = long.top_prompt_tokens(1)[0][0]
    said = [c.value for c in at.caption if "opens on the known evidence" in c.value]
    assert bool(said) == (not lo <= top < hi)  # when the top token lies elsewhere, the page says where


def scroll_boxes(block) -> list:
    """Containers with a fixed pixel height (an inner scroll box) anywhere under `block`."""
    found = []
    for child in getattr(block, "children", {}).values():
        config = getattr(child.proto, "height_config", None)
        if config is not None and config.pixel_height:
            found.append(child)
        found.extend(scroll_boxes(child))
    return found


@pytest.fixture(scope="module")
def vartrack():
    return load_gallery_trace("vartrack")


def test_answer_shows_without_an_inner_scroll_box(open_page, vartrack):
    """The long prompt folds to its salient rows, so the figure is short and the answer row is in it."""
    at = open_page(EXPLORE, trace="gallery:vartrack")
    no_problems(at)
    fig = figure(charts(at)["token_heatmap"])
    values = heatmap_values(fig, vartrack)
    lo, hi = vartrack.settings.target
    assert all(values[i] is not None for i in range(lo, hi))
    assert fig.layout.height <= 460  # about 16 rows: fits under the page header at 1280×720
    assert fig.layout.meta["folded"] and sum(b - a for a, b in fig.layout.meta["folded"]) > vartrack.n_tokens // 2
    assert not scroll_boxes(at.main)
    assert any("folded" in c.value for c in at.caption)


def test_hop_view_outlines_the_target_and_keeps_it_off_the_scale(open_page, vartrack):
    at = open_page(EXPLORE, trace="gallery:vartrack", hop="0")
    no_problems(at)
    spec = charts(at)["token_heatmap"]
    traces = {t["name"]: t for t in spec["data"]}
    lo, hi = vartrack.settings.target
    hop0 = view_values(vartrack, 0)
    assert sorted(v for row in traces["target"]["z"] for v in row if v is not None) == sorted(hop0[lo:hi])
    assert traces["target"]["showscale"] is False
    # the target is left out: the (shared) scale tops at the largest other generated token of any hop
    others = [v for k in range(len(vartrack.hops)) for i, (v, tok) in enumerate(zip(view_values(vartrack, k),
                                                                                    vartrack.tokens))
              if tok.role in ("reasoning", "answer") and not lo <= i < hi]
    assert traces["generated"]["zmax"] == pytest.approx(max(others))
    outlines = [s for s in spec["layout"]["shapes"] if s["type"] == "rect" and s["line"]["color"] == TARGET_OUTLINE]
    assert sum(round(s["x1"] - s["x0"]) for s in outlines) == hi - lo
    at.toggle(key="details").set_value(True).run()  # positions show with Details on
    table = top_k_table(at)
    assert "position" in table[0] and not any(lo <= int(row["position"]) < hi for row in table)


def test_hop_views_share_one_colour_scale_by_default(open_page, vartrack):
    from flashtrace.viz.tokens import scale_maxima, shared_maxima

    shared = shared_maxima(vartrack)
    at = open_page(EXPLORE, trace="gallery:vartrack", hop="0")
    tops = []
    for hop in ("2", "0"):  # ends on hop 0, whose own prompt maximum is below the shared one
        at.get("button_group")[0].set_value(hop).run()
        traces = {t["name"]: t for t in charts(at)["token_heatmap"]["data"]}
        tops.append((traces["prompt"]["zmax"], traces["generated"]["zmax"]))
    assert tops[0] == tops[1] == pytest.approx((shared["prompt"], shared["generated"]))
    at.radio(key="qp_scale").set_value("own").run()
    no_problems(at)
    traces = {t["name"]: t for t in charts(at)["token_heatmap"]["data"]}
    own = scale_maxima(vartrack, 0)
    assert (traces["prompt"]["zmax"], traces["generated"]["zmax"]) == pytest.approx((own["prompt"], own["generated"]))
    assert own["prompt"] < shared["prompt"]
    assert str(at.query_params["scale"]).strip("[]'") == "own"


def test_text_view_has_a_colour_legend_and_folds(open_page, vartrack):
    from flashtrace.viz.tokens import shared_maxima

    at = open_page(EXPLORE, trace="gallery:vartrack", view="text", hop="1")
    no_problems(at)
    page = at.get("html")[0].proto.body
    legend = page[page.index('class="ft-legend"'):page.index('class="ft-tokens"')]
    assert "prompt 0" in legend and "reasoning + answer 0" in legend and "linear-gradient" in legend
    assert f"{shared_maxima(vartrack)['prompt']:.3g}" in legend and "shared by hops 0–3" in legend
    assert "target</span> outlined" in legend
    assert "<details" in page and "tokens folded" in page  # folded, opens on click
    lo, hi = vartrack.settings.target
    assert page.count('class="ft-tok ft-target"') == hi - lo  # the legend's sample is not a token
    assert "max-height" not in page  # no inner scroll box


def test_segments_view_folds_unsalient_runs_and_keeps_the_answer(open_page):
    long = load_gallery_trace("long-vartrack")
    at = open_page(EXPLORE, trace="gallery:long-vartrack", view="segments")
    no_problems(at)
    spec = charts(at)["segment_bars"]
    bars = dict(zip(spec["data"][0]["y"], spec["data"][0]["x"]))
    shown = [s for s in long.segments if s.role != "template"]
    gold = {s.id for s in shown if s.role == "prompt" and any(p in analyse(long).gold.positions
                                                                for p in range(s.start, s.end))}
    assert len(bars) <= 15 + len(gold) and 40 < len(shown)  # 170-odd segments fit the page without a scroll box
    assert all(any(k.startswith(f"{g} ·") for k in bars) for g in gold)  # known evidence is never folded
    assert not scroll_boxes(at.main)
    answer = next(s for s in shown if s.role == "answer")
    assert any(k.startswith(f"{answer.id} ·") for k in bars)
    folded = [k for k in bars if k.startswith("⋯ ·")]
    assert folded and all("segments without a salient token" in k for k in folded)
    values = view_values(long, None)
    assert sum(bars.values()) == pytest.approx(sum(sum(values[s.start:s.end]) for s in shown))
    top = long.top_prompt_tokens(1)[0][0]
    top_segment = next(s for s in shown if s.start <= top < s.end)
    assert any(k.startswith(f"{top_segment.id} ·") for k in bars)  # the peak's sentence is never folded
    at.get("button_group")[2].set_value("all").run()
    assert len(charts(at)["segment_bars"]["data"][0]["y"]) == len(shown)
