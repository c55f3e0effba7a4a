"""Figures of the Story panels: they draw exactly the panel data, and trace text is escaped."""

import pytest

from flashtrace.store.gallery import load_gallery_trace
from flashtrace.analysis.facts import Piece, analyse, summarise_check
from flashtrace.analysis.story import Ranked, story_panels
from flashtrace.analysis.text import pct
from flashtrace.store.gallery import list_gallery
from flashtrace.viz.story import (LARGE_FONT, answer_html, check_figure, panel_blocks, panel_figures, pieces_figure,
                                  prompt_html, question_html, reasoning_html, sentences_html, story_document)

from .conftest import HOSTILE_PROMPT

CHECK = {"version": 1, "fraction": 0.1, "n_prompt": 50, "n_deleted": 5, "before": -0.5, "top": -4.0,
         "random": [-0.7, -1.1], "random_mean": -0.9, "seed": 0, "model": "m"}


@pytest.fixture(scope="module")
def trace():
    return load_gallery_trace("vartrack")


def test_each_panel_draws_its_data(trace):
    question, direct, hops, evidence, check = story_panels(trace)
    assert panel_figures(trace, question) == []
    split, sentences = panel_figures(trace, direct)
    assert [t.x[0] for t in split.data] == [direct.data["shares"][k] for k in ("prompt", "template", "generated")]
    assert list(sentences.data[0].x) == [p.share for p in direct.data["sentences"]]
    (reach,) = panel_figures(trace, hops)
    assert list(reach.data[0].y) == [d.reached for d in analyse(trace).depths] == hops.data["reached"]
    assert [a + b for a, b in zip(reach.data[0].y, reach.data[1].y)] == pytest.approx([1.0] * len(trace.hops))
    assert [label for label in sentences.data[0].y] == [p.label for p in direct.data["sentences"]]
    (bars,) = panel_figures(trace, evidence)
    shown = evidence.data["sentences"] + [q for q in evidence.data["asked"]
                                          if q.key not in {p.key for p in evidence.data["sentences"]}]
    assert list(bars.data[0].x) == [p.share for p in shown]  # the context, then the question apart
    assert list(bars.data[0].text)[-1].endswith(" · asked") and evidence.data["asked"]
    pieces = evidence.data["sentences"]
    html = sentences_html(trace, pieces)
    segments = {s.id: s for s in trace.segments}
    tokens = sum(segments[p.key].end - segments[p.key].start for p in pieces)
    assert html.count('class="ft-tok') - html.count('class="ft-tokens') == tokens  # every token of every sentence
    ranks = [html.index(f"<b style=\"min-width:4.5em\">{r}. {pct(p.share)}</b>") for r, p in enumerate(pieces, start=1)]
    assert len(pieces) >= 3 and ranks == sorted(ranks)  # numbered in rank order, each with its share


def test_check_figure_shows_before_top_random_and_each_draw(trace):
    check_panel = story_panels(trace, CHECK)[4]
    fig = panel_figures(trace, check_panel)[0]
    assert list(fig.data[0].y) == pytest.approx([-0.5, -4.0, -0.9]) and list(fig.data[1].y) == [-0.7, -1.1]
    assert fig == check_figure(summarise_check(CHECK))


def test_trace_text_is_escaped_in_labels():
    text = "<img src=x onerror=alert(1)>"
    fig = pieces_figure([Ranked(Piece("P0", text, text, 0, 1), 0.5)], "t", "v")
    assert "<img" not in fig.data[0].y[0] and "&lt;img" in fig.data[0].y[0]


def test_question_answer_and_reasoning_are_plain_text(small_trace):
    data = story_panels(small_trace)[0].data
    assert data["question"] == HOSTILE_PROMPT and data["ask"] == ""  # a short prompt is the question, shown whole
    blocks = question_html(data) + reasoning_html(data) + answer_html(data)
    assert "<script>" not in blocks and "&lt;script&gt;alert(1)&lt;/script&gt;" in blocks
    assert 'onmouseover="x"' not in blocks and "&amp; 2 dogs" in blocks
    assert "white-space:pre-wrap" in question_html(data)  # the prompt's line breaks stay
    long = {"question": "Some text. " * 60 + "What is <b>x</b>?", "ask": "What is <b>x</b>?", "reasoning": "",
            "answer": "5"}
    assert "What is &lt;b&gt;x&lt;/b&gt;?" in question_html(long) and "font-size:2.0rem" in question_html(long, True)
    assert "max-height" not in prompt_html(long, None) and "max-height:320px" in prompt_html(long)
    assert "(its last sentence" in question_html(long) and "The whole prompt (123 words)" in prompt_html(long)


