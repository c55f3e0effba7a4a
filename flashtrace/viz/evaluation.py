"""Figures and tables of a `flashtrace eval` folder: per-task summary rows, metric bars with 95 %
intervals and the random-ranking level, mean deletion curves, and one example's methods beside its gold
tokens. Method, task and example names come from the folder's files: they are shown as text, escaped like
trace text (`plotly_text`, `template_text`), never as Plotly's HTML."""

from __future__ import annotations

from typing import TYPE_CHECKING

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..evaluate.report import LABELS, ci95, gold_token_mask
from .colors import method_colors
from .compare import score_strips
from .tokens import plotly_text, template_text

if TYPE_CHECKING:
    from pathlib import Path

RATE_METRICS = ("rise", "mas", "recovery")


def summary_columns(rows: list[dict]) -> dict:
    """Streamlit column settings for `summary_rows` that fit eleven columns in a 1280-px window: fixed
    narrow widths, three decimals, and a plain "±" header on each std column (its help names the metric).

    Args:
        rows: The `summary_rows` shown (the first row's columns are configured).

    Returns:
        ``{column: settings}`` (``label``, ``width``, ``help``) for each column.
    """
    config = {"method": {"width": 140}, "hops": {"width": 48}, "examples": {"label": "n", "width": 40},
              LABELS["seconds"]: {"label": "seconds", "width": 72, "help": "attribution seconds per example"}}
    for column in (rows[0] if rows else {}):
        if column in config:
            continue
        if column.startswith("± std ("):
            metric = column[len("± std ("):-1]
            config[column] = {"label": "±", "width": 58, "help": f"standard deviation of {LABELS[metric]}"}
        else:
            config[column] = {"width": 112 if "Recovery" in column else 72}
    return config


def summary_rows(summary: dict, task: str, methods: list[str]) -> list[dict]:
    """One row per method: hops, then mean and std of RISE, MAS, Recovery@10% and attribution seconds.

    Args:
        summary: The evaluation folder's summary (`flashtrace.evaluate.report.write_report`).
        task: The task's name in the summary.
        methods: The methods shown, in order; those the task does not hold are left out.

    Returns:
        One row (column name to value) per method, with its number of examples.
    """
    info = summary["tasks"][task]["methods"]
    rows = []
    for m in methods:
        if m not in info:
            continue
        examples = max(info[m][metric]["n"] for metric in ("rise", "mas", "recovery", "seconds"))  # k = 0: no RISE
        row = {"method": m, "hops": "–" if info[m]["hops"] is None else str(info[m]["hops"]), "examples": examples}
        for metric in ("rise", "mas", "recovery", "seconds"):
            row[LABELS[metric]] = info[m][metric]["mean"]
            row[f"± std ({metric})"] = info[m][metric]["std"]
        rows.append(row)
    return rows


