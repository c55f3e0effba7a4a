"""Story and Glossary pages (AppTest): every panel of a gallery trace reachable by URL and by Next/Back,
captions shown literally, the faithfulness check run live for a library trace, glossary anchors."""

import html
import json

import pytest

import flashtrace
from flashtrace.app.glossary import TERMS
from flashtrace.store.library import Library
from flashtrace.analysis.story import STEPS, TITLES, story_panels
from flashtrace.store.gallery import load_gallery_trace
from flashtrace.viz.story import LARGE_FONT, screen_lines

from .conftest import no_problems

STORY = "pages/7_Story.py"


@pytest.fixture(scope="module")
def tiny_trace():
    model = flashtrace.load_model("tiny-llama")
    return flashtrace.trace(model, prompt="Mia has 2 pens. She buys 5 more pens. How many pens now?",
                            response="2 + 5 = 7.\nAnswer: 7", hops=1, title="Pens **bold** [x](http://e.x)")


def test_next_and_back_walk_every_panel_in_the_url(open_page):
    at = open_page(STORY, trace="gallery:vartrack", step="1")
    for number, key in enumerate(STEPS, start=1):
        no_problems(at)
        assert at.query_params["step"] in (str(number), [str(number)])
        assert [s.value for s in at.subheader] == [TITLES[key]]
        if number < len(STEPS):
            at.button(key="story_next").click().run()
    assert at.button(key="story_next").disabled
    at.button(key="story_back").click().run()
    assert [s.value for s in at.subheader] == [TITLES["evidence"]]


def test_step_one_shows_the_question_answer_and_reasoning_as_text(open_page):
    at = open_page(STORY, trace="gallery:long-vartrack", step="1")
    no_problems(at)
    assert not at.text_area  # no greyed, disabled boxes
    shown = " ".join(h.proto.body for h in at.get("html"))
    assert "Question: What is the value of VAR HWRXJ?" in shown and "47977" in shown  # the question, the answer
    assert "VAR HWRXJ = VAR IKCOS." in shown  # the reasoning
    assert [e.label for e in at.expander][0] == "The whole prompt"
    assert "Memorize and track the chain(s) of variable assignments" in shown  # inside it, whole
    # a reasoning longer than the screen shows its first and last lines, the whole of it one click away
    reasoning = story_panels(load_gallery_trace("long-vartrack"))[0].data["reasoning"]
    assert [e.label for e in at.expander][1:] == [f"The whole reasoning ({screen_lines(reasoning, 62):,} lines)"]
    assert "more lines: see “The whole reasoning”" in shown and html.escape(reasoning.strip()) in shown


def test_present_button_opens_the_presenter_view_and_exit_leaves_it(open_page):
    at = open_page(STORY, trace="gallery:vartrack", step="3")
    assert at.sidebar.children  # the page list and the Details toggle
    at.button(key="story_present").click().run()
    no_problems(at)
    assert at.query_params["present"] in ("1", ["1"]) and at.query_params["step"] in ("3", ["3"])
    assert not at.sidebar.children and not at.selectbox  # no sidebar, no trace picker
    assert [s.value for s in at.subheader] == [TITLES["hops"]]
    charts = [json.loads(c.proto.spec)["layout"] for c in at.get("plotly_chart")]
    assert charts and all(c["font"]["size"] == LARGE_FONT for c in charts)
    at.button(key="story_next").click().run()
    assert [s.value for s in at.subheader] == [TITLES["evidence"]] and not at.sidebar.children
    at.button(key="story_exit").click().run()
    no_problems(at)
    assert "present" not in at.query_params and at.sidebar.children and at.selectbox
    assert [s.value for s in at.subheader] == [TITLES["evidence"]]


@pytest.mark.parametrize("step, panel", [("0", "question"), ("-3", "question"), ("9", "check"), ("x", "question")])
def test_a_bad_step_in_the_url_falls_back_to_a_real_panel(open_page, step, panel):
    """Below the first panel or not a number: the first; past the last: the last."""
    at = open_page(STORY, trace="gallery:free-form", step=step)
    no_problems(at)
    assert [s.value for s in at.subheader] == [TITLES[panel]]


