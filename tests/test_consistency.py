"""One trace, one truth: every view that shows a trace agrees on the top prompt sentence and the shares at
every depth. For every gallery trace and three variants (recursive="reasoning", hop0="generation", a trace
without reasoning steps) this reads what each consumer renders (the Story panels and their figures, the
Compare page's figures, the Hop graph page's evidence table, the notebook's HTML, the HTML export and the
command line's summary) and checks each against numbers computed here from the trace's stored hop
vectors, not through the analysis layer. The hop graph's prompt influences either equal the trace's final
per-sentence scores (1e-6) or the Hop graph page says by how much they differ."""

import re
from html import unescape

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import flashtrace
from flashtrace import Trace
from flashtrace.analysis.facts import analyse
from flashtrace.analysis.graph import HopGraph
from flashtrace.analysis.story import story_panels
from flashtrace.analysis.text import pct, points
from flashtrace.cli import main
from flashtrace.store.gallery import list_gallery, load_gallery_trace
from flashtrace.store.library import LIBRARY_ENV, Library
from flashtrace.viz.compare import hop_segment_strips, reach_bars
from flashtrace.viz.report import trace_report_html
from flashtrace.viz.story import panel_figures

from .app.conftest import APP
from .test_story import reached_by_hand, sentence_shares_by_hand

PROMPT = ("Ann has 3 red pens. Bob has 5 blue pens. Carl has 2 green pens. The shop sells pens for 1 euro. "
          "How many pens do Ann and Bob have together?")
RESPONSE = "<think>\nAnn has 3 pens.\nBob has 5 pens.\n3 + 5 = 8.\n</think>\nAnswer: 8"


@pytest.fixture(scope="module")
def variants():
    model = flashtrace.load_model("tiny-llama")
    prepared = flashtrace.prepare(model, PROMPT, RESPONSE)
    bare = flashtrace.prepare(model, PROMPT, "Ann and Bob have 8 pens together.")  # no reasoning at all
    return {
        "recursive-reasoning": flashtrace.attribute(prepared, hops=3, steps=True, recursive="reasoning"),
        "hop0-generation": flashtrace.attribute(prepared, hops=3, steps=True, hop0="generation"),
        # the whole line as the target: with no reasoning, the hop graph's answer node is exactly the target
        "no-steps": flashtrace.attribute(bare, target="answer", hops=2, steps=True, recursive="reasoning"),
    }


CASES = [f"gallery:{it.name}" for it in list_gallery()] + ["recursive-reasoning", "hop0-generation", "no-steps"]


@pytest.fixture(scope="module")
def library(tmp_path_factory, variants):
    folder = tmp_path_factory.mktemp("library")
    lib = Library(folder)
    for name, trace in variants.items():
        lib.save(trace, name)
    return folder


def _trace(case, variants):
    return load_gallery_trace(case.split(":", 1)[1]) if case.startswith("gallery:") else variants[case]


def expected(trace) -> list[tuple[str, float, float]]:
    """Per depth, by hand: (top prompt sentence id, its share of the prompt's attribution, share of the
    answer's attribution on the input)."""
    reached = reached_by_hand(trace)
    out = []
    for depth in range(trace.settings.hops + 1):
        shares = sentence_shares_by_hand(trace, min(depth, len(trace.hops) - 1))
        order = [s.id for s in trace.segments if s.role == "prompt"]
        top = max(order, key=lambda k: (shares[k], -order.index(k)))
        out.append((top, shares[top], reached[min(depth, len(reached) - 1)]))
    return out


def context_top(trace) -> str:
    """By hand: the final top prompt sentence outside the question (sentences ending in "?"), unless the prompt
    is only a question."""
    shares = sentence_shares_by_hand(trace, len(trace.hops) - 1)
    order = [s.id for s in trace.segments if s.role == "prompt"]
    text = {s.id: s.text.strip() for s in trace.segments if s.role == "prompt"}
    context = [k for k in order if not text[k].endswith("?")] if any(
        text[k] and not text[k].endswith("?") for k in order) else order
    return max(context, key=lambda k: (shares[k], -order.index(k)))


def _label_to_id(trace) -> dict[str, str]:
    return {p.label: p.key for p in analyse(trace).pieces}


def _depth_rows(cells: list[str]) -> list[list[str]]:
    """The rows of a rendered depth table: [depth, reached, top label, share] after its header."""
    start = cells.index("depth")
    body = cells[start + 4:]
    rows = []
    while body and (body[0].startswith("directly") or body[0].startswith("after")):
        rows.append(body[:4])
        body = body[4:]
    return rows


def _check_depth_rows(rows, trace, where):
    want, ids = expected(trace), _label_to_id(trace)
    assert len(rows) == len(want), where
    for (depth, reached, label, share), (top, top_share, reach) in zip(rows, want):
        assert ids[label] == top, (where, depth, label, top)
        assert share.startswith(pct(top_share, 1)) and "of the prompt's attribution" in share, (where, depth)
        assert reached.startswith(pct(reach, 1)) and "attribution" in reached, (where, depth)


def _cells(page: str) -> list[str]:
    return [unescape(c).strip() for c in re.findall(r"<t[dh](?:\s[^>]*)?>(.*?)</t[dh]>", page, flags=re.S)]


