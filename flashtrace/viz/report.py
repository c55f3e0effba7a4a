"""A trace as one standalone, offline HTML page: the heatmap with a hop selector, the text view, the
mass per hop, the hop graph when the trace has step vectors, the top-k table and the settings.
Plotly's JavaScript is inlined (no network requests) and every piece of trace text is escaped."""

from __future__ import annotations

import html

import plotly.graph_objects as go
import plotly.io as pio

from ..trace import Trace
from .heatmap import token_heatmap, top_tokens
from .mass import mass_per_hop
from .tokens import tokens_html


def heatmap_with_hop_selector(trace: Trace) -> go.Figure:
    """All views of `token_heatmap` (combined, hop 0, 1, ...) in one figure, switched by buttons."""
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
    fig.update_layout(updatemenus=[{"type": "buttons", "direction": "right", "buttons": buttons, "x": 0, "y": 1.0,
                                    "xanchor": "left", "yanchor": "bottom", "pad": {"b": 24}}],
                      margin={"t": 90}, meta={"view": "token_heatmap_hops"})
    return fig


def _table(rows: list[dict]) -> str:
    if not rows:
        return "<p>(empty)</p>"
    head = "".join(f"<th>{html.escape(str(k))}</th>" for k in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(f'{v:.4f}' if isinstance(v, float) else str(v))}</td>"
                                    for v in row.values()) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def trace_report_html(trace: Trace, graph_figure: go.Figure | None = None, graph_threshold: float = 0.05) -> str:
    """The standalone page (a complete HTML document) for `trace`. Without `graph_figure`, a trace with
    step vectors gets its hop graph drawn at `graph_threshold`."""
    if graph_figure is None and trace.steps is not None and trace.segments:
        from ..graph import HopGraph
        from .graph import hop_graph_figure

        graph_figure = hop_graph_figure(HopGraph.from_trace(trace, graph_threshold), trace)
    figures = [heatmap_with_hop_selector(trace), mass_per_hop(trace)] + ([graph_figure] if graph_figure else [])
    blocks = [pio.to_html(fig, include_plotlyjs=(i == 0), full_html=False, config={"displaylogo": False})
              for i, fig in enumerate(figures)]
    s = trace.settings
    facts = {"model": f"{trace.model.name} ({trace.model.family}, {trace.model.n_layers} layers)",
             "tokens": trace.n_tokens, "method": s.method, "hops": s.hops, "target tokens": f"{s.target[0]}:{s.target[1]}",
             "recursive span": s.recursive, "rho per hop": ", ".join(f"{h.rho:.3f}" for h in trace.hops),
             "created": trace.created}
    settings = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(str(v))}</dd>" for k, v in facts.items())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; img-src data:; font-src data:">
<title>{html.escape(trace.title or 'FlashTrace trace')}</title>
<style>body{{font-family:system-ui,sans-serif;margin:24px;max-width:1200px}}dt{{font-weight:600;float:left;
width:140px}}dd{{margin:0 0 4px 150px}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;
padding:2px 8px;text-align:left;font-family:ui-monospace,monospace}}</style></head><body>
<h1>{html.escape(trace.title or 'FlashTrace trace')}</h1>
<dl>{settings}</dl>
<h2>Token heatmap</h2>{blocks[0]}
<h2>Text</h2>{tokens_html(trace, None, max_height_px=None)}
<h2>Mass per hop</h2>{blocks[1]}
{'<h2>Hop graph</h2>' + blocks[2] if graph_figure else ''}
<h2>Top prompt tokens</h2>{_table(top_tokens(trace, None, 20))}
<p><small>Made with FlashTrace Studio. This file needs no network connection.</small></p>
</body></html>"""
