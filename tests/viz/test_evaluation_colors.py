"""Each evaluation method keeps one colour of its own: distinct within a run (the featured paper run holds
fifteen methods, more than any cyclic palette of nine), the same in the bar chart, the mean deletion curves
and one example's deletion curves, and the same whichever methods the Evaluation page has selected."""

import colorsys
import itertools
import json
from pathlib import Path

from flashtrace.viz.colors import METHOD_PALETTE, OTHER_METHOD_COLORS, hex_to_rgb, method_colors
from flashtrace.viz.compare import deletion_curves
from flashtrace.viz.evaluation import mean_deletion_curves, metric_bars, task_figures

FEATURED = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "eval_smollm2_paper" / "summary.json"


def _bar_colors(fig) -> list[dict[str, str]]:
    """Per subplot (RISE, MAS, Recovery): method -> bar colour."""
    return [dict(zip(trace.x, trace.marker.color)) for trace in fig.data]


def _curve_colors(fig) -> dict[str, str]:
    return {trace.name.split(" (RISE")[0]: trace.line.color for trace in fig.data}


def _lab(color: str) -> tuple[float, float, float]:
    """CIE L*a*b* (D65) of an sRGB ``#rrggbb``."""
    r, g, b = ((c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4) for c in (v / 255 for v in hex_to_rgb(color)))
    xyz = ((0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, 0.2126 * r + 0.7152 * g + 0.0722 * b,
           (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883)
    fx, fy, fz = (t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in xyz)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def _contrast(color: str, background: str) -> float:
    """WCAG contrast ratio of two sRGB colours."""
    def luminance(c: str) -> float:
        r, g, b = ((v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4) for v in (x / 255 for x in hex_to_rgb(c)))
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    low, high = sorted((luminance(color), luminance(background)))
    return (high + 0.05) / (low + 0.05)


def test_featured_run_methods_get_distinct_colours_shared_by_both_charts():
    summary = json.loads(FEATURED.read_text())
    figures = task_figures(summary)
    assert figures
    for task, (bars, curves) in figures.items():
        methods = list(summary["tasks"][task]["methods"])
        assert len(methods) > 9  # more than the old nine-colour cycle
        curve_colors = _curve_colors(curves)
        assert len(set(curve_colors.values())) == len(curve_colors) == len(methods)
        for per_metric in _bar_colors(bars):
            assert len(set(per_metric.values())) == len(per_metric)
            assert per_metric == {m: curve_colors[m] for m in per_metric}


def test_one_example_curves_use_the_run_charts_colours():
    summary = json.loads(FEATURED.read_text())
    record = json.loads((FEATURED.parent / "examples" / "needle-0000.json").read_text())
    everything = _curve_colors(mean_deletion_curves(summary, "needle", list(summary["tasks"]["needle"]["methods"])))
    assert _curve_colors(deletion_curves(record)) == everything
    picked = ["ifr", "flashtrace-k1", "attention", "flashtrace-k1-gen"]  # the page shows the selected methods only
    example = deletion_curves({**record, "methods": {m: record["methods"][m] for m in picked}})
    assert _curve_colors(example) == {m: everything[m] for m in picked}


def test_a_method_keeps_its_colour_whatever_else_is_selected():
    summary = json.loads(FEATURED.read_text())
    methods = list(summary["tasks"]["needle"]["methods"])
    everything = _bar_colors(metric_bars(summary, "needle", methods))[0]
    picked = ["ifr", "flashtrace-k2", "attention"]  # as the page's multiselect might leave them, reordered
    assert _bar_colors(metric_bars(summary, "needle", picked))[0] == {m: everything[m] for m in picked}
    assert _curve_colors(mean_deletion_curves(summary, "needle", picked[::-1])) == {m: everything[m] for m in picked}


def test_unknown_names_get_free_colours_that_do_not_depend_on_order():
    names = [f"flashtrace-k{k}" for k in range(9)] + [f"method-{i}" for i in range(14)]  # palette runs out
    colors = method_colors(names)
    assert len(set(colors.values())) == len(names)
    assert method_colors(names[::-1]) == colors
    assert method_colors(["flashtrace-k1", "my-method"])["flashtrace-k1"] == METHOD_PALETTE["flashtrace-k1"]
    assert all(c.startswith("#") and len(c) == 7 for c in colors.values())


def test_fixed_colours_are_far_apart_and_flashtrace_variants_share_cool_hues():
    fixed = list(METHOD_PALETTE.values()) + list(OTHER_METHOD_COLORS)
    closest = min(sum((p - q) ** 2 for p, q in zip(_lab(a), _lab(b))) ** 0.5 for a, b in itertools.combinations(fixed, 2))
    assert closest > 12  # CIE76 distance; about 2.3 is a just-noticeable difference
    for background in ("#ffffff", "#0e1117"):  # the light theme's and Streamlit's dark theme's background
        assert min(_contrast(c, background) for c in fixed) >= 2.0
    for name, color in METHOD_PALETTE.items():
        hue = 360 * colorsys.rgb_to_hls(*(c / 255 for c in hex_to_rgb(color)))[0]
        assert (170 <= hue <= 265) == name.startswith("flashtrace"), (name, color, hue)