def test_presenter_figures_are_larger_and_nothing_else_changes(trace):
    for panel in story_panels(trace)[1:]:
        for small, large in zip(panel_figures(trace, panel), panel_figures(trace, panel, large=True)):
            assert large.layout.font.size == LARGE_FONT and large.layout.height > small.layout.height
            assert [t.x for t in large.data] == [t.x for t in small.data]
            assert [t.y for t in large.data] == [t.y for t in small.data]


@pytest.mark.parametrize("name", [item.name for item in list_gallery()])
def test_whole_story_is_one_small_offline_file_with_every_step(name):
    trace = load_gallery_trace(name)
    panels = story_panels(trace)
    page = story_document(trace, panels, "<b>The story</b>")
    assert len(page.encode("utf-8")) <= 1_500_000  # sendable after a meeting
    assert "http://" not in page and "https://" not in page and "default-src 'none'" in page
    at = [page.index(f'id="step-{n}"') for n in range(1, 6)]
    assert at == sorted(at) and all(f"{n}. {p.title}" in page for n, p in enumerate(panels, 1))
    assert page.count("data-ft-figure=") == sum(len(panel_figures(trace, p)) for p in panels)
    assert "&lt;b&gt;The story&lt;/b&gt;" in page and "<b>The story</b>" not in page
    assert page.count('class="ft-question"') == 1 and page.count('class="ft-answer"') == 1
    assert "max-height" not in "".join(b for b in panel_blocks(trace, panels[0]) if isinstance(b, str))


def test_gold_shows_on_the_story_bars_even_when_it_ranks_low():
    trace = load_gallery_trace("arithmetic")
    facts = analyse(trace)
    direct, evidence = story_panels(trace)[1], story_panels(trace)[3]
    for panel, depth in ((direct, 0), (evidence, len(facts.depths) - 1)):
        fig = panel_figures(trace, panel)[-1]
        best = min(facts.gold.pieces, key=facts.depths[depth].rank)
        assert facts.pieces[best].key in fig.layout.meta["gold"]
        gold_rows = [i for i, width in enumerate(fig.data[0].marker.line.width) if width]
        assert len(gold_rows) == len(fig.layout.meta["gold"])
        assert all(" · gold" in fig.data[0].text[i] for i in gold_rows)
    low = dict(evidence.data["gold"], rank=12, ranked="12th")  # a gold sentence below the three listed
    low["piece"] = Ranked(Piece("P9", "Eli gets 32 stamps.", "Eli gets 32 stamps.", 0, 1, gold=True), 0.01)
    fig = pieces_figure(evidence.data["sentences"], "t", "v", low)
    assert list(fig.data[0].y)[-1] == "Eli gets 32 stamps." and fig.data[0].text[-1].endswith(" · gold, ranked 12th")
    assert fig.layout.meta["gold"][-1] == "P9" and fig.data[0].marker.line.width[-1] == 3


def test_step_one_shows_a_long_reasoning_as_its_first_and_last_lines_and_counts_what_it_leaves_out():
    from flashtrace.viz.story import condensed, screen_lines

    lines = [f"Step {i}: add {i} to the total, which is now {i * (i + 1) // 2}." for i in range(1, 31)]
    text, left = condensed("\n".join(lines), 8, 56)
    shown = text.splitlines()
    assert screen_lines(text, 56) <= 8 and left == 30 - (len(shown) - 1)
    assert shown[0] == lines[0] and shown[-1] == lines[-1]
    assert f"⋯ {left} more lines: see “The whole reasoning” ⋯" in shown
    assert condensed("Two short\nlines.", 8, 56) == ("Two short\nlines.", 0)  # what fits is shown whole
    assert screen_lines("x" * 120, 56) == 3  # a long line wraps
