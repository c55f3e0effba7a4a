"""Issue 30 in the app (AppTest): a crafted library file never takes a page down and can be deleted (defect
1), the Story's evidence step works on a trace without segments (defect 13), a right-to-left override in a
file name is shown, not applied (defect 16)."""

import pytest

from flashtrace.store.library import Library
from tests.bad_files import RTL_NAME, overflow_scores, without_segments

from .conftest import literal, no_problems

PAGES = ["pages/2_Explore.py", "pages/3_Hop_graph.py", "pages/4_Compare.py", "pages/7_Story.py"]


def _chosen(at):
    return next(sb for sb in at.selectbox if sb.key and sb.key.startswith("chosen_"))


def test_home_and_library_render_with_the_overflowing_file(open_page, library_dir):
    overflow_scores(library_dir / "overflow.json")
    at = open_page()
    no_problems(at)
    at = open_page("pages/5_Library.py")
    assert not at.exception, [e.message for e in at.exception]
    assert any("overflow" in literal(w.value) and "unreadable" in literal(w.value) for w in at.warning)


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("ref", ["gallery:needle", "lib:overflow"])
def test_trace_pages_render_with_the_overflowing_file(open_page, library_dir, page, ref):
    overflow_scores(library_dir / "overflow.json")
    at = open_page(page, trace=ref)
    assert not at.exception, [e.message for e in at.exception]
    if ref.startswith("lib:"):  # the file itself: a message, not a traceback
        assert any("Cannot open" in e.value for e in at.error), [e.value for e in at.error]


def test_the_overflowing_file_is_deleted_from_the_library_page(open_page, library_dir):
    overflow_scores(library_dir / "overflow.json")
    at = open_page("pages/5_Library.py")
    _chosen(at).set_value("overflow").run()
    box = next(c for c in at.checkbox if c.key.startswith("confirm_delete_overflow"))
    box.check().run()
    at.button(key="delete").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert not (library_dir / "overflow.json").exists()


def test_story_evidence_step_on_a_trace_without_segments(open_page, library_dir):
    without_segments(library_dir / "noseg.json")
    assert Library(library_dir).entries()[0].readable
    for step in range(1, 6):
        at = open_page("pages/7_Story.py", trace="lib:noseg", step=str(step))
        no_problems(at)


def test_a_right_to_left_override_in_a_file_name_is_written_out(open_page, library_dir):
    without_segments(library_dir / f"{RTL_NAME}.json")  # a valid trace, copied in under that name
    at = open_page("pages/5_Library.py")
    assert not at.exception
    cells = [str(v) for v in at.dataframe[0].value["name"]]
    shown = " ".join(cells + [w.value for w in at.warning] + [str(o) for o in _chosen(at).options])
    assert "\u202e" not in shown, shown
    assert "report-⟨U+202E⟩evil" in cells
