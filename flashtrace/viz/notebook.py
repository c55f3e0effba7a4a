"""A `Trace` in a notebook: an escaped, self-contained HTML summary (what Jupyter shows for a trace),
the app's views as Plotly figures, and a pandas table. `flashtrace` registers these functions as the
trace's views (`schema.register_views`) when it is imported; they load Plotly or pandas on first use."""

from __future__ import annotations

import html

from ..analysis.compare import hop_additions, reach_sentence
from ..analysis.schema import Trace


def _percent(value: float) -> str:
    return f"{100 * value:.1f} %"


def trace_html(trace: Trace, k: int = 10, max_height_px: int = 320) -> str:
    """The trace as one self-contained HTML fragment: title and settings, how much of the target's
    attribution reached the prompt at each hop, the top `k` prompt tokens, and the text coloured by the
    combined prompt attribution. Every piece of text is escaped; nothing is fetched from outside."""
    from .tokens import tokens_html

    s, m = trace.settings, trace.model
    title = trace.title or "FlashTrace trace"
    facts = (f"{m.name} · {s.method} · {s.hops} hop{'s' if s.hops != 1 else ''} · {trace.n_tokens:,} tokens · "
             f"target tokens {s.target[0]}–{s.target[1] - 1}")
    additions = hop_additions(trace)
    per_hop = " · ".join(f"hop {d}: {_percent(v)}" for d, v in zip(additions.hops, additions.reached))
    rows = "".join(f"<tr><td>{i}</td><td><code>{html.escape(repr(text))}</code></td><td>{_percent(score)}</td></tr>"
                   for i, text, score in trace.top_prompt_tokens(k))
    cell = "padding:2px 8px;text-align:left"
    return (f'<div class="flashtrace-trace" style="font-family:system-ui,sans-serif;max-width:980px">'
            f'<div style="font-weight:600;font-size:1.05rem">{html.escape(title)}</div>'
            f'<div style="opacity:0.75;font-size:0.85rem">{html.escape(facts)}</div>'
            f'<p style="margin:6px 0">{html.escape(reach_sentence(additions))} '
            f'<span style="opacity:0.75">(reached after each depth — {html.escape(per_hop)})</span></p>'
            f'<details open><summary>Top {k} prompt tokens</summary>'
            f'<table style="border-collapse:collapse;font-size:0.85rem"><tr><th style="{cell}">position</th>'
            f'<th style="{cell}">token</th><th style="{cell}">share of the prompt attribution</th></tr>{rows}</table>'
            f'</details>'
            + tokens_html(trace, max_height_px=max_height_px, legend="combined prompt attribution (final)")
            + "</div>")


def heatmap(trace: Trace, hop: int | None = None, **kwargs):
    """The Explore page's token heatmap: combined prompt attribution, or hop `hop`'s own vector."""
    from .heatmap import token_heatmap

    return token_heatmap(trace, hop, **kwargs)


def hop_graph(trace: Trace, keep: float = 0.8, fold: bool = True):
    """The Hop graph page's figure: prompt sentences → reasoning steps → answer, pruned to the inputs
    holding `keep` of the influence (the rest folded into one node unless `fold` is False). Needs a
    trace made with ``steps=True``."""
    from ..analysis.graph import HopGraph
    from .graph import hop_graph_figure

    if trace.steps is None:
        raise ValueError("this trace has no step-level attribution; make it with attribute(..., steps=True)")
    return hop_graph_figure(HopGraph.from_trace(trace).pruned(node_threshold=keep, fold=fold), trace)


def compare_depths(trace: Trace, view: str = "added", shared: bool = True):
    """The Compare page's hop strips: what each hop adds (``view="added"``) or the attribution after
    hops 0..K (``view="cumulative"``), on the prompt tokens that matter most, one colour scale."""
    from .compare import hop_token_strips

    return hop_token_strips(hop_additions(trace), [t.text for t in trace.tokens], view, shared=shared)


def to_pandas(trace: Trace):
    """One row per token: position, text, role, character offsets, the final attribution, the prompt
    score (normalised over the user's prompt; 0 elsewhere) and each hop's additive contribution."""
    import pandas as pd

    table = pd.DataFrame({
        "position": range(trace.n_tokens),
        "token": [t.text for t in trace.tokens],
        "role": [t.role for t in trace.tokens],
        "start": [t.start for t in trace.tokens],
        "end": [t.end for t in trace.tokens],
        "final": trace.scores.final,
        "prompt_score": trace.scores.prompt,
    })
    for k, hop in enumerate(trace.hops):
        table[f"hop{k}_contribution"] = hop.contribution
    return table.set_index("position")


__all__ = ["trace_html", "heatmap", "hop_graph", "compare_depths", "to_pandas"]
