"""A `Trace` in a notebook: an escaped, self-contained HTML summary (what Jupyter shows for a trace),
the app's views as Plotly figures, and a pandas table. `flashtrace` registers these functions as the
trace's views (`schema.register_views`) when it is imported; they load Plotly or pandas on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..analysis.facts import OF_PROMPT, analyse
from ..analysis.story import DEPTH_COLUMNS, change_words, depth_table, reach_words
from ..analysis.text import pct
from ..analysis.schema import Trace
from ..base.errors import InputError
from .tokens import safe_html

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go
    from rich.console import Console


def _html_table(rows: list[dict[str, str]], columns: tuple[str, ...], cell: str) -> str:
    head = "".join(f'<th style="{cell}">{safe_html(c)}</th>' for c in columns)
    body = "".join("<tr>" + "".join(f'<td style="{cell}">{safe_html(row[c])}</td>' for c in columns) + "</tr>"
                   for row in rows)
    return f'<table style="border-collapse:collapse;font-size:0.85rem"><tr>{head}</tr>{body}</table>'


def trace_html(trace: Trace, k: int = 10, max_height_px: int = 320) -> str:
    """The trace as one self-contained HTML fragment: title and settings, what the answer rests on at each
    depth (the analysis every page shows), the top `k` prompt tokens, and the text coloured by the combined
    prompt attribution. Every piece of text is escaped; nothing is fetched from outside.

    Args:
        trace: The trace shown.
        k: How many top prompt tokens are listed.
        max_height_px: The height above which the coloured text scrolls.

    Returns:
        The HTML fragment, one ``<div class="flashtrace-trace">``.
    """
    from .tokens import tokens_html

    from .terminal import about_line

    facts = analyse(trace)
    title = trace.title or "FlashTrace trace"
    about = about_line(trace)
    cell = "padding:2px 8px;text-align:left"
    tokens = [{"position": str(i), "token": repr(text), f"share {OF_PROMPT}": pct(share, 1)}
              for i, text, share in trace.top_prompt_tokens(k)]  # the API's ranking: one definition
    words = " ".join(line for line in (reach_words(facts), change_words(facts)) if line)
    return (f'<div class="flashtrace-trace" style="font-family:system-ui,sans-serif;max-width:980px">'
            f'<div style="font-weight:600;font-size:1.05rem">{safe_html(title)}</div>'
            f'<div style="opacity:0.75;font-size:0.85rem">{safe_html(about)}</div>'
            f'<p style="margin:6px 0">{safe_html(words)}</p>'
            + _html_table(depth_table(facts), DEPTH_COLUMNS, cell)
            + f'<details open><summary>Top {len(tokens)} prompt tokens</summary>'
            + (_html_table(tokens, tuple(tokens[0]), cell) if tokens else "")
            + '</details>'
            + tokens_html(trace, max_height_px=max_height_px, legend="combined prompt attribution (final)")
            + "</div>")


def heatmap(trace: Trace, hop: int | None = None, **kwargs: Any) -> go.Figure:
    """The Explore page's token heatmap: combined prompt attribution, or hop `hop`'s own vector.

    Args:
        trace: The trace drawn.
        hop: The hop whose own vector is drawn, or None for the combined prompt attribution.
        **kwargs: Further options of `token_heatmap` (``width``, ``title``, ``values``, ``token_range``, ``top``,
            ``keep``, ``details``, ``share_of``).

    Returns:
        The heatmap figure (`token_heatmap`).

    Raises:
        InputError: When `hop` is not a hop of the trace, or an option is out of range (from `token_heatmap`).
    """
    from .heatmap import token_heatmap

    return token_heatmap(trace, hop, **kwargs)


def hop_graph(trace: Trace, keep: float = 0.8, fold: bool = True) -> go.Figure:
    """The Hop graph page's figure: prompt sentences → reasoning steps → answer, pruned to the inputs
    holding `keep` of the influence (the rest folded into one node unless `fold` is False). Needs a
    trace made with ``steps=True``.

    Args:
        trace: The trace drawn, made with ``steps=True``.
        keep: The share of the influence the inputs shown hold together.
        fold: Fold the other inputs into one node (else they are left out).

    Returns:
        The hop graph figure (`hop_graph_figure`).

    Raises:
        InputError: When the trace has no step-level attribution.
    """
    from ..analysis.graph import HopGraph
    from .graph import hop_graph_figure

    if trace.steps is None:
        raise InputError("this trace has no step-level attribution; make it with attribute(..., steps=True)")
    return hop_graph_figure(HopGraph.from_trace(trace).pruned(node_threshold=keep, fold=fold), trace)


def compare_depths(trace: Trace, view: str = "added", shared: bool = True) -> go.Figure:
    """The Compare page's hop strips: what each hop adds (``view="added"``) or the attribution after
    hops 0..K (``view="cumulative"``), on the prompt tokens that matter most, one colour scale.

    Args:
        trace: The trace compared.
        view: ``"added"`` or ``"cumulative"``.
        shared: Put every row on one colour scale (else each row is scaled to its own maximum).

    Returns:
        The strips figure (`hop_token_strips`).

    Raises:
        InputError: When `view` is neither ``"added"`` nor ``"cumulative"`` (from `hop_token_strips`).
    """
    from .compare import hop_token_strips

    return hop_token_strips(analyse(trace), [t.text for t in trace.tokens], view, shared=shared)


def to_pandas(trace: Trace) -> pd.DataFrame:
    """One row per token: position, text, role, character offsets, the final attribution, the prompt
    score (normalised over the user's prompt; 0 elsewhere) and each hop's additive contribution. The
    offsets are nullable integers (``Int64``): a template token has none (``<NA>``).

    Args:
        trace: The trace tabled.

    Returns:
        The table, indexed by ``position``, with columns ``token``, ``role``, ``start``, ``end``, ``final``,
        ``prompt_score`` and ``hop{k}_contribution`` per hop.
    """
    import pandas as pd

    table = pd.DataFrame({
        "position": range(trace.n_tokens),
        "token": [t.text for t in trace.tokens],
        "role": [t.role for t in trace.tokens],
        "start": pd.array([t.start for t in trace.tokens], dtype="Int64"),  # None (template tokens): <NA>
        "end": pd.array([t.end for t in trace.tokens], dtype="Int64"),
        "final": trace.scores.final,
        "prompt_score": trace.scores.prompt,
    })
    for k, hop in enumerate(trace.hops):
        table[f"hop{k}_contribution"] = hop.contribution
    return table.set_index("position")


def show(trace: Trace, k: int = 10, console: Console | None = None) -> None:
    """`terminal.show`: the HTML view in a notebook, coloured text (rich) in a terminal.

    Args:
        trace: The trace shown.
        k: How many top prompt words the terminal view lists.
        console: The ``rich.console.Console`` printed on; None for a new one (or the notebook's display in a
            Jupyter kernel).
    """
    from .terminal import show as draw

    draw(trace, k, console)


PNG_WIDTH = 1100  # pixels of a notebook figure's PNG (a figure that sets its own width keeps it)


def notebook_figures(png: bool | None = None) -> str:
    """Make Plotly figures in this notebook travel: each is saved as Plotly JSON (interactive where the Plotly
    extension runs), as HTML with plotly.js embedded once (no network needed: nbviewer, any Jupyter) and,
    with `png` (by default when kaleido finds a Chrome or Chromium here), as a PNG image, which is what
    GitHub shows. Sets ``plotly.io.renderers.default`` and returns it.

    Args:
        png: Also save each figure as a PNG image; None for whether kaleido can draw here.

    Returns:
        The renderers now the default, e.g. ``"plotly_mimetype+notebook+png"``.
    """
    import plotly.io as pio

    from .export import image_export_problem

    if png is None:
        png = image_export_problem() is None
    if png:
        pio.renderers["png"].width = PNG_WIDTH  # kaleido's 700 px cut the hop graph's sentence labels
    pio.renderers.default = "plotly_mimetype+notebook" + ("+png" if png else "")
    return pio.renderers.default


__all__ = ["notebook_figures", "show", "trace_html", "heatmap", "hop_graph", "compare_depths", "to_pandas"]
