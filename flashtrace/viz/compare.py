"""Comparison figures: what each hop adds (tokens and prompt sentences, one shared colour scale or one
per row), the agreement between consecutive hop depths, how much attribution has reached the prompt,
methods side by side as aligned strips, and deletion curves with their faithfulness numbers."""

from __future__ import annotations


import numpy as np
import plotly.graph_objects as go

from ..analysis.compare import HopDepthComparison
from ..analysis.facts import OF_FINAL, OF_PROMPT, TraceFacts
from ..analysis.text import pct
from .colors import PROMPT, PROMPT_SCALE, REASONING, method_colors
from .tokens import plotly_text, template_text, visible_label
from ..base.errors import InputError

def score_strips(rows: dict[str, list[float]], tokens: list[str], title: str) -> go.Figure:
    """One heatmap row per label (a hop depth or a method) over the same prompt tokens; each row scaled
    to its own maximum so rankings compare at a glance (hover shows the raw value). Labels and the title are
    shown as text (they may come from an evaluation folder).

    Args:
        rows: ``{label: one value per prompt token}``, rows in this order.
        tokens: The prompt tokens' texts, in text order.
        title: The figure's title.

    Returns:
        The heatmap figure, one row per label.
    """
    labels = list(rows)
    z, raw = [], []
    for label in labels:
        values = rows[label]
        top = max(values, default=0.0) or 1.0
        z.append([v / top for v in values])
        raw.append(values)
    fig = go.Figure(go.Heatmap(
        z=z, y=[plotly_text(label) for label in labels], x=list(range(len(tokens))), customdata=raw,
        colorscale=PROMPT_SCALE, zmin=0, zmax=1,
        text=[[plotly_text(visible_label(t, 30)) for t in tokens] for _ in labels], xgap=0, ygap=2,
        hovertemplate="%{y} · token %{text}<br>score %{customdata:.4g} (%{z:.0%} of the row's max)<extra></extra>",
        colorbar={"title": {"text": "of row max", "side": "right"}, "thickness": 12}))
    fig.update_layout(title={"text": plotly_text(title), "font": {"size": 14}}, height=90 + 34 * len(labels),
                      margin={"l": 10, "r": 10, "t": 40, "b": 30},
                      xaxis={"title": "prompt tokens in text order", "showticklabels": False},
                      yaxis={"autorange": "reversed", "automargin": True, "type": "category"},
                      meta={"view": "score_strips"})
    return fig


HOP_BLUES = ["#1e3a8a", "#2563eb", "#60a5fa", "#93c5fd", "#0ea5e9", "#0369a1", "#7dd3fc", "#1d4ed8", "#38bdf8"]


def _hop_rows(facts: TraceFacts, view: str) -> tuple[list[str], np.ndarray, np.ndarray, str]:
    """Row labels, values ``[rows, prompt tokens]`` and ``[rows, pieces]``, and what they are a share of,
    for a view: ``added`` (what hop K added, of the final prompt attribution) or ``cumulative`` (the
    picture after hops 0..K, of the prompt's attribution at that depth)."""
    if view == "added":
        added = np.asarray(facts.additions.added, dtype=float)[:, list(facts.prompt_positions)]  # [hops, P]
        unit = facts.additions.unit
        tokens = added / unit if unit > 0 else np.zeros_like(added)
        labels = ["hop 0 (direct)"] + [f"hop {d.k} adds" for d in facts.depths[1:]]
        return labels, tokens, np.asarray([d.added for d in facts.depths]), OF_FINAL
    if view == "cumulative":
        labels = [f"after hops 0..{d.k}" if d.k else "after hop 0" for d in facts.depths]
        return (labels, np.asarray([d.token_shares for d in facts.depths]), np.asarray([d.shares for d in facts.depths]),
                OF_PROMPT + " at that depth")
    raise InputError(f"view must be 'added' or 'cumulative', got {view!r}")


def _scaled(shares: np.ndarray, shared: bool, axis: int) -> tuple[np.ndarray, float]:
    """``(z, zmax)``: with `shared` one scale for all (z = shares, zmax their maximum), else each row
    (axis=1) or column (axis=0) scaled to its own maximum (zmax 1)."""
    if shared:
        return shares, float(shares.max(initial=0.0)) or 1.0
    top = shares.max(axis=axis, keepdims=True, initial=0.0)
    return np.divide(shares, top, out=np.zeros_like(shares), where=top > 0), 1.0


