"""The hop graph drawn in layers with Plotly: input segments (template and prompt) | reasoning steps |
answer. Every node carries the first words of its text beside it and its whole text on hover; nodes are
sized by their influence on the answer (sum over paths of share products, see `flashtrace.analysis.graph`); edge
width follows the share of attribution, edges from the input are blue and from reasoning orange; the
strongest path to each of the most influential prompt segments is overlaid in reddish purple, and the
selected node has a thick bluish-green outline and a bold label (Okabe–Ito colours: apart for colour-blind readers, and on light
and dark backgrounds). Nodes carry their id as customdata so a click selects them."""

from __future__ import annotations

from dataclasses import dataclass

import math
import textwrap
import weakref
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ..analysis.graph import INPUT_ROLES, OTHER, STEPS_ROLE, HopGraph, HopPath
from ..analysis.facts import analyse
from ..analysis.schema import Trace
from ..analysis.text import distinct_labels, flat, short_text
from .colors import GOLD, PROMPT, REASONING, ROLE_COLORS, TEMPLATE
from .tokens import safe_html

PATH_COLOR = "#cc79a7"  # Okabe–Ito reddish purple: evidence paths
SELECTED_COLOR = "#009e73"  # Okabe–Ito bluish green: the outline of the selected node
OTHER_COLOR = "#8b95a5"
NODE_COLORS = {**ROLE_COLORS, "other": OTHER_COLOR, STEPS_ROLE: ROLE_COLORS["reasoning"]}
ROLE_NAMES = {"template": "chat template", "prompt": "prompt sentence", "reasoning": "reasoning step",
              "answer": "answer", "other": "other context (folded)", STEPS_ROLE: "reasoning steps (folded)"}
MAX_DRAWN_NODES = 120  # a graph with more nodes is drawn pruned (`HopGraph.pruned`: folded inputs and steps)
WIDTH_LEVELS = 8
CURVE_POINTS = 14
EVIDENCE_PATHS = 3
LABEL_CHARS = 34


def plain(text: str) -> str:
    """`text` safe inside Plotly text (a small HTML subset): ``&``, ``<`` and ``>`` escaped, quotes left as
    they are (Plotly shows them literally), so nothing in a trace is read as markup.

    Args:
        text: The text shown.

    Returns:
        The escaped text.
    """
    return safe_html(text, quote=False)


def short_label(text: str, max_chars: int = LABEL_CHARS) -> str:
    """`text` on one line, chat-template markers dropped, shortened in the middle (a sentence's end often
    holds what tells it apart). Not escaped.

    Args:
        text: The node's text.
        max_chars: The longest label.

    Returns:
        The label, ``∅`` when nothing is left of `text`.
    """
    return short_text(text, max_chars) if flat(text) else "∅"


_LABELS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def node_labels(graph: HopGraph, max_chars: int = LABEL_CHARS) -> dict[str, str]:
    """Every node's label in words (not escaped), no two alike: within the inputs and within the reasoning,
    sentences that would read the same show the part that tells them apart (`analysis.text.distinct_labels`);
    reasoning steps are numbered ("step 2: …") and the chat template says so.

    Args:
        graph: The hop graph (its labels are cached per graph and length).
        max_chars: The longest label (before the step number or the template's prefix).

    Returns:
        ``{node id: label}`` for every node of the graph.
    """
    cached = _LABELS.setdefault(graph, {})
    if max_chars not in cached:
        labels: dict[str, str] = {}
        for roles in (("template", "prompt"), ("reasoning",), ("answer",)):
            nodes = graph.nodes(roles[0]) if len(roles) == 1 else [n for n in graph.nodes() if
                                                                    graph.graph.nodes[n]["role"] in roles]
            texts = distinct_labels([graph.graph.nodes[n]["text"] for n in nodes], max_chars)
            labels.update(zip(nodes, texts))
        for n, number in step_numbers(graph).items():
            labels[n] = f"step {number}: {labels[n]}"
        for n in graph.nodes("template"):
            labels[n] = f"template: {labels[n]}"
        labels.update({n: graph.graph.nodes[n]["text"] for n in graph.graph.nodes if n not in labels})
        cached[max_chars] = labels
    return cached[max_chars]


