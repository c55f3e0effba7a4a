"""The hop graph drawn in layers with Plotly: input segments (template and prompt) | reasoning steps |
answer. Edge width follows the share of attribution, edges from the input are blue and from reasoning
orange, the strongest answer→prompt path is overlaid in green, and nodes carry their id as customdata so
a click selects them."""

from __future__ import annotations

import html
import math

import numpy as np
import plotly.graph_objects as go

from ..graph import HopGraph
from ..trace import Trace
from .colors import PROMPT, REASONING, ROLE_COLORS
from .tokens import visible_label

PATH_COLOR = "#16a34a"
WIDTH_LEVELS = 8
CURVE_POINTS = 14


def layout_positions(graph: HopGraph) -> dict[str, tuple[float, float]]:
    """``{node: (x, y)}``: input segments in a column at x=0, reasoning steps on a diagonal from x=1 to 2
    (so step→step edges stay apart), the answer at x=3; y runs 0 (top) → 1 in text order."""
    inputs = graph.nodes("template") + graph.nodes("prompt")
    inputs.sort(key=lambda n: graph.graph.nodes[n]["order"])
    steps = graph.nodes("reasoning")
    pos = {}
    for i, node in enumerate(inputs):
        pos[node] = (0.0, i / max(len(inputs) - 1, 1))
    for i, node in enumerate(steps):
        f = i / (len(steps) - 1) if len(steps) > 1 else 0.5
        pos[node] = (1.0 + f, f)
    for node in graph.nodes("answer"):
        pos[node] = (3.0, 0.5)
    return pos


def _curve(a: tuple[float, float], b: tuple[float, float], bend: float = 0.12) -> tuple[np.ndarray, np.ndarray]:
    """Points ``[CURVE_POINTS]`` of a quadratic Bézier from a to b bowed sideways by `bend` × length."""
    (x0, y0), (x1, y1) = a, b
    dx, dy = x1 - x0, y1 - y0
    length = math.hypot(dx, dy) or 1.0
    cx, cy = (x0 + x1) / 2 - dy / length * bend * length, (y0 + y1) / 2 + dx / length * bend * length
    t = np.linspace(0.0, 1.0, CURVE_POINTS)
    return (1 - t) ** 2 * x0 + 2 * (1 - t) * t * cx + t ** 2 * x1, (1 - t) ** 2 * y0 + 2 * (1 - t) * t * cy + t ** 2 * y1