def _pct_format(top: float) -> str:
    """Colour-bar tick format: whole percents, or one decimal when the scale tops below 10 %."""
    return ".0%" if top >= 0.1 else ".1%"


def strongest_positions(facts: TraceFacts, view: str = "added", limit: int = 30) -> list[int]:
    """The `limit` prompt positions with the largest value in any row of `view`, in text order.

    Args:
        facts: The trace's facts (`analyse`).
        view: ``"added"`` (what each hop adds) or ``"cumulative"`` (the picture after hops 0..K).
        limit: How many positions at most.

    Returns:
        The chosen prompt positions, in text order.

    Raises:
        InputError: When `view` is neither ``"added"`` nor ``"cumulative"``.
    """
    _labels, values, _pieces, _of = _hop_rows(facts, view)
    best = values.max(axis=0) if values.size else np.zeros(0)  # [P]
    ranked = sorted(range(len(best)), key=lambda j: (-best[j], j))[:limit]
    return sorted(facts.prompt_positions[j] for j in ranked)


def hop_token_strips(facts: TraceFacts, token_texts: list[str], view: str = "added", shared: bool = True,
                     limit: int = 30) -> go.Figure:
    """One row per hop (what it adds) or per depth (the picture after hops 0..K) over the prompt tokens
    that matter most at any depth, in text order, each column labelled with its token. `shared` puts every
    row on one colour scale (else each row is scaled to its own maximum).

    Args:
        facts: The trace's facts (`analyse`).
        token_texts: Every token's text, by position.
        view: ``"added"`` (one row per hop: what it adds) or ``"cumulative"`` (one row per depth).
        shared: Put every row on one colour scale.
        limit: How many prompt tokens (columns) at most (`strongest_positions`).

    Returns:
        The heatmap figure.

    Raises:
        InputError: When `view` is neither ``"added"`` nor ``"cumulative"``.
    """
    labels, values, _pieces, of = _hop_rows(facts, view)
    cols = strongest_positions(facts, view, limit)
    index = {p: j for j, p in enumerate(facts.prompt_positions)}
    shares = values[:, [index[p] for p in cols]] if cols else np.zeros((len(labels), 0))
    z, zmax = _scaled(shares, shared, axis=1)
    ticks = [plotly_text(visible_label(token_texts[i], 14)) for i in cols]
    fig = go.Figure(go.Heatmap(
        z=z.tolist(), y=labels, x=list(range(len(cols))), customdata=shares.tolist(), zmin=0, zmax=zmax,
        colorscale=PROMPT_SCALE, xgap=1, ygap=2,
        text=[[f"{t} (token {i})" for t, i in zip(ticks, cols)] for _ in labels],
        hovertemplate=f"%{{y}} · %{{text}}<br>%{{customdata:.1%}} {of}<extra></extra>",
        colorbar={"title": {"text": "share" if shared else "of the row's max", "side": "right"},
                  "thickness": 12, "tickformat": _pct_format(zmax) if shared else None}))
    what = "What each hop adds" if view == "added" else "Prompt attribution after hops 0..K"
    fig.update_layout(
        title={"text": f"{what}: the {len(cols)} strongest prompt tokens, as shares {of} "
                       f"({'one shared scale' if shared else 'each row scaled to its maximum'})", "font": {"size": 14}},
        height=150 + 30 * len(labels), margin={"l": 10, "r": 10, "t": 40, "b": 10},
        xaxis={"tickvals": list(range(len(cols))), "ticktext": ticks, "tickangle": -50, "tickfont": {"size": 11}},
        yaxis={"autorange": "reversed", "automargin": True, "type": "category"},
        meta={"view": "hop_token_strips", "mode": view, "shared": shared, "zmax": zmax, "positions": cols, "of": of})
    return fig