@pytest.mark.parametrize("case", CASES)
def test_story_panels_and_figures(case, variants):
    trace = _trace(case, variants)
    want = expected(trace)
    panels = {p.key: p for p in story_panels(trace)}  # five steps; a failure adds its own before the check
    question, direct, hops, evidence = (panels[k] for k in ("question", "direct", "hops", "evidence"))
    tops = hops.data["top"]
    assert [t.key for t in tops] == [w[0] for w in want]
    assert [t.share for t in tops] == pytest.approx([w[1] for w in want], abs=1e-9)
    assert hops.data["reached"] == pytest.approx([w[2] for w in want], abs=1e-9)
    if len(want) > 1:
        assert f"after {len(want) - 1} hop" in hops.caption and pct(want[-1][2]) in hops.caption
        (reach,) = panel_figures(trace, hops)
        assert list(reach.data[0].y) == pytest.approx([w[2] for w in want], abs=1e-9)
    assert evidence.data["sentences"][0].key == context_top(trace)  # the question's share is stated apart
    sentences = panel_figures(trace, direct)[1]
    assert _label_to_id(trace)[unescape(sentences.data[0].y[0])] == want[0][0]


@pytest.mark.parametrize("case", CASES)
def test_compare_figures(case, variants):
    trace = _trace(case, variants)
    facts, want = analyse(trace), expected(trace)
    fig = hop_segment_strips(facts, "cumulative", shared=True, limit=len(facts.pieces)).to_plotly_json()
    z = np.asarray(fig["data"][0]["z"])  # [sentences, depths], shares of the prompt's attribution at each depth
    ids = fig["layout"]["meta"]["segments"]
    for depth, (top, share, _reach) in enumerate(want):
        assert ids[int(np.argmax(z[:, depth]))] == top
        assert z[:, depth].max() == pytest.approx(share, abs=1e-9)
    bars = reach_bars(facts).to_plotly_json()
    totals = [sum(b["y"][d] for b in bars["data"]) for d in range(len(want))]
    assert totals == pytest.approx([w[2] for w in want], abs=1e-9)
    assert [a["text"] for a in bars["layout"]["annotations"]] == [pct(w[2]) for w in want]


@pytest.mark.parametrize("case", CASES)
def test_notebook_export_and_command_line_tables(case, variants, tmp_path, capsys):
    trace = _trace(case, variants)
    _check_depth_rows(_depth_rows(_cells(trace._repr_html_())), trace, "notebook")
    _check_depth_rows(_depth_rows(_cells(trace_report_html(trace))), trace, "export")
    path = tmp_path / "t.json"
    trace.save(path)
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(out) if line.startswith("depth "))
    rows = []
    for line in out[head + 1: head + 1 + len(expected(trace))]:
        parts = re.split(r"\s{2,}", line.strip())
        rows.append(parts)
    _check_depth_rows(rows, trace, "command line")


def _graph_difference(trace) -> float:
    """Largest gap between the graph's prompt influences and the final per-sentence scores, both as shares
    of their prompt total (the scores computed here from the stored contributions)."""
    influence = HopGraph.from_trace(trace).influence()
    final = sentence_shares_by_hand(trace, len(trace.hops) - 1)
    graph = {k: influence[k] for k in final}
    total = sum(graph.values())
    return max(abs(graph[k] / total - final[k]) for k in final)


@pytest.mark.parametrize("case", CASES)
def test_hop_graph_page_evidence_agrees_or_says_why(case, variants, library, monkeypatch):
    trace = _trace(case, variants)
    monkeypatch.setenv(LIBRARY_ENV, str(library))
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.query_params["trace"] = case if case.startswith("gallery:") else f"lib:{case}"
    at.switch_page("pages/3_Hop_graph.py").run()
    assert not at.exception and not at.error
    table = next(df.value for df in at.dataframe if "graph" in df.value.columns)
    want = expected(trace)
    top_id = _label_to_id(trace)[table["sentence"][0]]  # labels without ids by default (Details off)
    assert top_id == want[-1][0]  # the evidence table ranks by the trace's own scores, like every other view
    assert table["share"][0] == pytest.approx(want[-1][1], abs=1e-9)
    assert any("share: of the prompt's attribution after all hops" in unescape(c.value).replace("\\", "")
               for c in at.caption)  # the column's denominator, named
    captions = " ".join(unescape(c.value).replace("\\", "") for c in at.caption)
    difference = _graph_difference(trace)
    if difference <= 1e-6:
        assert "equal the trace's final scores per sentence" in captions
    else:
        assert f"differ by up to {points(difference)} per sentence" in captions, (case, difference)


def test_both_graph_cases_are_covered(variants):
    gaps = [_graph_difference(_trace(case, variants)) for case in CASES]
    assert min(gaps) <= 1e-6 < max(gaps)  # one trace where the graph agrees exactly, others where it cannot


def test_the_numbers_come_from_one_place_per_trace(variants):
    trace = variants["hop0-generation"]
    assert analyse(trace) is analyse(trace)  # computed once per trace, read by every view
    fresh = Trace.from_json(trace.to_json())
    before = fresh.to_json()
    facts = analyse(fresh)
    facts.evidence(), facts.top_words(), facts.climbers(), facts.comparison()
    assert fresh.to_json() == before  # the trace itself is unchanged by being analysed
