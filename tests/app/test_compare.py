import pytest

import flashtrace
from flashtrace.compare import compare_depths
from flashtrace.gallery import load_gallery_trace
from flashtrace.library import Library

from .conftest import charts, no_problems

COMPARE = "pages/4_Compare.py"


def test_hop_depths_side_by_side(open_page):
    trace = load_gallery_trace("arithmetic")
    at = open_page(COMPARE, trace="gallery:arithmetic")
    no_problems(at)
    found = charts(at)
    comparison = compare_depths(trace, k=10)
    strips = found["score_strips"]["data"][0]
    assert strips["y"] == [f"K={d}" for d in comparison.depths]
    assert strips["customdata"][1] == pytest.approx([comparison.prompt_scores[1][i]
                                                     for i in comparison.prompt_positions])
    agreement = found["depth_agreement"]
    assert agreement["data"][0]["y"] == pytest.approx([v for v in comparison.spearman])
    assert agreement["data"][1]["y"] == pytest.approx(comparison.overlap)
    at.slider(key="depth_k").set_value(3).run()
    assert charts(at)["depth_agreement"]["data"][1]["y"] == pytest.approx(compare_depths(trace, k=3).overlap)


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
    assert all(0 <= v <= 1 for v in table["RISE ↓"]) and all(v >= 0 for v in table["seconds"])
    curves = charts(at)["deletion_curves"]["data"]
    assert len(curves) == 2 and all(len(c["y"]) == 21 for c in curves)
    for curve, rise in zip(curves, table["RISE ↓"]):
        y = curve["y"]
        assert all(0 <= v <= 1 for v in y) and all(a >= b for a, b in zip(y, y[1:]))  # normalised, non-increasing
        assert rise == pytest.approx(sum((a + b) / 2 for a, b in zip(y, y[1:])) / 20)  # RISE = area under it
