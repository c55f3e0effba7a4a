"""Where the attribution mass sits at each hop: a stacked bar per hop (template, prompt, reasoning,
answer), with the mass still on generated text (ρ) written on each bar."""

from __future__ import annotations

import plotly.graph_objects as go

from ..analysis.schema import Trace
from .colors import ROLE_COLORS

ROLE_ORDER = ("prompt", "template", "reasoning", "answer")


def mass_split(trace: Trace) -> list[dict[str, float]]:
    """Per hop, the share of that hop's raw attribution on each role (shares sum to 1 when any mass)."""
    out = []
    for hop in trace.hops:
        total = sum(hop.raw)
        sums = {role: 0.0 for role in ROLE_ORDER}
        for tok, v in zip(trace.tokens, hop.raw):
            sums[tok.role] += v
        out.append({role: (s / total if total > 0 else 0.0) for role, s in sums.items()})
    return out


def mass_per_hop(trace: Trace) -> go.Figure:
    """Stacked horizontal bars: hop k's mass on prompt, template, reasoning and answer."""
    split = mass_split(trace)
    labels = [f"hop {h.k}" for h in trace.hops]
    fig = go.Figure()
    for role in ROLE_ORDER:
        fig.add_trace(go.Bar(
            y=labels, x=[s[role] for s in split], name=role, orientation="h", marker_color=ROLE_COLORS[role],
            hovertemplate=f"%{{y}}: {role} %{{x:.1%}}<extra></extra>"))
    for label, hop in zip(labels, trace.hops):
        fig.add_annotation(x=1.0, y=label, xanchor="left", text=f" ρ={hop.rho:.3f}", showarrow=False,
                           font={"size": 11})
    fig.update_layout(
        # the legend sits in its own strip at the bottom of the figure (container coordinates), under the
        # percent ticks whatever the number of hops
        barmode="stack", height=110 + 34 * len(labels), margin={"l": 60, "r": 70, "t": 40, "b": 62},
        title={"text": "Where each hop's attribution mass sits", "font": {"size": 14}},
        xaxis={"range": [0, 1], "tickformat": ".0%"}, yaxis={"autorange": "reversed"},
        legend={"orientation": "h", "traceorder": "normal", "yref": "container", "y": 0, "yanchor": "bottom",
                "x": 0, "xanchor": "left"}, meta={"view": "mass_per_hop"},
    )
    return fig
