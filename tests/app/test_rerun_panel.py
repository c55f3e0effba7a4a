"""Edit and re-run in the Story (AppTest, tiny model): the top evidence sentence is chosen first, the run shows
the log-probabilities an independent `edit` computes, the new answer and the difference heatmap from
`analysis.diff`; the pair saves to the library linked both ways; nothing of it in a read-only demo."""

import re

import pytest

from flashtrace.analysis.diff import attribution_diff, default_edit
from flashtrace.engine.models import load_model
from flashtrace.run.rerun import edit
from flashtrace.run.tracing import attribute, prepare
from flashtrace.store.library import Library
from flashtrace.store.pairs import linked

from .conftest import charts, literal, no_problems
from .test_interventions_panel import PROMPT, RESPONSE

STORY = "pages/7_Story.py"


@pytest.fixture(scope="module")
def tiny():
    loaded = load_model("tiny-llama")
    return loaded, attribute(prepare(loaded, PROMPT, RESPONSE), hops=1, steps=True, title="balls")


def _story(open_page, library_dir, trace):
    Library(library_dir).save(trace, "balls")
    at = open_page(STORY, trace="lib:balls", step="4")
    no_problems(at)
    return at


def test_remove_the_top_sentence_and_compare(open_page, library_dir, tiny):
    loaded, trace = tiny
    at = _story(open_page, library_dir, trace)
    assert not [b for b in at.button if b.key == "run_rerun"]  # nothing until the toggle is on
    at.toggle(key="rerun_open").set_value(True).run()
    top = default_edit(trace)
    picker = at.multiselect(key="rerun_pick_lib:balls")
    assert top is not None and picker.value == [top]
    assert not any(re.match(r"[PST]\d+:", o) for o in picker.options), picker.options  # Details off: no ids
    assert any("about" in literal(c.value) and "new tokens" in literal(c.value) for c in at.caption)
    at.button(key="run_rerun").click().run()
    no_problems(at)
    new_tokens = at.number_input(key="rerun_new_lib:balls").value
    expected = edit(loaded, trace, [top], retrace=True, max_new_tokens=new_tokens)
    metrics = {m.label: m for m in at.metric}
    assert float(metrics["Answer log-probability, original"].value) == pytest.approx(expected.before, abs=1e-3)
    assert float(metrics["After the edit"].value) == pytest.approx(expected.after, abs=1e-3)
    assert metrics["After the edit"].delta == f"{expected.after - expected.before:+.3f} nats"
    figures = charts(at)
    assert expected.trace is not None and "difference_heatmap" in figures
    diff = attribution_diff(trace, expected.trace)
    shown = figures["difference_heatmap"]["layout"]["meta"]["values"]
    assert shown == pytest.approx(list(diff.values), abs=1e-6)
    assert any(diff.sentence in literal(c.value) for c in at.caption)

    at.button(key="rerun_save").click().run()
    no_problems(at)
    lib = Library(library_dir)
    edited_name = "balls-edited"
    reopened = lib.open(edited_name)
    assert reopened.extra["edited_from"]["name"] == "balls" and reopened.extra["edited_from"]["segments"] == [top]
    assert linked(lib, lib.open("balls")).others == (edited_name,)
    assert linked(lib, reopened).others == ("balls",) and linked(lib, reopened).role == "edited"


def test_read_only_demo_offers_no_edit(open_page, library_dir, tiny, monkeypatch):
    from flashtrace.store.app_files import READ_ONLY_ENV

    Library(library_dir).save(tiny[1], "balls")
    monkeypatch.setenv(READ_ONLY_ENV, "1")
    at = open_page(STORY, trace="lib:balls", step="4")
    no_problems(at)
    assert not [b for b in at.button if b.key == "run_rerun"] and not [t for t in at.toggle if t.key == "rerun_open"]
    assert any("switched off in this read-only demo" in c.value for c in at.caption if "Edit and re-run" in c.value)


def test_the_library_page_links_the_pair(open_page, library_dir, tiny):
    from flashtrace.store.pairs import save_pair

    trace = tiny[1]
    save_pair(Library(library_dir), trace, trace, {"segments": ["P0"], "before": -1.0, "after": -2.0}, "balls")
    at = open_page("pages/5_Library.py")
    no_problems(at)
    shown = [literal(c.value) for c in at.caption]
    assert any(c.startswith("Edited versions: balls-edited") or c.startswith("Edited version of balls") for c in shown)
    (button,) = [b for b in at.button if literal(b.label) in ("Open balls-edited", "Open balls")]
    other = literal(button.label).removeprefix("Open ")
    opened = button.click().run()  # the other trace of the pair opens in the Story
    no_problems(opened)
    assert str(opened.query_params["trace"]).strip("[]'") == f"lib:{other}"
    assert [t.value for t in opened.title] == ["The story of a trace"]