def metric_bars(summary: dict, task: str, methods: list[str]) -> go.Figure:
    """RISE, MAS and Recovery@10% of each method on one task: mean with its 95 % interval; Recovery shows
    the level a random ranking reaches and the best any ranking can reach.

    Args:
        summary: The evaluation folder's summary (`flashtrace.evaluate.report.write_report`).
        task: The task's name in the summary.
        methods: The methods shown, in order; those without a value for a metric are left out of its chart.

    Returns:
        The figure: one bar chart per metric, side by side.
    """
    info = summary["tasks"][task]
    colors = method_colors(methods)
    metrics = [m for m in RATE_METRICS if any(info["methods"].get(x, {}).get(m, {}).get("mean") is not None
                                              for x in methods)] or list(RATE_METRICS)  # a run without deletion curves: Recovery alone
    fig = make_subplots(rows=1, cols=len(metrics), subplot_titles=[LABELS[m] for m in metrics], horizontal_spacing=0.07)
    for col, metric in enumerate(metrics, start=1):
        shown = [m for m in methods if m in info["methods"] and info["methods"][m][metric]["mean"] is not None]
        stats = [info["methods"][m][metric] for m in shown]
        fig.add_trace(go.Bar(
            x=list(map(plotly_text, shown)), y=[s["mean"] for s in stats], marker_color=[colors[m] for m in shown],
            showlegend=False,
            error_y={"type": "data", "array": [ci95(s) for s in stats], "thickness": 1.2},
            customdata=[[s["std"], s["n"]] for s in stats],
            hovertemplate="%{x}: %{y:.3f} ± %{customdata[0]:.3f} (std, n = %{customdata[1]})<extra></extra>"),
            row=1, col=col)
        if metric == "recovery":
            for key, label, dash in (("recovery_chance", "random ranking", "dot"), ("recovery_cap", "best achievable", "dash")):
                level = (info.get(key) or {}).get("mean")
                if level is not None:
                    fig.add_hline(y=level, line_dash=dash, line_color="#475569", row=1, col=col,
                                  annotation_text=f"{label} {level:.2f}", annotation_font_size=10)
    fig.update_yaxes(rangemode="tozero")
    fig.update_xaxes(tickangle=-35, automargin=True)
    fig.update_layout(height=420, margin={"l": 50, "r": 10, "t": 70, "b": 90},  # title above the subplot titles
                      title={"text": f"{plotly_text(task)}: mean ± 95 % interval (n = {info['n']})", "font": {"size": 14},
                             "y": 1.0, "yref": "container", "yanchor": "top", "pad": {"t": 10}},
                      meta={"view": "metric_bars", "task": task})
    return fig


def mean_deletion_curves(summary: dict, task: str, methods: list[str]) -> go.Figure:
    """The mean normalised deletion curve of each method on one task (lower = more faithful).

    Args:
        summary: The evaluation folder's summary (`flashtrace.evaluate.report.write_report`).
        task: The task's name in the summary.
        methods: The methods shown; those without a mean curve are left out.

    Returns:
        The line figure, one curve per method.
    """
    curves = summary["tasks"][task]["mean_deletion_curve"]
    colors = method_colors(methods)
    fig = go.Figure()
    for m in methods:
        if m not in curves:
            continue
        curve = curves[m]
        steps = len(curve) - 1
        rise = summary["tasks"][task]["methods"][m]["rise"]["mean"]
        fig.add_trace(go.Scatter(x=[t / steps for t in range(steps + 1)], y=curve, mode="lines",
                                 name=f"{plotly_text(m)} (RISE {rise:.3f})",
                                 line={"color": colors[m], "dash": "dash" if m.endswith("-nostop") else "solid"},
                                 hovertemplate=f"{template_text(m)}<br>deleted %{{x:.0%}}: %{{y:.3f}}<extra></extra>"))
    fig.update_layout(title={"text": f"{plotly_text(task)}: mean deletion curve", "font": {"size": 14}}, height=380,
                      margin={"l": 40, "r": 10, "t": 40, "b": 40},
                      xaxis={"title": "share of prompt tokens deleted", "tickformat": ".0%"},
                      yaxis={"title": "normalised target log-prob", "range": [-0.02, 1.05]},
                      meta={"view": "mean_deletion_curves", "task": task})
    return fig


def example_strips(record: dict, methods: list[str]) -> go.Figure:
    """Each method's prompt attribution for one example, under a `gold` row marking the gold tokens.

    Args:
        record: The example's evaluation record (`flashtrace.evaluate.runner.evaluate_context`).
        methods: The methods shown, in order; those the record does not hold are left out.

    Returns:
        The `score_strips` figure; no `gold` row when the record has no gold.
    """
    rows = {}
    gold = gold_token_mask(record)
    if gold is not None:
        rows["gold"] = [1.0 if g else 0.0 for g in gold]
    rows.update({m: record["methods"][m]["scores"] for m in methods if m in record["methods"]})
    fig = score_strips(rows, record["tokens"], f"{record.get('id', 'example')}: prompt attribution by method")
    fig.update_layout(meta={"view": "example_strips", "gold": gold is not None})
    return fig