def step_spans(graph: HopGraph) -> dict[str, tuple[int, int]]:
    """The numbers, from 1 in the whole chain, of the steps each reasoning node stands for: (n, n) for a step,
    (first, last) for a folded run of steps.

    Args:
        graph: The hop graph.

    Returns:
        ``{node id: (first, last)}`` for every reasoning node, a step or a folded run of steps.
    """
    spans, number = {}, 0
    for n in graph.nodes():
        role = graph.graph.nodes[n]["role"]
        if role in ("reasoning", STEPS_ROLE):
            count = len(graph.graph.nodes[n]["folded"]) if role == STEPS_ROLE else 1
            spans[n] = (number + 1, number + count)
            number += count
    return spans


def step_numbers(graph: HopGraph) -> dict[str, int]:
    """Each reasoning step's number in the whole chain, from 1, as its label shows it (a folded run of steps
    counts its steps).

    Args:
        graph: The hop graph.

    Returns:
        ``{node id: number}`` for every reasoning step (not the folded runs).
    """
    return {n: first for n, (first, _) in step_spans(graph).items() if graph.graph.nodes[n]["role"] == "reasoning"}


def node_links(graph: HopGraph) -> dict[str, str]:
    """Each node's name in a link (the Hop graph page's ``node`` URL parameter): a reasoning step by the number
    its label shows ("step-3"), every other node by its id.

    Args:
        graph: The hop graph.

    Returns:
        ``{node id: link name}`` for every node of the graph.
    """
    steps = step_numbers(graph)
    return {n: f"step-{steps[n]}" if n in steps else n for n in graph.graph.nodes}


def node_label(graph: HopGraph, node: str, max_chars: int = LABEL_CHARS) -> str:
    """A node's label (`node_labels`).

    Args:
        graph: The hop graph.
        node: The node's id.
        max_chars: The longest label (before the step number or the template's prefix).

    Returns:
        The label, not escaped.

    Raises:
        KeyError: When `node` is not a node of the graph.
    """
    return node_labels(graph, max_chars)[node]


def path_text(graph: HopGraph, path: HopPath, max_chars: int = 24, ids: bool = False) -> str:
    """A path in words (not escaped): ``“16819” ← “step 4: VAR RPBER = 16819.” ← “…”``; with `ids`, each
    label after its node id (``A “16819” ← S4 “…”``).

    Args:
        graph: The hop graph the path runs through.
        path: The path, from the answer back.
        max_chars: The longest label of a node.
        ids: Put each node's id before its label.

    Returns:
        The labels of the path's nodes in quotes, joined by ``←``.
    """
    return " ← ".join((f"{n} " if ids else "") + f"“{node_label(graph, n, max_chars)}”" for n in path.nodes)


def _hover_text(text: str, width: int = 72, max_chars: int = 700) -> str:
    text = " ".join(text.split())
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    return "<br>".join(plain(line) for line in textwrap.wrap(text, width)) or "∅"


def layout_positions(graph: HopGraph) -> dict[str, tuple[float, float]]:
    """``{node: (x, y)}``: input segments in a column at x=0 in text order with the folded "other context"
    node last, reasoning steps on a diagonal from x=0.4 to 0.75 (so step→step edges stay apart and each
    step's label has room on its right), the answer at x=1; y runs 0 (top) → 1.

    Args:
        graph: The hop graph.

    Returns:
        ``{node id: (x, y)}`` for the input, reasoning and answer nodes.
    """
    inputs = [n for n in graph.nodes() if graph.graph.nodes[n]["role"] in INPUT_ROLES]
    if OTHER in graph.graph:
        inputs.append(OTHER)
    steps = [n for n in graph.nodes() if graph.graph.nodes[n]["role"] in ("reasoning", STEPS_ROLE)]
    pos = {}
    for i, node in enumerate(inputs):
        pos[node] = (0.0, i / max(len(inputs) - 1, 1))
    for i, node in enumerate(steps):
        f = i / (len(steps) - 1) if len(steps) > 1 else 0.5
        pos[node] = (0.4 + 0.35 * f, f)
    for node in graph.nodes("answer"):
        pos[node] = (1.0, 0.5)
    return pos


