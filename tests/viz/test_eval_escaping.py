"""Issue 30, defect 8: method, task and example names from an evaluation folder reach Plotly as text, not
HTML (Plotly renders a subset of HTML in titles, legends, tick labels, annotations and hover labels)."""

import json
from pathlib import Path

import plotly.io as pio

from flashtrace.evaluate.report import summarise
from flashtrace.viz.compare import deletion_curves, method_strips
from flashtrace.viz.evaluation import example_strips, mean_deletion_curves, metric_bars

SOURCE = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "eval_smollm2" / "examples"
EVIL_METHOD = "<a href='http://evil.example/'>click</a>"
EVIL_TASK = "<b>needle</b> %{x}"
EVIL_ID = "<img src=x onerror=alert(1)>"


def hostile_records() -> list[dict]:
    record = json.loads((SOURCE / "needle-0000.json").read_text())
    record["methods"] = {EVIL_METHOD: record["methods"]["ifr"], "attention": record["methods"]["attention"]}
    record["task"], record["id"] = EVIL_TASK, EVIL_ID
    return [record]


def strings(value):
    """Every string in a figure's JSON (data and layout)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def assert_no_markup(fig) -> None:
    spec = json.loads(pio.to_json(fig, validate=False))
    spec["layout"].pop("meta", None)  # data for the app and the tests, never drawn
    shown = [s for s in strings(spec) if "<" in s or "%{x}" in s]
    for text in shown:
        for raw in ("<a ", "<b>", "<img", "needle</b> %{x}"):
            assert raw not in text, text
    texts = " ".join(strings(spec))
    assert "&lt;a href" in texts or "&lt;b&gt;" in texts or "&lt;img" in texts


def test_evaluation_charts_show_names_as_text():
    records = hostile_records()
    summary = summarise(records)
    methods = [EVIL_METHOD, "attention"]
    assert_no_markup(metric_bars(summary, EVIL_TASK, methods))
    assert_no_markup(mean_deletion_curves(summary, EVIL_TASK, methods))
    assert_no_markup(example_strips(records[0], methods))


def test_example_curves_and_strips_show_names_as_text():
    record = hostile_records()[0]
    assert_no_markup(deletion_curves(record))
    assert_no_markup(method_strips(record))
