"""The token heatmap figure (`viz.heatmap`): cells, colour scales, hover shares, windows and the top-token table."""

import json
from pathlib import Path

import pytest

from flashtrace.analysis.schema import Trace
from flashtrace.analysis.views import top_view_tokens
from flashtrace.store.gallery import gallery_dir
from flashtrace.viz import heatmap_values, step_values, token_grid, token_heatmap, top_tokens, view_values, visible_label


def test_combined_view_is_the_normalised_prompt_scores(small_trace):
    values = view_values(small_trace)
    assert values == small_trace.scores.prompt
    assert sum(values) == pytest.approx(1.0)


@pytest.mark.parametrize("hop", [0, 1, 2])
def test_hop_view_is_the_hop_mass_share(small_trace, hop):
    raw = small_trace.hops[hop].raw
    assert view_values(small_trace, hop) == pytest.approx([v / sum(raw) for v in raw])


def test_a_step_view_is_that_steps_attribution_as_a_share_of_its_own_total():
    trace = Trace.load(Path(gallery_dir()) / "free-form.json")
    for step in ("S1", "A"):
        vector = trace.steps.vectors[step]
        assert step_values(trace, step) == pytest.approx([v / sum(vector) for v in vector])
    silent = trace.model_copy(update={"steps": trace.steps.model_copy(update={"vectors": {"S1": [0.0] * trace.n_tokens}})})
    assert step_values(silent, "S1") == [0.0] * trace.n_tokens  # no attribution: zero shares, not a division by zero
    for missing in (trace.model_copy(update={"steps": None}), trace):
        with pytest.raises(ValueError, match=r"^segment Q9 has no step attribution in this trace$"):
            step_values(missing, "Q9")


def test_a_hops_top_tokens_include_answer_words_before_the_target():
    """A target that is the tail of the answer ("42" in "The answer is 42"): the answer's earlier words can explain
    it in a hop view (the combined view ranks prompt tokens only). Ten tokens unless told otherwise."""
    trace = Trace.load(Path(gallery_dir()) / "free-form.json")
    lo, hi = trace.settings.target
    word = next(i for i in range(lo, hi - 1) if any(c.isalnum() for c in trace.tokens[i].text))
    raw = list(trace.hops[1].raw)
    raw[word] = 2 * max(raw)
    silent = next(i for i in reversed(trace.positions("prompt")) if any(c.isalnum() for c in trace.tokens[i].text))
    raw[silent] = 0.0  # a word without attribution is no top token, however many are asked for
    hops = [*trace.hops[:1], trace.hops[1].model_copy(update={"raw": raw}), *trace.hops[2:]]
    tail = trace.model_copy(update={"hops": hops, "settings": trace.settings.model_copy(update={"target": (word + 1, hi)})})
    assert top_view_tokens(tail, 1, k=1) == [word] and trace.tokens[word].role == "answer"
    assert word not in top_view_tokens(tail, None, k=trace.n_tokens)
    assert silent not in top_view_tokens(tail, 1, k=trace.n_tokens) and silent in top_view_tokens(trace, 1, k=trace.n_tokens)
    assert len(top_view_tokens(trace)) == 10 < len(top_view_tokens(trace, k=trace.n_tokens))


def test_unknown_hop_is_refused(small_trace):
    with pytest.raises(ValueError, match=r"^hop 3 is not in this trace \(it has hops 0\.\.2\)$"):
        view_values(small_trace, 3)


@pytest.mark.parametrize("hop", [None, 0, 2])
def test_heatmap_cells_hold_exactly_the_view_values(small_trace, hop):
    fig = token_heatmap(small_trace, hop=hop, width=7)
    assert heatmap_values(fig, small_trace) == view_values(small_trace, hop)
    names = {t.name for t in fig.data}
    assert names == {"prompt", "generated", "template", "target"}
    # the figure survives JSON and the numbers are still there, unencoded
    spec = json.loads(fig.to_json())
    prompt_z = [v for row in next(t for t in spec["data"] if t["name"] == "prompt")["z"] for v in row if v is not None]
    assert sorted(prompt_z) == pytest.approx(sorted(view_values(small_trace, hop)[i]
                                                    for i in small_trace.positions("prompt")))


def test_hop_changes_the_figure_data(small_trace):
    """Each hop's heatmap draws that hop's own vector (its share of the hop's total), not another hop's."""
    drawn = [heatmap_values(token_heatmap(small_trace, hop=h), small_trace) for h in (0, 1)]
    for hop, values in zip(small_trace.hops, drawn):
        total = sum(hop.raw)
        shown = [i for i, v in enumerate(values) if v is not None]
        assert len(shown) >= 10 and [values[i] for i in shown] == pytest.approx([hop.raw[i] / total for i in shown])
    assert drawn[0] != drawn[1]