def _curve(a: tuple[float, float], b: tuple[float, float], bend: float = 0.12) -> tuple[np.ndarray, np.ndarray]:
    """Points ``[CURVE_POINTS]`` of a quadratic Bézier from a to b bowed sideways by `bend` × length."""
    (x0, y0), (x1, y1) = a, b
    dx, dy = x1 - x0, y1 - y0
    length = math.hypot(dx, dy) or 1.0
    cx, cy = (x0 + x1) / 2 - dy / length * bend * length, (y0 + y1) / 2 + dx / length * bend * length
    t = np.linspace(0.0, 1.0, CURVE_POINTS)
    return (1 - t) ** 2 * x0 + 2 * (1 - t) * t * cx + t ** 2 * x1, (1 - t) ** 2 * y0 + 2 * (1 - t) * t * cy + t ** 2 * y1


def _short_name(graph: HopGraph, node: str, ids: bool) -> str:
    """A node in a few words for a hover: its id with `ids`, else "step 3", "the answer" or its role."""
    if ids:
        return node
    if node in (steps := step_numbers(graph)):
        return f"step {steps[node]}"
    role = graph.graph.nodes[node]["role"]
    return "the answer" if role == "answer" else f"this {ROLE_NAMES.get(role, role)}"


def _edge_traces(graph: HopGraph, pos: dict, ids: bool = False) -> list[go.Scatter]:
    """Edges grouped by (source colour, width level): one line trace per group, None-separated; one
    invisible marker at each edge's middle carries its hover text (node ids in it only with `ids`)."""
    groups: dict[tuple[str, int], tuple[list, list]] = {}
    mid_x, mid_y, mid_text = [], [], []
    for src, dst, share in graph.graph.edges(data="share"):
        if src not in pos or dst not in pos:
            continue
        xs, ys = _curve(pos[src], pos[dst])
        role = graph.graph.nodes[src]["role"]
        color = REASONING if role in ("reasoning", STEPS_ROLE) else PROMPT if role == "prompt" else TEMPLATE
        level = min(WIDTH_LEVELS, max(1, math.ceil(share * WIDTH_LEVELS)))
        gx, gy = groups.setdefault((color, level), ([], []))
        gx.extend([*xs.tolist(), None])
        gy.extend([*ys.tolist(), None])
        mid_x.append(float(xs[CURVE_POINTS // 2]))
        mid_y.append(float(ys[CURVE_POINTS // 2]))
        mid_text.append((f"{plain(src)} " if ids else "") + f"“{plain(node_label(graph, src))}” → "
                        + (f"{plain(dst)} " if ids else "") + f"“{plain(node_label(graph, dst))}”"
                        f"<br>{share:.1%} of {plain(_short_name(graph, dst, ids))}'s attribution")
    traces = [go.Scatter(x=gx, y=gy, mode="lines", hoverinfo="skip", showlegend=False, name=f"edges {level}",
                         line={"color": color, "width": 0.6 + 1.1 * level}, opacity=0.2 + 0.08 * level)
              for (color, level), (gx, gy) in sorted(groups.items(), key=lambda kv: kv[0][1])]
    traces.append(go.Scatter(x=mid_x, y=mid_y, mode="markers", marker={"size": 10, "opacity": 0}, name="edge info",
                             hovertemplate="%{text}<extra></extra>", text=mid_text, showlegend=False))
    return traces


def evidence_paths(graph: HopGraph, k: int = EVIDENCE_PATHS, trace: Trace | None = None
                   ) -> list[tuple[str, float, HopPath | None]]:
    """``[(prompt id, share, strongest path to it)]`` for the `k` strongest pieces of evidence: with `trace`,
    the trace's own evidence ranking (share of the prompt's attribution, as on every page); without, the
    graph's most influential prompt segments (their influence).

    Args:
        graph: The hop graph.
        k: How many pieces of evidence at most.
        trace: The trace the graph was made from, whose evidence ranking is used when its pieces are sentences;
            None for the graph's own ranking.

    Returns:
        ``(prompt segment id, share or influence, strongest path from the answer to it or None)``, strongest first.
    """
    if trace is not None and analyse(trace).piece_kind == "sentence":
        ranked = [(p.key, share) for p, share in analyse(trace).evidence(k) if p.key in graph.graph]
    else:
        ranked = graph.evidence(k)
    return [(node, value, graph.strongest_path_to(node)) for node, value in ranked]


def _path_traces(graph: HopGraph, pos: dict, trace: Trace | None) -> list[go.Scatter]:
    xs, ys = [], []
    for _node, _value, path in evidence_paths(graph, trace=trace):
        if path is None:
            continue
        for a, b in zip(path.nodes, path.nodes[1:]):
            cx, cy = _curve(pos[b], pos[a])
            xs.extend([*cx.tolist(), None])
            ys.extend([*cy.tolist(), None])
    if not xs:
        return []
    return [go.Scatter(x=xs, y=ys, mode="lines", line={"color": PATH_COLOR, "width": 4, "dash": "dot"},
                       name="evidence path",
                       hoverinfo="skip")]


def segment_mass(trace: Trace) -> dict[str, float]:
    """Each prompt segment's share of the prompt's attribution after all hops (`TraceFacts`).

    Args:
        trace: The trace.

    Returns:
        ``{segment id: share}``; empty when the trace's pieces are not sentences.
    """
    facts = analyse(trace)
    if facts.piece_kind != "sentence":
        return {}
    return {p.key: float(facts.final.shares[i]) for i, p in enumerate(facts.pieces)}


def _hover(graph: HopGraph, node: str, influence: dict, depths: dict, mass: dict, ids: bool = False) -> str:
    data = graph.graph.nodes[node]
    role = data["role"]
    head = (f"<b>{plain(node)}</b> · " if ids else "") + ROLE_NAMES.get(role, plain(role))
    if role == "other":
        folded = data.get("folded", [])
        return (f"{head} · {len(folded)} input sentences folded together<br>together {influence.get(node, 0):.1%}"
                " of the answer's attribution reaches them<br>(switch on “Show every input sentence”, or click it for the list)")
    if role == STEPS_ROLE:
        first, last = step_spans(graph)[node]
        run = f"{plain(data['folded'][0])} to {plain(data['folded'][-1])}" if ids else f"steps {first} to {last}"
        return (f"{head} · {len(data['folded'])} steps folded together ({run}), less influential than the steps "
                "shown<br>together "
                f"{influence.get(node, 0):.1%} influence on the answer (click it for the list)")
    parts = [head, f"tokens {data['start']}:{data['end']}"]
    if role != "answer":
        parts.append(f"influence on the answer {influence.get(node, 0):.1%}")
    if depths.get(node) is not None:
        parts.append(f"hop depth {depths[node]}")
    if node in mass:
        parts.append(f"{mass[node]:.1%} of the final prompt attribution")
    return " · ".join(parts) + "<br>" + _hover_text(data["text"])


def figure_height(n_inputs: int) -> int:
    """Pixels: rows of at least 30 px for up to 15 inputs (fits a 720-px-high screen), at least 15 px
    beyond that so every label stays legible when all inputs are shown.

    Args:
        n_inputs: The number of input rows (nodes in the input column).

    Returns:
        The figure's height in pixels.
    """
    return max(400, min(560, 30 * n_inputs + 110)) if n_inputs <= 15 else 15 * n_inputs + 110


@dataclass(frozen=True)
class GraphDrawing:
    """What the hop graph draws, apart from the drawing: the graph (pruned when too large), node positions,
    influence and hop depths, the prompt segments' share of the final prompt attribution (with a trace), the
    gold sentences, the influence that sizes the largest node, and the number of input rows."""

    graph: HopGraph
    pos: dict
    influence: dict
    depths: dict
    mass: dict
    gold: set
    top: float
    n_inputs: int

    @property
    def label_size(self) -> int:
        """Node label font size: smaller once more than 15 inputs share the column."""
        return 12 if self.n_inputs <= 15 else 10


def graph_drawing(graph: HopGraph, trace: Trace | None = None) -> GraphDrawing:
    """The `GraphDrawing` of `graph` (pruned first when it has more than `MAX_DRAWN_NODES` nodes: thousands of
    nodes cannot be read, nor drawn quickly).

    Args:
        graph: The hop graph.
        trace: The trace it was made from, for the prompt segments' mass and the gold sentences; None for neither.

    Returns:
        What the hop graph draws.
    """
    if graph.pruning is None and graph.graph.number_of_nodes() > MAX_DRAWN_NODES:
        graph = graph.pruned()
    pos, influence = layout_positions(graph), graph.influence()
    facts = analyse(trace) if trace is not None else None
    gold = {p.key for p in facts.pieces if p.gold} if facts is not None and facts.piece_kind == "sentence" else set()
    top = max((v for n, v in influence.items() if n != graph.answer), default=0.0) or 1.0
    return GraphDrawing(graph, pos, influence, graph.hop_depths(), segment_mass(trace) if trace is not None else {},
                        gold, top, sum(1 for n in pos if pos[n][0] == 0.0))


_TEXT_POSITION = {"reasoning": "middle right", STEPS_ROLE: "middle right", "answer": "bottom center"}


def _sizes_and_labels(d: GraphDrawing, role: str, nodes: list[str]) -> tuple[list[float], list[str]]:
    """Marker sizes (by influence; the answer fixed) and labels (the answer's text wrapped) of one role's nodes."""
    if role == "answer":
        return [28] * len(nodes), ["<br>".join(plain(line) for line in textwrap.wrap(
            short_label(d.graph.graph.nodes[n]["text"], 60), 22)) for n in nodes]
    return ([7 + 27 * math.sqrt(min(d.influence.get(n, 0.0) / d.top, 1.0)) for n in nodes],
            [plain(node_label(d.graph, n)) for n in nodes])


def _outline(n: str, selected: str | None, gold: set) -> tuple[int, str]:
    """A node's outline width and colour: selected, gold, or a thin halo."""
    if n == selected:
        return 5, SELECTED_COLOR
    return (3, GOLD) if n in gold else (1, "rgba(255,255,255,0.7)")


def _role_trace(d: GraphDrawing, role: str, nodes: list[str], selected: str | None, ids: bool) -> go.Scatter:
    """The scatter of one role's nodes: sized, labelled, hovered, the selected one outlined and bold."""
    sizes, labels = _sizes_and_labels(d, role, nodes)
    outlines = [_outline(n, selected, d.gold) for n in nodes]
    hovers = [_hover(d.graph, n, d.influence, d.depths, d.mass, ids)
              + ("<br><b>known evidence (gold)</b>" if n in d.gold else "") for n in nodes]
    return go.Scatter(
        x=[d.pos[n][0] for n in nodes], y=[d.pos[n][1] for n in nodes], mode="markers+text",
        name=ROLE_NAMES[role], meta=role,
        text=[f"<b>{lab}</b>" if n == selected else lab for n, lab in zip(nodes, labels)],
        textposition=_TEXT_POSITION.get(role, "middle left"),
        textfont={"size": d.label_size, "shadow": "auto"}, cliponaxis=False,  # a halo: legible over edges
        customdata=nodes, hovertext=hovers, hovertemplate="%{hovertext}<extra></extra>",
        marker={"size": sizes, "color": NODE_COLORS[role], "symbol": "square" if role in ("other", STEPS_ROLE) else "circle",
                "line": {"width": [w for w, _c in outlines], "color": [c for _w, c in outlines]}})


def _graph_layout(d: GraphDrawing) -> dict:
    graph, wide = d.graph, d.n_inputs <= 15
    return dict(
        height=figure_height(d.n_inputs), margin={"l": 250 if wide else 230, "r": 70, "t": 44, "b": 36},
        title={"text": "What the answer rests on: input → reasoning steps → answer", "font": {"size": 14},
               "y": 1.0, "yref": "container", "yanchor": "top", "pad": {"t": 6}},  # clear of the column labels
        xaxis={"visible": False, "range": [-0.03, 1.06], "fixedrange": True},
        yaxis={"visible": False, "range": [1.08, -0.1], "fixedrange": True},
        legend={"orientation": "h", "xref": "container", "x": 0.01, "yref": "container", "y": 0.0,
                "yanchor": "bottom", "font": {"size": 11}},
        clickmode="event+select", dragmode=False, hoverlabel={"align": "left"},
        meta={"view": "hop_graph", "threshold": graph.threshold, "edges": graph.graph.number_of_edges(),
              "inputs": d.n_inputs, "folded": len(graph.graph.nodes[OTHER]["folded"]) if OTHER in graph.graph else 0,
              "pruning": graph.pruning, "gold": sorted(d.gold & set(d.pos))})


def hop_graph_figure(graph: HopGraph, trace: Trace | None = None, selected: str | None = None,
                     ids: bool = False) -> go.Figure:
    """The layered drawing of `graph` (pruned or not). With `trace`, prompt hovers add the segment's share of
    the final prompt attribution. `selected` is outlined. Node traces are named by role; ``customdata`` = id
    (hovers name node ids only with `ids`: the app's Details).

    Args:
        graph: The hop graph (pruned or not; pruned here when it is too large to draw).
        trace: The trace it was made from, for the prompt segments' mass, its evidence paths and gold sentences.
        selected: The id of the node outlined and labelled in bold; None for none.
        ids: Name node ids in the hovers.

    Returns:
        The graph figure.
    """
    d = graph_drawing(graph, trace)
    fig = go.Figure(_edge_traces(d.graph, d.pos, ids))
    fig.add_traces(_path_traces(d.graph, d.pos, trace))
    for role in ("template", "prompt", "other", "reasoning", STEPS_ROLE, "answer"):
        nodes = [n for n in d.graph.nodes(role) if n in d.pos]
        if nodes:
            fig.add_trace(_role_trace(d, role, nodes, selected, ids))
    if d.gold & set(d.pos):
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name="known evidence (gold)", hoverinfo="skip",
                                 marker={"size": 12, "color": "rgba(0,0,0,0)", "line": {"width": 3, "color": GOLD}}))
    fig.update_layout(**_graph_layout(d))
    for x, label in ((0.0, "input"), (0.4, "reasoning steps"), (1.0, "answer")):
        fig.add_annotation(x=x, y=-0.1, text=f"<b>{label}</b>", showarrow=False, yanchor="bottom",
                           xanchor="right" if x == 0.0 else "left" if x == 0.4 else "center")
    return fig


def selected_node(event: Any) -> str | None:
    """The node id of a Streamlit plotly selection event (first selected node point), or None.

    Args:
        event: The selection event ``st.plotly_chart(..., on_select=...)`` returns, a mapping
            ``{"selection": {"points": [...]}}``; anything else (None, a malformed event) reads as no selection.

    Returns:
        The first selected point's node id (its ``customdata``), or None when no node is selected.
    """
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
