"""The Compare page (AppTest): hop depths side by side and the methods tab, on gallery and library traces."""

import html
import json

import numpy as np
import pytest

import flashtrace
from flashtrace.analysis.compare import compare_depths, hop_additions
from flashtrace.analysis.facts import analyse
from flashtrace.analysis.story import change_words, gold_words, moves_words, reach_words
from flashtrace.viz import visible_label
from flashtrace.store.gallery import load_gallery_trace
from flashtrace.store.library import Library

from .conftest import charts, no_problems

COMPARE = "pages/4_Compare.py"


def test_hop_depths_show_what_each_hop_adds(open_page):
    trace = load_gallery_trace("arithmetic")
    add = hop_additions(trace)
    at = open_page(COMPARE, trace="gallery:arithmetic")
    no_problems(at)
    facts = analyse(trace)
    said = [line for line in (reach_words(facts), change_words(facts), moves_words(facts), gold_words(facts)) if line]
    assert [t.value for t in at.text][:len(said)] == said and len(said) >= 3
    found = charts(at)
    seg = found["hop_segment_strips"]
    assert seg["layout"]["meta"]["shared"] is True
    z = np.asarray(seg["data"][0]["z"])
    by_id = {s.id: s for s in trace.segments if s.role == "prompt"}
    shown = [by_id[sid] for sid in seg["layout"]["meta"]["segments"]]
    by_hand = [[sum(h.contribution[s.start:s.end]) for h in trace.hops] for s in shown]  # [segment][hop]
    assert z == pytest.approx(np.asarray(by_hand) / add.unit)  # hop K's own contribution
    assert seg["data"][0]["zmax"] == pytest.approx(z.max())  # one colour scale across hops
    pieces = {p.key: p for p in facts.pieces}
    for name, s in zip(seg["data"][0]["y"], shown):  # every row is labelled with its sentence
        assert name == html.escape(pieces[s.id].label, quote=False)  # its text; the id only with Details on
    agreement = found["depth_agreement"]
    comparison = compare_depths(trace, k=10)
    assert agreement["data"][0]["name"] == "rank correlation (Spearman)"
    assert agreement["data"][0]["y"] == pytest.approx(comparison.spearman)
    assert agreement["data"][1]["y"] == pytest.approx(comparison.overlap)
    assert [a["text"] for a in agreement["layout"]["annotations"]] == [f"top-10 stable from K={comparison.convergence_depth}"]
    assert "ρ" not in json.dumps(agreement, ensure_ascii=False)  # ρ is the hop mass only
    bars = found["reach_bars"]["data"]
    assert [sum(b["y"][d] for b in bars) for d in add.hops] == pytest.approx(add.reached)

    at.get("button_group")[1].set_value("tokens").run()  # tokens, one row per hop, labelled
    at.toggle(key="depth_per_row").set_value(True).run()
    no_problems(at)
    tok = charts(at)["hop_token_strips"]
    cols = tok["layout"]["meta"]["positions"]
    assert tok["layout"]["meta"]["shared"] is False and len(cols) == 30
    assert tok["layout"]["xaxis"]["ticktext"] == [html.escape(visible_label(trace.tokens[i].text, 14)) for i in cols]
    assert np.asarray(tok["data"][0]["z"]).max(axis=1) == pytest.approx([1.0] * 4)  # each hop on its own scale
    at.slider(key="depth_k").set_value(3).run()
    assert charts(at)["depth_agreement"]["data"][1]["y"] == pytest.approx(compare_depths(trace, k=3).overlap)


def test_secondary_tables_and_charts_are_drawn_when_opened(open_page):
    """Top-k words per depth and the mass chart sit in expanders filled only when opened."""
    trace = load_gallery_trace("arithmetic")
    at = open_page(COMPARE, trace="gallery:arithmetic")
    no_problems(at)
    assert "mass_per_hop" not in charts(at) and len(at.dataframe) == 1  # the depth table only
    at.session_state["depth_words"] = at.session_state["depth_mass"] = True
    at.run()
    no_problems(at)
    mass = charts(at)["mass_per_hop"]
    assert [d["name"] for d in mass["data"]] == ["prompt", "template", "reasoning", "answer"]
    words = at.dataframe[1].value
    top = compare_depths(trace, k=10).top
    assert list(words["words"]) == [" · ".join(visible_label(trace.tokens[i].text, 20) for i in depth)
                                    for depth in top]


def test_methods_side_by_side_with_live_faithfulness(open_page, library_dir):
    model = flashtrace.load_model("tiny-llama")
    trace = flashtrace.trace(model, prompt="Tom has 3 cats. Ann has 2 dogs. How many cats does Tom have?",
                             response="Tom has 3 cats.\nAnswer: 3", hops=1)
    Library(library_dir).save(trace, "tiny")
    at = open_page(COMPARE, trace="lib:tiny")
    at.multiselect(key="methods").set_value(["flashtrace-k0", "attention"]).run()
    at.button(key="run_methods").click().run()
    no_problems(at)
    table = at.dataframe[-1].value
    assert list(table["method"]) == ["flashtrace-k0", "attention"]
    assert all(0 <= v <= 1 for v in table["RISE ↓"]) and all(v >= 0 for v in table["attribution s"])
    assert all(v > 0 for v in table["deletion curve s"])
    curves = charts(at)["deletion_curves"]["data"]
    assert len(curves) == 2 and all(len(c["y"]) == 21 for c in curves)
    for curve, rise in zip(curves, table["RISE ↓"]):
        y = curve["y"]
        assert all(0 <= v <= 1 for v in y) and all(a >= b for a, b in zip(y, y[1:]))  # normalised, non-increasing
        assert rise == pytest.approx(sum((a + b) / 2 for a, b in zip(y, y[1:])) / 20)  # RISE = area under it