def test_grid_breaks_rows_at_newlines_roles_and_width(small_trace):
    cells = token_grid(small_trace, width=5)
    assert len(set(cells)) == len(cells)
    assert all(c < 5 for _r, c in cells)
    for i in range(1, small_trace.n_tokens):
        prev, tok = small_trace.tokens[i - 1], small_trace.tokens[i]
        if "\n" in prev.text or prev.role != tok.role:
            assert cells[i] == (cells[i - 1][0] + 1, 0)
        else:
            assert cells[i][0] in (cells[i - 1][0], cells[i - 1][0] + 1)


def test_token_text_in_the_figure_is_escaped(small_trace):
    spec = token_heatmap(small_trace).to_json()
    assert "<script>" not in spec and "&lt;" in spec


def test_visible_whitespace_labels():
    assert visible_label(" ") == "·"
    assert visible_label("\n\n") == "↵↵"
    assert visible_label("a\nb") == "a↵b"
    assert visible_label("abcdefghijklmnop", 6) == "abcde…"
    assert visible_label("") == "∅"


def _words(trace, positions):
    return [p for p in positions if any(c.isalnum() for c in trace.tokens[p].text)]


def test_top_tokens_rank_prompt_words_by_share(small_trace):
    rows = top_tokens(small_trace, None, k=5, details=True)
    assert [r["rank"] for r in rows] == [1, 2, 3, 4, 5]
    assert all(r["role"] == "prompt" for r in rows)
    prompt = small_trace.positions("prompt")
    expected = sorted(_words(small_trace, prompt), key=lambda i: (-small_trace.scores.prompt[i], i))[:5]
    assert [r["position"] for r in rows] == expected  # punctuation-only tokens ("-", "=", ":") left out
    assert "position" not in top_tokens(small_trace, None, k=5)[0]  # positions only with details
    hop_rows = top_tokens(small_trace, 1, k=100)
    shares = [r["share"] for r in hop_rows]
    assert shares == sorted(shares, reverse=True)
    assert {r["role"] for r in hop_rows} >= {"prompt", "reasoning"}
    assert all(any(c.isalnum() for c in r["token"]) for r in hop_rows)


def test_long_traces_are_paged_into_windows():
    from flashtrace.viz.heatmap import heatmap_windows, window_of

    assert heatmap_windows(700) == [(0, 700)]
    assert heatmap_windows(768) == [(0, 768)]
    assert heatmap_windows(2000) == [(0, 512), (512, 1024), (1024, 1536), (1536, 2000)]
    assert heatmap_windows(2000, size=768) == [(0, 768), (768, 1536), (1536, 2000)]
    windows = heatmap_windows(2000, size=768)
    values = [0.0] * 2000
    values[900] = 1.0
    assert window_of(windows, values, list(range(2000))) == 1
    assert window_of(windows, values, list(range(800))) == 0  # best among the given positions only
    assert window_of(windows, values, []) == 0


def test_windowed_heatmap_holds_exactly_that_slice(small_trace):
    lo, hi = 20, 60
    fig = token_heatmap(small_trace, hop=1, token_range=(lo, hi))
    assert heatmap_values(fig, small_trace) == view_values(small_trace, 1)[lo:hi]
    assert fig.layout.meta["range"] == [lo, hi]
    assert fig.layout.yaxis.ticktext[0] == ""  # plain by default: no position markers
    assert token_heatmap(small_trace, hop=1, token_range=(lo, hi), details=True).layout.yaxis.ticktext[0] == f"#{lo}"
    with pytest.raises(ValueError, match="outside"):
        token_heatmap(small_trace, token_range=(0, small_trace.n_tokens + 1))


@pytest.mark.parametrize("hop", [None, 0, 1])
def test_target_tokens_are_outlined_and_off_the_colour_scale(small_trace, hop):
    fig = token_heatmap(small_trace, hop=hop)
    values = view_values(small_trace, hop)
    lo, hi = small_trace.settings.target
    by_name = {t.name: t for t in fig.data}
    target_z = [v for row in by_name["target"].z for v in row if v is not None]
    assert target_z == values[lo:hi]  # the target cells sit in their own, flat-coloured trace
    assert by_name["target"].colorscale[0][1] == by_name["target"].colorscale[-1][1]
    assert not by_name["target"].showscale
    for name in ("prompt", "generated"):
        cells = [v for row in by_name[name].z for v in row if v is not None] if name in by_name else []
        others = [values[i] for i in range(small_trace.n_tokens) if not lo <= i < hi and
                  (small_trace.tokens[i].role == "prompt") == (name == "prompt") and small_trace.tokens[i].role != "template"]
        assert len(cells) == len(others)
        if name in by_name and max(others) > 0:
            assert by_name[name].zmax == pytest.approx(max(others))  # the top of the scale ignores the target
    outlines = [s for s in fig.layout.shapes if s.type == "rect"]
    assert outlines and all(s.line.color == "#16a34a" for s in outlines)
    assert sum(round(s.x1 - s.x0) for s in outlines) == hi - lo  # every target cell inside an outline


