"""Shown text is safe everywhere (issue 48 item 6 and L4): a trace whose title, prompt, response, model name and
task hold a right-to-left override (U+202E) is opened on every page that shows a stored trace, at every Story step
and Explore view, and exported as HTML (the report, the Story, the notebook view); the character is never
applied, in the page's elements or escaped inside a figure's JSON: it shows as ⟨U+202E⟩. Before, the Hop graph's
tables and node picker, Compare's sentences, the Library's filters, the Story's boxes and the export applied it."""

import pytest
from streamlit.testing.v1 import AppTest

import flashtrace
from flashtrace.analysis.story import story_panels
from flashtrace.store.library import Library
from flashtrace.viz.notebook import trace_html
from flashtrace.viz.report import trace_report_html
from flashtrace.viz.story import story_document

from .conftest import APP

pytestmark = pytest.mark.slow
RLO = "\u202e"
APPLIED = (RLO.encode(), b"\\u202e", b"\\u202E")  # the character, or escaped inside a JSON string (a figure)
PAGES = ([("pages/2_Explore.py", {"view": v}) for v in ("heatmap", "text", "segments")]
         + [("pages/3_Hop_graph.py", {}), ("pages/4_Compare.py", {}), ("pages/5_Library.py", {})]
         + [("pages/7_Story.py", {"step": str(n)}) for n in range(1, 8)] + [("pages/7_Story.py", {"present": "1"})])


@pytest.fixture(scope="module")
def rtl_trace():
    model = flashtrace.load_model("tiny-llama")
    trace = flashtrace.trace(model, f"Ann has 3 apples{RLO}selppa. Ben{RLO} buys 4. How many?",
                             f"3 + 4 = 7{RLO}.\nAnswer: 7{RLO}", hops=2, steps=True, title=f"Apples{RLO}evil")
    return trace.model_copy(update={"model": trace.model.model_copy(update={"name": f"tiny{RLO}llama"}),
                                    "extra": {**trace.extra, "task": f"task{RLO}x"}})


def _elements(node):
    proto = getattr(node, "proto", None)
    if proto is not None:
        yield proto
    children = getattr(node, "children", None) or {}
    for child in (children.values() if isinstance(children, dict) else children):
        yield from _elements(child)


IDS = [f"{p[6:-3]}-{'-'.join(f'{k}{v}' for k, v in q.items()) or 'default'}" for p, q in PAGES]


@pytest.mark.parametrize("page, query", PAGES, ids=IDS)
def test_no_page_applies_a_right_to_left_override(library_dir, rtl_trace, page, query):
    Library(library_dir).save(rtl_trace, "rtl")
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.query_params.update({"trace": "lib:rtl", **query})
    at.switch_page(page).run()
    assert not at.exception, [e.message for e in at.exception]
    applied = [type(p).__name__ for p in _elements(at._tree) if any(a in p.SerializeToString() for a in APPLIED)]
    assert applied == []


def test_no_export_applies_a_right_to_left_override(rtl_trace):
    for html in (trace_report_html(rtl_trace), story_document(rtl_trace, story_panels(rtl_trace), rtl_trace.title),
                 trace_html(rtl_trace)):
        assert not any(a.decode() in html for a in APPLIED)
        assert "⟨U+202E⟩" in html or "&#10216;U+202E&#10217;" in html
