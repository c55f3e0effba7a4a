"""The pair's figures (viz.diff): the difference heatmap shows exactly `analysis.diff`'s values, both heatmaps
share one colour scale, and the pair's offline page escapes every text and embeds three charts."""

import pytest

from flashtrace.analysis.diff import attribution_diff, edit_outcome
from flashtrace.viz.diff import difference_heatmap, pair_document, pair_heatmaps
from flashtrace.viz.tokens import token_grid

from ..trace_factory import make_trace, vector

PROMPT = ["Ann has 3 apples.", "Ben has 4 pears.", "Cat sings."]
STEPS = ["Ann has 3.", "So 3."]
ANSWER = "Answer: 3"


def _pair():
    original = make_trace(PROMPT, STEPS, ANSWER, [vector(PROMPT, STEPS, ANSWER, {"P0": 0.5, "P1": 0.4, "P2": 0.1,
                                                                                  "S0": 0.2})])
    kept = [PROMPT[0], PROMPT[2]]
    edited = make_trace(kept, STEPS, ANSWER, [vector(kept, STEPS, ANSWER, {"P0": 0.9, "P1": 0.1, "S0": 0.2})])
    return original, edited, attribution_diff(original, edited)


def test_difference_heatmap_cells_are_the_differences():
    _original, edited, diff = _pair()
    fig = difference_heatmap(edited, diff, width=16)
    z = {t.name: t.z for t in fig.data}
    for i, (r, c) in enumerate(token_grid(edited, 16)):
        if diff.values[i] is None:
            assert z["difference"][r][c] is None and z["new"][r][c] == 0.0
        else:
            assert z["difference"][r][c] == pytest.approx(diff.values[i])
    assert fig.data[0].zmin == pytest.approx(-diff.top) and fig.data[0].zmax == pytest.approx(diff.top)


def test_both_heatmaps_share_one_colour_scale():
    original, edited, diff = _pair()
    first, second, _ = pair_heatmaps(original, edited, diff)
    assert first.layout.meta["top"] == second.layout.meta["top"]
    assert first.layout.meta["top"]["prompt"] == pytest.approx(0.9 / 4)  # the edited trace's larger top


def test_pair_document_is_offline_and_escaped():
    original, edited, diff = _pair()
    outcome = edit_outcome(-1.0, -3.0, "3", "<script>alert(1)</script>")
    page = pair_document(original, edited, outcome, diff, "removed P1 \u201c<b>Ben</b>\u201d", "t <i>x</i>")
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)" in page
    assert "<b>Ben</b>" not in page and "<i>x</i>" not in page
    assert all(f'id="ft-figure-{i}"' in page for i in range(3)) and 'id="ft-figure-3"' not in page
    assert "http://" not in page.replace("http://www.w3.org", "") and "src=\"http" not in page
    assert "-2.000 nats" in page