def _edge_traces(graph: HopGraph, pos: dict) -> list[go.Scatter]:
    """Edges grouped by (source colour, width level): one line trace per group, None-separated."""
    groups: dict[tuple[str, int], tuple[list, list]] = {}
    mid_x, mid_y, mid_text = [], [], []
    for src, dst, share in graph.graph.edges(data="share"):
        if src not in pos or dst not in pos:
            continue
        xs, ys = _curve(pos[src], pos[dst])
        color = REASONING if graph.graph.nodes[src]["role"] == "reasoning" else PROMPT
        level = min(WIDTH_LEVELS, max(1, math.ceil(share * WIDTH_LEVELS)))
        gx, gy = groups.setdefault((color, level), ([], []))
        gx.extend([*xs.tolist(), None])
        gy.extend([*ys.tolist(), None])
        mid_x.append(float(xs[CURVE_POINTS // 2]))
        mid_y.append(float(ys[CURVE_POINTS // 2]))
        mid_text.append(f"{html.escape(src)} → {html.escape(dst)}: {share:.1%}")
    traces = [go.Scatter(x=gx, y=gy, mode="lines", hoverinfo="skip", showlegend=False, name=f"edges {level}",
                         line={"color": color, "width": 0.6 + 1.1 * level}, opacity=0.35 + 0.05 * level)
              for (color, level), (gx, gy) in sorted(groups.items(), key=lambda kv: kv[0][1])]
    traces.append(go.Scatter(x=mid_x, y=mid_y, mode="markers", marker={"size": 10, "opacity": 0}, name="edge info",
                             hovertemplate="%{text}<extra></extra>", text=mid_text, showlegend=False))
    return traces


def _path_trace(graph: HopGraph, pos: dict) -> go.Scatter | None:
    paths = graph.strongest_paths(1)
    if not paths:
        return None
    xs, ys = [], []
    for a, b in zip(paths[0].nodes, paths[0].nodes[1:]):
        cx, cy = _curve(pos[b], pos[a])
        xs.extend([*cx.tolist(), None])
        ys.extend([*cy.tolist(), None])
    return go.Scatter(x=xs, y=ys, mode="lines", line={"color": PATH_COLOR, "width": 3, "dash": "dot"},
                      name=f"strongest path ({paths[0].strength:.1%})", hoverinfo="skip")


def segment_mass(trace: Trace) -> dict[str, float]:
    """Share of the final prompt attribution on each prompt segment (what sizes the prompt nodes)."""
    return {s.id: sum(trace.scores.prompt[s.start:s.end]) for s in trace.segments or [] if s.role == "prompt"}


def hop_graph_figure(graph: HopGraph, trace: Trace | None = None, selected: str | None = None) -> go.Figure:
    """The layered drawing of `graph`. With `trace`, prompt nodes are sized by their share of the final
    prompt attribution. `selected` is outlined. Node traces are named by role; ``customdata`` = node id."""
    pos = layout_positions(graph)
    mass = segment_mass(trace) if trace is not None else {}
    top_mass = max(mass.values(), default=0.0) or 1.0
    depths = graph.hop_depths()
    n_inputs = sum(1 for n in pos if pos[n][0] == 0.0)
    crowded = n_inputs > 40  # then only connected nodes are labelled (hover still names every node)
    fig = go.Figure(_edge_traces(graph, pos))
    path = _path_trace(graph, pos)
    if path is not None:
        fig.add_trace(path)
    for role in ("template", "prompt", "reasoning", "answer"):
        nodes = [n for n in graph.nodes(role) if n in pos]
        if not nodes:
            continue
        attrs = [graph.graph.nodes[n] for n in nodes]
        base = 4 if crowded else 10  # a long prompt's column of nodes stays a thin line, strong nodes stand out
        sizes = [base + 26 * math.sqrt(mass.get(n, 0.0) / top_mass) if role == "prompt" and mass else
                 {"template": 9, "prompt": 14, "reasoning": 16, "answer": 24}[role] for n in nodes]
        hover = [f"<b>{html.escape(n)}</b> {role} · tokens {a['start']}:{a['end']}"
                 + (f" · hop depth {depths.get(n)}" if role == "prompt" else "")
                 + (f" · {mass[n]:.1%} of the prompt attribution" if n in mass else "")
                 + f"<br>{html.escape(visible_label(a['text'].strip(), 160))}" for n, a in zip(nodes, attrs)]
        left = role in ("template", "prompt")
        fig.add_trace(go.Scatter(
            x=[pos[n][0] for n in nodes], y=[pos[n][1] for n in nodes], mode="markers+text", name=role,
            text=[html.escape(n) if not crowded or graph.graph.degree(n) else "" for n in nodes],
            textposition="middle left" if left else "top center",
            customdata=nodes, hovertext=hover, hovertemplate="%{hovertext}<extra></extra>",
            marker={"size": sizes, "color": ROLE_COLORS[role],
                    "line": {"width": [4 if n == selected else 1 for n in nodes],
                             "color": [PATH_COLOR if n == selected else "#ffffff" for n in nodes]}}))
    fig.update_layout(
        height=max(420, min(1000, 16 * n_inputs + 120)), margin={"l": 40, "r": 20, "t": 40, "b": 20},
        title={"text": f"Hop graph (threshold {graph.threshold:.2f}) · click a node", "font": {"size": 14}},
        xaxis={"visible": False, "range": [-0.45, 3.3], "fixedrange": True},
        yaxis={"visible": False, "autorange": "reversed", "fixedrange": True},
        legend={"orientation": "h", "y": -0.02, "yanchor": "top"}, clickmode="event+select", dragmode=False,
        meta={"view": "hop_graph", "threshold": graph.threshold, "edges": graph.graph.number_of_edges()},
    )
    for x, label in ((0.0, "input"), (1.5, "reasoning steps"), (3.0, "answer")):
        fig.add_annotation(x=x, y=-0.04, text=f"<b>{label}</b>", showarrow=False, yanchor="bottom")
    return fig


def selected_node(event) -> str | None:
    """The node id of a Streamlit plotly selection event (first selected node point), or None."""
    try:
        points = event["selection"]["points"]
    except (KeyError, TypeError):
        return None
    for point in points or []:
        custom = point.get("customdata")
        if isinstance(custom, list):
            custom = custom[0] if custom else None
        if isinstance(custom, str):
            return custom
    return None
