"""The charts `flashtrace eval` writes are the app's Evaluation charts (issue 18 item 9: one set of chart
definitions, `viz.evaluation`, instead of a second matplotlib copy in `evaluate/report.py`)."""

import io
import json
import re
import shutil
from pathlib import Path

import plotly.io as pio
from PIL import Image

from flashtrace.evaluate.report import write_report
from flashtrace.viz import evaluation, export

SOURCE = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "eval_smollm2" / "examples"


def _folder(tmp_path: Path) -> Path:
    (tmp_path / "examples").mkdir()
    for name in ("arithmetic-0000.json", "needle-0000.json"):
        shutil.copy(SOURCE / name, tmp_path / "examples")
    return tmp_path


def _page_figures(page: str) -> list[dict]:
    blocks = re.findall(r'<script type="application/json" data-ft-figure="[^"]+">(.*?)</script>', page, re.S)
    return [json.loads(block) for block in blocks]


def test_report_html_holds_the_evaluation_page_charts(tmp_path, monkeypatch):
    monkeypatch.setattr(export, "image_export_problem", lambda: "no browser here")
    summary = write_report(_folder(tmp_path), {"model": "smollm2-135m"})
    evaluation.write_charts(summary, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["examples", "report.html", "summary.json", "summary.md"]
    shown = _page_figures((tmp_path / "report.html").read_text())
    expected = [fig for pair in evaluation.task_figures(summary).values() for fig in pair]
    assert [f["layout"]["meta"] for f in shown] == [
        {"view": "metric_bars", "task": "arithmetic"}, {"view": "mean_deletion_curves", "task": "arithmetic"},
        {"view": "metric_bars", "task": "needle"}, {"view": "mean_deletion_curves", "task": "needle"}]
    for page_figure, figure in zip(shown, expected):
        assert page_figure["data"] == json.loads(pio.to_json(figure, validate=False))["data"]

def test_png_charts_stack_the_same_figures_per_task(tmp_path, monkeypatch):
    drawn = []

    def draw(fig, fmt, width=None, height=None, scale=2.0):  # a plain image of the figure's size, no browser
        drawn.append((fig.layout.meta["view"], fig.layout.meta["task"], fmt, width))
        buffer = io.BytesIO()
        Image.new("RGB", (width, fig.layout.height), "white").save(buffer, format="PNG")
        return buffer.getvalue()

    monkeypatch.setattr(export, "image_export_problem", lambda: None)
    monkeypatch.setattr(export, "figure_image", draw)
    written = evaluation.write_charts(write_report(_folder(tmp_path)), tmp_path)
    assert [p.name for p in written] == ["report.html", "metrics.png", "deletion_curves.png"]
    assert drawn == [("metric_bars", "arithmetic", "png", 1100), ("metric_bars", "needle", "png", 1100),
                     ("mean_deletion_curves", "arithmetic", "png", 1100), ("mean_deletion_curves", "needle", "png", 1100)]
    bars, curves = (Image.open(tmp_path / name) for name in ("metrics.png", "deletion_curves.png"))
    assert bars.size == (1100, 2 * 420) and curves.size == (1100, 2 * 380)  # the two tasks one under the other
