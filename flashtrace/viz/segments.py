"""Segment-level view: a trace's values summed per segment (prompt sentences, reasoning steps, answer)."""

from __future__ import annotations

import html

import plotly.graph_objects as go

from ..trace import Trace
from .colors import ROLE_COLORS
from .tokens import view_values, visible_label

ROW_PX = 22


def segment_totals(trace: Trace, values: list[float]) -> list[tuple[str, str, str, float]]:
    """``(id, role, text, summed value)`` per segment, template segments left out."""
    if not trace.segments:
        raise ValueError("this trace has no segments (it was made by an older version); re-run it to get them")
    return [(s.id, s.role, s.text, sum(values[s.start:s.end])) for s in trace.segments if s.role != "template"]


def segment_bars(trace: Trace, hop: int | None = None, label_chars: int = 60) -> go.Figure:
    """One horizontal bar per segment in text order, length = the view's summed value, coloured by role."""
    rows = segment_totals(trace, view_values(trace, hop))
    labels = [f"{sid} · {html.escape(visible_label(text.strip(), label_chars))}" for sid, _r, text, _v in rows]
    fig = go.Figure(go.Bar(
        y=labels, x=[v for *_x, v in rows], orientation="h", marker_color=[ROLE_COLORS[r] for _s, r, _t, _v in rows],
        customdata=[[sid, role, html.escape(text.strip()[:300])] for sid, role, text, _v in rows],
        hovertemplate="%{customdata[0]} (%{customdata[1]})<br>%{customdata[2]}<br>score %{x:.4g}<extra></extra>"))
    view = "combined prompt attribution" if hop is None else f"hop {hop} mass share"
    fig.update_layout(
        title={"text": f"Per segment: {view}", "font": {"size": 14}}, height=max(200, ROW_PX * len(rows) + 80),
        margin={"l": 10, "r": 10, "t": 40, "b": 30}, yaxis={"autorange": "reversed", "automargin": True},
        xaxis={"rangemode": "tozero"}, meta={"view": "segment_bars", "hop": hop})
    return fig