def test_top_tokens_leave_the_target_out(small_trace):
    lo, hi = small_trace.settings.target
    for hop in (0, 1, 2):
        rows = top_tokens(small_trace, hop, k=small_trace.n_tokens, details=True)
        assert not any(lo <= r["position"] < hi for r in rows)
        raw = small_trace.hops[hop].raw
        candidates = [i for i in _words(small_trace, small_trace.positions("prompt", "reasoning", "answer"))
                      if not lo <= i < hi and raw[i] > 0]
        assert sorted(r["position"] for r in rows) == candidates


def test_shared_scale_tops_are_the_largest_over_hops(small_trace):
    from flashtrace.viz.tokens import class_maxima, scale_maxima, shared_maxima, target_positions

    lo, hi = small_trace.settings.target
    shared = shared_maxima(small_trace)
    for cls, roles in (("prompt", ("prompt",)), ("generated", ("reasoning", "answer"))):
        per_hop = [max(view_values(small_trace, h.k)[i] for i in small_trace.positions(*roles) if not lo <= i < hi)
                   for h in small_trace.hops]
        assert shared[cls] == pytest.approx(max(per_hop))
        assert len(set(per_hop)) > 1  # the hops differ, so a per-hop scale would mislead
    own = [scale_maxima(small_trace, h.k) for h in small_trace.hops]
    assert own[0] == class_maxima(small_trace, view_values(small_trace, 0), target_positions(small_trace))
    for h in small_trace.hops:  # every hop view drawn with the shared tops has the same scale
        zmax = {t.name: t.zmax for t in token_heatmap(small_trace, hop=h.k, top=shared).data}
        assert zmax["prompt"] == pytest.approx(shared["prompt"]) and zmax["generated"] == pytest.approx(shared["generated"])
    assert scale_maxima(small_trace, None, shared=True) == scale_maxima(small_trace, None)  # combined keeps its own


def test_folded_heatmap_keeps_salient_rows_and_the_target(small_trace):
    from flashtrace.viz.heatmap import heatmap_cells
    from flashtrace.viz.tokens import salient_positions

    values = view_values(small_trace, None)
    keep = salient_positions(small_trace, values, small_trace.positions("prompt"), k=2, share=0.9)
    fig = token_heatmap(small_trace, keep=keep, width=5)
    drawn = heatmap_values(fig, small_trace)
    lo, hi = small_trace.settings.target
    assert all(drawn[i] == values[i] for i in keep) and all(drawn[i] == values[i] for i in range(lo, hi))
    hidden = [i for i, v in enumerate(drawn) if v is None]
    assert hidden and not set(hidden) & (keep | set(range(lo, hi)))
    folded = fig.layout.meta["folded"]
    assert sum(b - a for a, b in folded) == len(hidden)
    full_rows = len(token_heatmap(small_trace, width=5).data[0].z)
    assert len(fig.data[0].z) < full_rows
    cells, _ = heatmap_cells(small_trace, 5, (0, small_trace.n_tokens), keep)
    rows = {rc[0] for rc in cells if rc is not None}
    assert rows == set(range(len(rows)))  # shown rows are packed, no empty rows left behind


def test_top_tokens_table_shows_every_cell_as_plain_text():
    from flashtrace.viz.heatmap import top_tokens_html

    rows = [{"rank": 1, "position": 7, "token": "<b>x</b> & *y* [z](http://e.org)", "role": "prompt", "share": 0.0817},
            {"rank": 2, "position": 3, "token": "·a", "role": "reasoning", "share": 0.00001}]
    table = top_tokens_html(rows)
    assert "&lt;b&gt;x&lt;/b&gt; &amp; *y* [z](http://e.org)" in table and "<b>" not in table
    assert "<th>token</th>" in table and '<th class="ft-num">share</th>' in table
    assert '<td class="ft-num">8.17\u00a0%</td>' in table and '<td class="ft-num">&lt;0.01\u00a0%</td>' in table
    assert table.count("<tr>") == 3
    assert "<table" not in top_tokens_html([])  # nothing to rank: a line, not an empty table


def test_hover_names_each_value_as_the_share_it_is_never_a_raw_score(small_trace):
    """Issue 45's polish list: hover said "score 0.005889" where every table shows %."""
    combined = token_heatmap(small_trace).to_plotly_json()["data"]
    assert all("%{z:.2%} of the prompt's attribution" in t["hovertemplate"] for t in combined)
    assert all("score" not in t["hovertemplate"] for t in combined)
    hop = token_heatmap(small_trace, hop=1).to_plotly_json()["data"]
    assert all("%{z:.2%} of hop 1's attribution" in t["hovertemplate"] for t in hop)
    step = token_heatmap(small_trace, values=view_values(small_trace, 0), share_of="of this step's own attribution")
    assert all("of this step's own attribution" in t["hovertemplate"] for t in step.to_plotly_json()["data"])