def task_figures(summary: dict) -> dict[str, tuple[go.Figure, go.Figure]]:
    """Per task of a summary: its `metric_bars` and `mean_deletion_curves` over every method it holds (the
    charts of the app's Evaluation page, and of the report `flashtrace eval` writes).

    Args:
        summary: The evaluation folder's summary (`flashtrace.evaluate.report.write_report`).

    Returns:
        ``{task: (metric bars, mean deletion curves)}``.
    """
    figures = {}
    for task, info in summary["tasks"].items():
        methods = list(info["methods"])
        figures[task] = (metric_bars(summary, task, methods), mean_deletion_curves(summary, task, methods))
    return figures


def report_html(summary: dict) -> str:
    """The figures of `task_figures` as one offline HTML page (the vendored plotly.js, no network).

    Args:
        summary: The evaluation folder's summary (`flashtrace.evaluate.report.write_report`).

    Returns:
        The whole HTML page (`standalone_html`).
    """
    from .export import standalone_html

    model = (summary.get("settings") or {}).get("model")
    blocks = [fig for pair in task_figures(summary).values() for fig in pair]
    intro = ("Mean ± 95 % interval of each metric per task and method (Recovery with the random-ranking and "
             "best-achievable levels), then the mean deletion curves." + (f" Model: {model}." if model else ""))
    return standalone_html("FlashTrace evaluation", blocks, intro=intro)


def stacked_png(figures: list[go.Figure], width: int = 1100) -> bytes:
    """The figures drawn as PNG (kaleido) one under the other in one image.

    Args:
        figures: The figures, top to bottom.
        width: Each figure's width in pixels.

    Returns:
        The PNG file's bytes.

    Raises:
        MissingDependencyError: When kaleido or a Chromium is missing, or drawing fails (`figure_image`).
    """
    import io

    from PIL import Image

    from .export import figure_image

    images = [Image.open(io.BytesIO(figure_image(fig, "png", width=width, scale=1.0))) for fig in figures]
    sheet = Image.new("RGB", (max(i.width for i in images), sum(i.height for i in images)), "white")
    top = 0
    for image in images:
        sheet.paste(image, (0, top))
        top += image.height
    buffer = io.BytesIO()
    sheet.save(buffer, format="PNG")
    return buffer.getvalue()


def write_charts(summary: dict, out: str | Path) -> list[Path]:
    """The charts of the Evaluation page for every task of `summary`, written into folder `out`:
    ``report.html`` (offline, interactive) and, where kaleido can draw (a Chromium on the machine),
    ``metrics.png`` (mean ± 95 % interval per task × method, Recovery's random-ranking and best-achievable
    levels) and ``deletion_curves.png`` (mean normalised deletion curves), the tasks one under the other.
    Returns the paths written.

    Args:
        summary: The evaluation folder's summary (`flashtrace.evaluate.report.write_report`).
        out: The folder written into.

    Returns:
        The paths written: ``report.html``, then the two PNG files where they could be drawn.
    """
    from pathlib import Path

    from ..base.fileio import atomic_write_bytes, atomic_write_text
    from . import export

    out = Path(out)
    written = [out / "report.html"]
    atomic_write_text(written[0], report_html(summary))
    if export.image_export_problem() is None:
        figures = task_figures(summary)
        with export.image_session():  # one browser draws every chart
            for name, index in (("metrics.png", 0), ("deletion_curves.png", 1)):
                atomic_write_bytes(out / name, stacked_png([pair[index] for pair in figures.values()]))
                written.append(out / name)
    return written


__all__ = ["summary_columns", "summary_rows", "metric_bars", "mean_deletion_curves", "example_strips", "task_figures",
           "report_html", "stacked_png", "write_charts"]
