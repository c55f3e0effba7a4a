"""Where the attribution mass sits at each hop: a stacked bar per hop (template, prompt, reasoning,
answer), with the mass still on generated text (ρ) written on each bar."""

from __future__ import annotations

import plotly.graph_objects as go

from ..analysis.facts import TraceFacts
from .colors import ROLE_COLORS

ROLE_ORDER = ("prompt", "template", "reasoning", "answer")


def mass_per_hop(facts: TraceFacts) -> go.Figure:
    """Stacked horizontal bars: where hop k's own attribution lands (prompt, template, reasoning, answer),
    as shares of that hop's attribution (`Depth.split`).

    Args:
        facts: The trace's facts (`analyse`); only the hops that ran get a bar.

    Returns:
        The bar figure, one bar per hop with its ρ written beside it.
    """
    ran = [d for d in facts.depths if d.ran]
    split = [d.split for d in ran]
    labels = [f"hop {d.k}" for d in ran]
    fig = go.Figure()
    for role in ROLE_ORDER:
        fig.add_trace(go.Bar(
            y=labels, x=[s[role] for s in split], name=role, orientation="h", marker_color=ROLE_COLORS[role],
            hovertemplate=f"%{{y}}: {role} %{{x:.1%}}<extra></extra>"))
    for label, d in zip(labels, ran):
        fig.add_annotation(x=1.0, y=label, xanchor="left", text=f" ρ={d.rho:.3f}", showarrow=False,
                           font={"size": 11})
    fig.update_layout(
        # the legend sits in its own strip at the bottom of the figure (container coordinates), under the
        # percent ticks whatever the number of hops
        barmode="stack", height=110 + 34 * len(labels), margin={"l": 60, "r": 70, "t": 40, "b": 62},
        title={"text": "Where each hop's own attribution lands (share of that hop's attribution)", "font": {"size": 14}},
        xaxis={"range": [0, 1], "tickformat": ".0%"}, yaxis={"autorange": "reversed"},
        legend={"orientation": "h", "traceorder": "normal", "yref": "container", "y": 0, "yanchor": "bottom",
                "x": 0, "xanchor": "left"}, meta={"view": "mass_per_hop"},
    )
    return fig
