"""A trace as one standalone, offline HTML page: the settings, what the answer rests on at each depth and
the evidence ranking (from `flashtrace.analysis.facts`, as on every page), the heatmap with a hop
selector, the text view, the mass per hop, the hop graph when the trace has step vectors, the top-k table.
Only the plotly.js parts the figures use are embedded (`export.standalone_html`: no network requests), and
every piece of trace text is escaped."""

from __future__ import annotations

import re

import plotly.graph_objects as go

from ..analysis.facts import OF_PROMPT, analyse
from ..analysis.graph_words import graph_words
from ..analysis.schema import Trace
from ..analysis.story import change_words, depth_table, reach_words
from ..analysis.text import pct
from .heatmap import token_heatmap, top_tokens
from .export import standalone_html
from .mass import mass_per_hop
from .tokens import safe_html, tokens_html


def heatmap_with_hop_selector(trace: Trace) -> go.Figure:
    """All views of `token_heatmap` (combined, hop 0, 1, ...) in one figure, switched by buttons.

    Args:
        trace: The trace drawn.

    Returns:
        The heatmap figure, the combined view shown first.
    """
    views = [None] + [h.k for h in trace.hops]
    figures = [token_heatmap(trace, hop=v) for v in views]
    fig = go.Figure(figures[0])
    counts = [len(figures[0].data)]
    for extra in figures[1:]:
        for tr in extra.data:
            fig.add_trace(tr.update(visible=False))
        counts.append(len(extra.data))
    buttons, start = [], 0
    for view, count, source in zip(views, counts, figures):
        visible = [False] * len(fig.data)
        visible[start:start + count] = [True] * count
        buttons.append({"label": "combined" if view is None else f"hop {view}", "method": "update",
                        "args": [{"visible": visible}, {"title.text": source.layout.title.text}]})
        start += count
    top = fig.layout.margin.t  # the title and the colour keys sit there; the buttons go above them
    fig.update_layout(updatemenus=[{"type": "buttons", "direction": "right", "buttons": buttons, "x": 0, "y": 1.0,
                                    "xanchor": "left", "yanchor": "bottom", "pad": {"b": top - 12}}],
                      margin={"t": top + 34}, height=fig.layout.height + 34, meta={"view": "token_heatmap_hops"})
    return fig


def _table(rows: list[dict]) -> str:
    if not rows:
        return "<p>(empty)</p>"
    head = "".join(f"<th>{safe_html(str(k))}</th>" for k in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{safe_html(f'{v:.4f}' if isinstance(v, float) else str(v))}</td>"
                                    for v in row.values()) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def trace_report_html(trace: Trace, graph_figure: go.Figure | None = None, graph_threshold: float = 0.05) -> str:
    """The standalone page (a complete HTML document) for `trace`. Without `graph_figure`, a trace with
    step vectors gets its hop graph drawn at `graph_threshold`.

    Args:
        trace: The trace reported.
        graph_figure: A hop-graph figure to show (made static: `static_graph`); None to draw one when the
            trace has step vectors and segments.
        graph_threshold: The edge threshold τ of a hop graph drawn here: edges with a smaller share are dropped.

    Returns:
        The whole HTML page (`standalone_html`).
    """
    if graph_figure is None and trace.steps is not None and trace.segments:
        from ..analysis.graph import HopGraph
        from .graph import hop_graph_figure

        graph_figure = hop_graph_figure(HopGraph.from_trace(trace, graph_threshold), trace)
    if graph_figure is not None:
        graph_figure = static_graph(graph_figure)
    s, facts = trace.settings, analyse(trace)
    about = {"model": f"{trace.model.name} ({trace.model.family}, {trace.model.n_layers} layers)",
             "tokens": trace.n_tokens, "method": s.method, "hops": s.hops, "target tokens": f"{s.target[0]}:{s.target[1]}",
             "recursive span": s.recursive, "rho per hop": ", ".join(f"{h.rho:.3f}" for h in trace.hops),
             "created": trace.created}
    settings = "<dl>" + "".join(f"<dt>{safe_html(k)}</dt><dd>{safe_html(str(v))}</dd>" for k, v in about.items()) + "</dl>"
    summary = "".join(f"<p>{safe_html(line)}</p>" for line in (reach_words(facts), change_words(facts)) if line)
    evidence = [{"sentence": piece.label, f"share {OF_PROMPT}": pct(share, 1)} for piece, share in facts.evidence(10)]
    blocks: list = [settings, "<h2>What the answer rests on</h2>", summary, _table(depth_table(facts)),
                    "<h2>Evidence: the strongest prompt pieces after all hops</h2>", _table(evidence),
                    "<h2>Token heatmap</h2>", heatmap_with_hop_selector(trace),
                    "<h2>Text</h2>", tokens_html(trace, None, max_height_px=None),
                    "<h2>Where each hop's attribution lands</h2>", mass_per_hop(facts)]
    if graph_figure is not None:
        blocks += ["<h2>Hop graph</h2>", f"<p>{safe_html(graph_words(facts))}</p>", graph_figure]
    blocks += ["<h2>Top prompt tokens</h2>", _table(top_tokens(trace, None, 20))]
    return standalone_html(trace.title or "FlashTrace trace", blocks)


_APP_HINT = re.compile(r"<br>\([^()]*(?:click|switch on)[^()]*\)", re.I)


def static_graph(fig: go.Figure) -> go.Figure:
    """A copy of a hop-graph figure that promises nothing a static page cannot do: no "click a node" in the
    title and no app-only hints (a parenthesised line about clicking or switching a control) in the hovers.

    Args:
        fig: A hop-graph figure (`hop_graph_figure`); it is not changed.

    Returns:
        The copy, its title ending in "hover a node for its text".
    """
    fig = go.Figure(fig)
    title = fig.layout.title.text or "Hop graph"
    kept = [part for part in title.split(" · ") if "click" not in part.lower()]
    fig.update_layout(title_text=" · ".join(kept + ["hover a node for its text"]))
    for tr in fig.data:
        if isinstance(getattr(tr, "hovertext", None), (list, tuple)):
            tr.hovertext = [_APP_HINT.sub("", h) if isinstance(h, str) else h for h in tr.hovertext]
    return fig
