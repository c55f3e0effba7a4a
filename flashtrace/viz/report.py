"""A trace as one standalone, offline HTML page: the heatmap with a hop selector, the text view, the
mass per hop, the hop graph when the trace has step vectors, the top-k table and the settings.
Plotly's JavaScript is inlined (no network requests) and every piece of trace text is escaped."""

from __future__ import annotations

import html
import uuid

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

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


def _figure_html(fig: go.Figure) -> str:
    """A figure's div and script without the library. Template engines look for ``{{``: in the figure's
    JSON it can only sit inside a string, where ``\\u007b`` decodes to the same brace."""
    html_block = pio.to_html(fig, include_plotlyjs=False, full_html=False, config={"displaylogo": False})
    return html_block.replace("{{", "{\\u007b")


def _no_template_braces(text: str) -> str:
    """HTML text with ``{{`` written as ``{&#123;`` (shows the same, never triggers a template engine)."""
    return text.replace("{{", "{&#123;")


def trace_report_html(trace: Trace, graph_figure: go.Figure | None = None, graph_threshold: float = 0.05) -> str:
    """The standalone page (a complete HTML document) for `trace`. Without `graph_figure`, a trace with
    step vectors gets its hop graph drawn at `graph_threshold`."""
    if graph_figure is None and trace.steps is not None and trace.segments:
        from ..graph import HopGraph
        from .graph import hop_graph_figure

        graph_figure = hop_graph_figure(HopGraph.from_trace(trace, graph_threshold), trace)
    figures = [heatmap_with_hop_selector(trace), mass_per_hop(trace)] + ([graph_figure] if graph_figure else [])
    blocks = [_figure_html(fig) for fig in figures]
    s = trace.settings
    facts = {"model": f"{trace.model.name} ({trace.model.family}, {trace.model.n_layers} layers)",
             "tokens": trace.n_tokens, "method": s.method, "hops": s.hops, "target tokens": f"{s.target[0]}:{s.target[1]}",
             "recursive span": s.recursive, "rho per hop": ", ".join(f"{h.rho:.3f}" for h in trace.hops),
             "created": trace.created}
    settings = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(str(v))}</dd>" for k, v in facts.items())
    title = html.escape(trace.title or "FlashTrace trace")
    text_view = tokens_html(trace, None, max_height_px=None)
    top_table = _table(top_tokens(trace, None, 20))
    marks = [f"<!--figure-{uuid.uuid4().hex}-->" for _ in blocks]  # user text cannot guess these
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; img-src data:; font-src data:">
<title>{title}</title>
<style>body{{font-family:system-ui,sans-serif;margin:24px;max-width:1200px}}dt{{font-weight:600;float:left;
width:140px}}dd{{margin:0 0 4px 150px}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;
padding:2px 8px;text-align:left;font-family:ui-monospace,monospace}}</style></head><body>
<h1>{title}</h1>
<dl>{settings}</dl>
<h2>Token heatmap</h2>{marks[0]}
<h2>Text</h2>{text_view}
<h2>Mass per hop</h2>{marks[1]}
{'<h2>Hop graph</h2>' + marks[2] if graph_figure else ''}
<h2>Top prompt tokens</h2>{top_table}
<p><small>Made with FlashTrace Studio. This file needs no network connection.</small></p>
</body></html>"""
    page = _no_template_braces(page).replace("</head>", f"<script>{get_plotlyjs()}</script></head>", 1)
    for mark, block in zip(marks, blocks):  # figures last: their scripts must stay byte-exact
        page = page.replace(mark, block, 1)
    return page