def test_hops_panel_says_how_much_reached_the_input(open_page):
    from flashtrace.analysis.text import pct
    from flashtrace.store.gallery import load_gallery_trace

    at = open_page(STORY, trace="gallery:needle", step="3")
    no_problems(at)
    text = " ".join(m.value for m in at.markdown)
    final = 1 - load_gallery_trace("needle").hops[-1].rho  # recursive span reasoning + answer: reached = 1 - ρ_K
    assert f"after 3 hops {pct(final)}".replace("%", "\\%") in text  # shown through ui.plain
    captions = " ".join(c.value for c in at.caption)
    assert "Glossary#rho" in captions and "Glossary#hop" in captions


def test_live_check_for_a_library_trace(open_page, library_dir, tiny_trace):
    Library(library_dir).save(tiny_trace, "pens")
    at = open_page(STORY, trace="lib:pens", step="5")
    no_problems(at)
    text = " ".join(m.value for m in at.markdown)
    assert "not precomputed for this trace" in text
    at.button(key="story_run_check").click().run()
    no_problems(at)
    text = " ".join(m.value for m in at.markdown)
    assert "log\\-probability from" in text and "draws" in text
    assert any("Computed live" in c.value for c in at.caption)
    assert at.get("plotly_chart")
    assert "**bold**" not in text  # the title never reaches Markdown unescaped


def test_glossary_page_lists_every_term_with_its_anchor(open_page):
    at = open_page("pages/8_Glossary.py")
    no_problems(at)
    assert [s.value for s in at.subheader] == [t.name for t in TERMS]
    assert [s.proto.anchor for s in at.subheader] == [t.key for t in TERMS]


def _helps(at) -> str:
    """Every help tooltip and caption on the page, joined."""
    texts = [c.value for c in at.caption]
    for kind in ("segmented_control", "select_slider", "slider", "radio", "toggle", "selectbox"):
        texts += [getattr(w.proto, "help", "") for w in at.get(kind)]
    return " ".join(texts)


@pytest.mark.parametrize("page, anchors", [("pages/2_Explore.py", ("hop", "rho")),
                                           ("pages/3_Hop_graph.py", ("threshold", "rho")),
                                           ("pages/4_Compare.py", ("rho",)),
                                           ("pages/6_Evaluation.py", ("rise", "mas", "recovery"))])
def test_help_tooltips_link_the_glossary(open_page, page, anchors):
    at = open_page(page, trace="gallery:free-form")
    no_problems(at)
    shown = _helps(at)
    for anchor in anchors:
        assert f"(Glossary#{anchor})" in shown, (page, anchor)


def test_a_precomputed_check_is_shown_without_a_model(open_page, tmp_path, monkeypatch):
    import shutil

    from flashtrace.store.gallery import GALLERY_ENV, gallery_dir
    from flashtrace.analysis.schema import Trace

    folder = tmp_path / "gallery"
    shutil.copytree(gallery_dir(), folder)
    trace = Trace.load(folder / "free-form.json")
    check = {"version": 1, "fraction": 0.1, "n_prompt": 40, "n_deleted": 4, "before": -1.5, "top": -5.0,
             "random": [-1.75, -2.0], "random_mean": -1.875, "seed": 0, "model": trace.model.name}
    trace = trace.model_copy(update={"extra": {**trace.extra, "faithfulness": check}})
    trace.save(folder / "free-form.json")
    monkeypatch.setenv(GALLERY_ENV, str(folder))
    at = open_page(STORY, trace="gallery:free-form", step="5")
    no_problems(at)
    text = " ".join(m.value for m in at.markdown)
    assert "from \\-1\\.50 to \\-5\\.00" in text and "not precomputed" not in text
    assert any("Precomputed when the gallery was built" in c.value for c in at.caption)
    assert at.button(key="story_next").disabled  # the last step
    assert at.get("plotly_chart") and not [b for b in at.button if b.key == "story_run_check"]