def hop_segment_strips(facts: TraceFacts, view: str = "added", shared: bool = True, limit: int = 12,
                       details: bool = False) -> go.Figure:
    """The same per prompt sentence (labelled with its distinct short label): one row per sentence, one
    column per hop or depth; the `limit` sentences with the largest value anywhere, in text order.
    `shared`: one scale for all cells, else each column scaled to its own maximum.

    Args:
        facts: The trace's facts (`analyse`), with prompt sentences as its pieces.
        view: ``"added"`` (one column per hop: what it adds) or ``"cumulative"`` (one column per depth).
        shared: Put every cell on one colour scale.
        limit: How many sentences (rows) at most.
        details: Put each sentence's id before its label.

    Returns:
        The heatmap figure.

    Raises:
        InputError: When the trace has no segments (it was made by an older version), or `view` is neither
            ``"added"`` nor ``"cumulative"``.
    """
    if facts.piece_kind != "sentence":
        raise InputError("this trace has no segments (it was made by an older version); re-run it to get them")
    labels, _values, pieces, of = _hop_rows(facts, view)
    best = pieces.max(axis=0)  # [S]
    rows = sorted(sorted(range(len(facts.pieces)), key=lambda j: (-best[j], j))[:limit])
    shares = pieces[:, rows].T  # [rows, hops]
    z, zmax = _scaled(shares, shared, axis=0)
    chosen = [facts.pieces[j] for j in rows]
    names = [(f"{p.key} · " if details else "") + plotly_text(p.label) for p in chosen]  # labels are distinct
    fig = go.Figure(go.Heatmap(
        z=z.tolist(), x=labels, y=names, customdata=shares.tolist(), zmin=0, zmax=zmax, colorscale=PROMPT_SCALE,
        xgap=2, ygap=2, text=[[pct(v, 0 if v >= 0.01 or v == 0 else 1) for v in row] for row in shares],
        texttemplate="%{text}",
        hovertemplate=f"%{{y}}<br>%{{x}}: %{{customdata:.1%}} {of}<extra></extra>",
        colorbar={"title": {"text": "share" if shared else "of the column's max", "side": "right"},
                  "thickness": 12, "tickformat": _pct_format(zmax) if shared else None}))
    what = "What each hop adds" if view == "added" else "Prompt attribution after hops 0..K"
    fig.update_layout(
        title={"text": f"{what}, per prompt sentence (top {len(rows)} of {len(facts.pieces)}), as shares {of}",
               "font": {"size": 14}},
        height=130 + 26 * len(rows), margin={"l": 10, "r": 10, "t": 70, "b": 10},
        xaxis={"side": "top", "type": "category"}, yaxis={"autorange": "reversed", "automargin": True, "type": "category"},
        meta={"view": "hop_segment_strips", "mode": view, "shared": shared, "zmax": zmax,
              "segments": [p.key for p in chosen], "of": of})
    return fig


def depth_agreement(comparison: HopDepthComparison) -> go.Figure:
    """Rank correlation (Spearman) and top-k overlap between consecutive depths; the convergence depth
    (from which on the top-k overlap stays at or above 0.9) is marked on this chart.

    Args:
        comparison: The comparison of consecutive hop depths (`analysis.compare`).

    Returns:
        The line figure, one point per pair of consecutive depths.
    """
    pairs = [f"K={d}→{d + 1}" for d in comparison.depths[:-1]]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=pairs, y=comparison.spearman, mode="lines+markers", name="rank correlation (Spearman)",
                             line={"color": PROMPT}))
    fig.add_trace(go.Scatter(x=pairs, y=comparison.overlap, mode="lines+markers", name=f"top-{comparison.k} overlap",
                             line={"color": REASONING}))
    conv = comparison.convergence_depth
    if conv is not None and pairs:
        fig.add_vline(x=conv, line_dash="dot", line_color="#6b7280")
        fig.add_annotation(x=pairs[conv], y=1.02, yref="y", showarrow=False, yanchor="bottom",
                           text=f"top-{comparison.k} stable from K={conv}", font={"size": 11})
    low = -1.05 if any(v is not None and v < 0 for v in comparison.spearman) else 0
    fig.update_layout(title={"text": "Agreement of consecutive depths", "font": {"size": 14}}, height=330,
                      yaxis={"range": [low, 1.15]}, margin={"l": 40, "r": 10, "t": 40, "b": 30},
                      legend={"orientation": "h", "y": -0.2},
                      meta={"view": "depth_agreement", "convergence_depth": conv})
    return fig


