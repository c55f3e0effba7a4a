"""Segment-level view: a trace's values summed per segment (prompt sentences, reasoning steps, answer),
optionally with runs of segments that hold no salient token folded into one grey bar."""

from __future__ import annotations


import plotly.graph_objects as go

from ..analysis.schema import Trace
from .colors import ROLE_COLORS
from .tokens import safe_html, target_positions, view_values, visible_label
from ..base.errors import InputError

ROW_PX = 22
FOLDED_COLOR = "#9ca3af"


def segment_totals(trace: Trace, values: list[float]) -> list[tuple[str, str, str, float]]:
    """``(id, role, text, summed value)`` per segment, template segments left out.

    Args:
        trace: The trace, with segments.
        values: One value per position of `trace`.

    Returns:
        One ``(id, role, text, summed value)`` per non-template segment, in text order.

    Raises:
        InputError: When the trace has no segments (it was made by an older version).
    """
    if not trace.segments:
        raise InputError("this trace has no segments (it was made by an older version); re-run it to get them")
    return [(s.id, s.role, s.text, sum(values[s.start:s.end])) for s in trace.segments if s.role != "template"]


def folded_totals(trace: Trace, values: list[float], keep: set[int]) -> list[tuple[str, str, str, float]]:
    """`segment_totals` with each run of two or more neighbouring segments that hold neither a kept
    position nor a target token merged into one row ``("⋯", "folded", "n segments: first ids…", sum)``.

    Args:
        trace: The trace, with segments.
        values: One value per position of `trace`.
        keep: The positions whose segments stay rows of their own.

    Returns:
        ``(id, role, text, summed value)`` rows in text order, folded runs among them.

    Raises:
        InputError: When the trace has no segments (from `segment_totals`).
    """
    target = target_positions(trace)
    by_id = {s.id: s for s in trace.segments or []}
    rows: list[tuple[str, str, str, float]] = []
    run: list[tuple[str, str, str, float]] = []

    def flush() -> None:
        if len(run) >= 2:
            ids = ", ".join(r[0] for r in run[:4]) + (", …" if len(run) > 4 else "")
            rows.append(("⋯", "folded", f"{len(run)} segments without a salient token ({ids})", sum(r[3] for r in run)))
        else:
            rows.extend(run)
        run.clear()

    for row in segment_totals(trace, values):
        seg = by_id[row[0]]
        if any(i in keep or i in target for i in range(seg.start, seg.end)):
            flush()
            rows.append(row)
        else:
            run.append(row)
    flush()
    return rows


def segment_bars(trace: Trace, hop: int | None = None, label_chars: int = 60, keep: set[int] | None = None) -> go.Figure:
    """One horizontal bar per segment in text order, length = the view's summed value, coloured by role.
    With `keep`, runs of segments holding none of those positions (and no target token) are one grey bar.

    Args:
        trace: The trace, with segments.
        hop: The hop whose mass share is summed, or None for the combined prompt attribution.
        label_chars: The longest segment text in a bar's label (longer ones are cut).
        keep: The positions whose segments keep a bar of their own; None folds nothing.

    Returns:
        The bar figure.

    Raises:
        InputError: When the trace has no segments, or `hop` is not a hop of the trace.
    """
    values = view_values(trace, hop)
    rows = segment_totals(trace, values) if keep is None else folded_totals(trace, values, keep)
    labels = [f"{sid} · {safe_html(visible_label(text.strip(), label_chars))}" for sid, _r, text, _v in rows]
    fig = go.Figure(go.Bar(
        y=labels, x=[v for *_x, v in rows], orientation="h",
        marker_color=[ROLE_COLORS.get(r, FOLDED_COLOR) for _s, r, _t, _v in rows],
        customdata=[[sid, role, safe_html(text.strip()[:300])] for sid, role, text, _v in rows],
        hovertemplate="%{customdata[0]} (%{customdata[1]})<br>%{customdata[2]}<br>score %{x:.4g}<extra></extra>"))
    view = "combined prompt attribution" if hop is None else f"hop {hop} mass share"
    fig.update_layout(
        title={"text": f"Per segment: {view}", "font": {"size": 14}}, height=max(200, ROW_PX * len(rows) + 80),
        margin={"l": 10, "r": 10, "t": 40, "b": 30}, yaxis={"autorange": "reversed", "automargin": True},
        xaxis={"rangemode": "tozero"}, meta={"view": "segment_bars", "hop": hop, "folded": keep is not None})
    return fig
