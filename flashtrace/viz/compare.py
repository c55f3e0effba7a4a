"""Comparison figures: prompt attribution side by side (hop depths or methods) as aligned strips, the
agreement between consecutive hop depths, and deletion curves with their faithfulness numbers."""

from __future__ import annotations

import html

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..compare import HopDepthComparison
from .colors import PROMPT, PROMPT_SCALE, REASONING
from .tokens import visible_label

METHOD_COLORS = ["#2563eb", "#ea580c", "#16a34a", "#9333ea", "#db2777", "#0891b2", "#65a30d", "#b45309", "#475569"]


def score_strips(rows: dict[str, list[float]], tokens: list[str], title: str) -> go.Figure:
    """One heatmap row per label (a hop depth or a method) over the same prompt tokens; each row scaled
    to its own maximum so rankings compare at a glance (hover shows the raw value)."""
    labels = list(rows)
    z, raw = [], []
    for label in labels:
        values = rows[label]
        top = max(values, default=0.0) or 1.0
        z.append([v / top for v in values])
        raw.append(values)
    fig = go.Figure(go.Heatmap(
        z=z, y=labels, x=list(range(len(tokens))), customdata=raw, colorscale=PROMPT_SCALE, zmin=0, zmax=1,
        text=[[html.escape(visible_label(t, 30)) for t in tokens] for _ in labels], xgap=0, ygap=2,
        hovertemplate="%{y} · token %{text}<br>score %{customdata:.4g} (%{z:.0%} of the row's max)<extra></extra>",
        colorbar={"title": {"text": "of row max", "side": "right"}, "thickness": 12}))
    fig.update_layout(title={"text": title, "font": {"size": 14}}, height=90 + 34 * len(labels),
                      margin={"l": 10, "r": 10, "t": 40, "b": 30},
                      xaxis={"title": "prompt tokens in text order", "showticklabels": False},
                      yaxis={"autorange": "reversed", "automargin": True, "type": "category"},
                      meta={"view": "score_strips"})
    return fig


def depth_strips(comparison: HopDepthComparison, token_texts: list[str]) -> go.Figure:
    """`score_strips` of the normalised prompt attribution after hops 0..K."""
    positions = comparison.prompt_positions
    rows = {f"K={d}": [comparison.prompt_scores[d][i] for i in positions] for d in comparison.depths}
    return score_strips(rows, [token_texts[i] for i in positions], "Prompt attribution by hop depth")


def depth_agreement(comparison: HopDepthComparison) -> go.Figure:
    """Left: rank correlation and top-k overlap between consecutive depths. Right: the share of the
    target's attribution that has reached the input after hops 0..K. The convergence depth is marked."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Agreement of consecutive depths",
                                                        "Attribution reaching the input"))
    pairs = [f"{d}→{d + 1}" for d in comparison.depths[:-1]]
    fig.add_trace(go.Scatter(x=pairs, y=comparison.spearman, mode="lines+markers", name="Spearman ρ",
                             line={"color": PROMPT}), row=1, col=1)
    fig.add_trace(go.Scatter(x=pairs, y=comparison.overlap, mode="lines+markers", name=f"top-{comparison.k} overlap",
                             line={"color": REASONING}), row=1, col=1)
    fig.add_trace(go.Bar(x=[f"K={d}" for d in comparison.depths], y=comparison.reached, name="reached the input",
                         marker_color=PROMPT, hovertemplate="%{x}: %{y:.1%}<extra></extra>"), row=1, col=2)
    if comparison.convergence_depth is not None:
        fig.add_annotation(x=f"K={comparison.convergence_depth}", y=1.0, xref="x2", yref="y2", showarrow=True,
                           text=f"converged at K={comparison.convergence_depth}", ay=-30)
    fig.update_yaxes(range=[-1.05 if any(v is not None and v < 0 for v in comparison.spearman) else 0, 1.05], row=1,
                     col=1)
    fig.update_yaxes(range=[0, 1.1], tickformat=".0%", row=1, col=2)
    fig.update_layout(height=330, margin={"l": 40, "r": 10, "t": 50, "b": 30}, legend={"orientation": "h", "y": -0.2},
                      meta={"view": "depth_agreement", "convergence_depth": comparison.convergence_depth})
    return fig


def deletion_curves(record: dict) -> go.Figure:
    """Normalised deletion curves (lower area = more faithful) of every method in an evaluation
    record (`flashtrace.evaluate.runner.evaluate_context`)."""
    fig = go.Figure()
    for i, (name, m) in enumerate(record["methods"].items()):
        steps = len(m["n"]) - 1
        fig.add_trace(go.Scatter(
            x=[t / steps for t in range(steps + 1)], y=m["n"], mode="lines+markers", name=f"{name} (RISE {m['rise']:.3f})",
            line={"color": METHOD_COLORS[i % len(METHOD_COLORS)]},
            hovertemplate=f"{name}<br>deleted %{{x:.0%}}: %{{y:.3f}}<extra></extra>"))
    fig.update_layout(title={"text": "Deletion curves: target log-probability as top prompt tokens are deleted",
                             "font": {"size": 14}}, height=380, margin={"l": 40, "r": 10, "t": 40, "b": 40},
                      xaxis={"title": "share of prompt tokens deleted", "tickformat": ".0%"},
                      yaxis={"title": "normalised score", "range": [-0.02, 1.05]}, meta={"view": "deletion_curves"})
    return fig


def method_table(record: dict) -> list[dict]:
    """Rows: method, seconds, RISE, MAS, Recovery@10% (None without gold tokens)."""
    return [{"method": name, "seconds": m["seconds"], "RISE ↓": m["rise"], "MAS ↓": m["mas"],
             "Recovery@10% ↑": m["recovery"]} for name, m in record["methods"].items()]


def method_strips(record: dict) -> go.Figure:
    """`score_strips` of every method's prompt attribution in the record."""
    rows = {name: m["scores"] for name, m in record["methods"].items()}
    return score_strips(rows, record["tokens"], "Prompt attribution by method")