def reach_bars(facts: TraceFacts) -> go.Figure:
    """Per depth K, the share of the answer's attribution that has reached the input, stacked by the hop
    that moved it there.

    Args:
        facts: The trace's facts (`analyse`).

    Returns:
        The stacked bar figure, one bar per depth with its total written on top.
    """
    depths = [f"K={d.k}" for d in facts.depths]
    fig = go.Figure()
    for k, moved in enumerate(facts.input_share):
        fig.add_trace(go.Bar(
            x=depths, y=[moved if d.k >= k else 0.0 for d in facts.depths], name=f"hop {k}",
            marker_color=HOP_BLUES[min(k, len(HOP_BLUES) - 1)], hovertemplate=f"hop {k}: %{{y:.1%}}<extra></extra>"))
    for label, d in zip(depths, facts.depths):
        fig.add_annotation(x=label, y=d.reached, text=pct(d.reached), showarrow=False, yanchor="bottom")
    fig.update_layout(barmode="stack", title={"text": f"Share {facts.of_answer} that has reached the input",
                                              "font": {"size": 14}}, height=330,
                      yaxis={"range": [0, 1.12], "tickformat": ".0%"}, margin={"l": 40, "r": 10, "t": 40, "b": 30},
                      legend={"orientation": "h", "y": -0.2, "title": {"text": "moved by"}, "traceorder": "normal"},
                      meta={"view": "reach_bars", "reached": [d.reached for d in facts.depths]})
    return fig


def deletion_curves(record: dict) -> go.Figure:
    """Normalised deletion curves (lower area = more faithful) of every method in an evaluation
    record (`flashtrace.evaluate.runner.evaluate_context`), each in its method's colour (`method_colors`); a
    method without a curve (a run with ``--k 0``) is left out.

    Args:
        record: One evaluation record: ``{"methods": {name: {"n": curve, "rise": RISE, ...}}, ...}``.

    Returns:
        The line figure, one curve per method.
    """
    colors = method_colors(list(record["methods"]))
    fig = go.Figure()
    for name, m in record["methods"].items():
        steps = len(m["n"]) - 1
        if steps < 1:  # a run without deletion curves (``eval --k 0``)
            continue
        fig.add_trace(go.Scatter(
            x=[t / steps for t in range(steps + 1)], y=m["n"], mode="lines+markers",
            name=f"{plotly_text(name)} (RISE {m['rise']:.3f})", line={"color": colors[name]},
            hovertemplate=f"{template_text(name)}<br>deleted %{{x:.0%}}: %{{y:.3f}}<extra></extra>"))
    fig.update_layout(title={"text": "Deletion curves: target log-probability as top prompt tokens are deleted",
                             "font": {"size": 14}}, height=380, margin={"l": 40, "r": 10, "t": 40, "b": 40},
                      xaxis={"title": "share of prompt tokens deleted", "tickformat": ".0%"},
                      yaxis={"title": "normalised score", "range": [-0.02, 1.05]}, meta={"view": "deletion_curves"})
    return fig


def method_table(record: dict) -> list[dict]:
    """Rows: method, attribution seconds, deletion-curve seconds (None in records that lack them), RISE, MAS,
    Recovery@10% (None without gold tokens).

    Args:
        record: One evaluation record (`flashtrace.evaluate.runner.evaluate_context`).

    Returns:
        One row (column name to value) per method of the record, in its order.
    """
    return [{"method": name, "attribution s": m["seconds"], "deletion curve s": m.get("deletion_s"),
             "RISE ↓": m["rise"], "MAS ↓": m["mas"], "Recovery@10% ↑": m["recovery"]}
            for name, m in record["methods"].items()]


def method_strips(record: dict) -> go.Figure:
    """`score_strips` of every method's prompt attribution in the record.

    Args:
        record: One evaluation record (`flashtrace.evaluate.runner.evaluate_context`), with its prompt
            ``tokens`` and each method's ``scores``.

    Returns:
        The heatmap figure, one row per method.
    """
    rows = {name: m["scores"] for name, m in record["methods"].items()}
    return score_strips(rows, record["tokens"], "Prompt attribution by method")
