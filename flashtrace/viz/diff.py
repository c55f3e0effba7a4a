"""An edited trace beside its original: both heatmaps on one colour scale, the difference heatmap (each
aligned token's change in share, on a diverging scale centred on zero; new text and the answers grey), the
verdict on the answer, and the pair as one offline HTML page. The numbers come from `analysis.diff`."""

from __future__ import annotations


import plotly.graph_objects as go

from ..analysis.diff import AttributionDiff, EditOutcome
from ..analysis.facts import OF_PROMPT
from ..analysis.schema import Trace
from ..analysis.views import target_positions
from .export import standalone_html
from .heatmap import LABEL_CHARS, ROW_PX, token_heatmap
from .tokens import safe_html, class_maxima, plotly_text, show_controls, token_grid, view_values, visible_label

DIFF_SCALE = [[0.0, "#b91c1c"], [0.25, "#f3a5a5"], [0.5, "#f5f5f4"], [0.75, "#9ec5f4"], [1.0, "#1d4ed8"]]
NEW = "#d6d3d1"  # inserted text and the answers: no partner, no difference


def shared_tops(original: Trace, edited: Trace) -> dict[str, float]:
    """One colour scale for both heatmaps: per colour class, the larger of the two traces' tops.

    Args:
        original: The original trace.
        edited: The edited trace.

    Returns:
        ``{"prompt": top, "generated": top, "template": top}`` of the combined views, target tokens left out.
    """
    a = class_maxima(original, view_values(original), target_positions(original))
    b = class_maxima(edited, view_values(edited), target_positions(edited))
    return {cls: max(a[cls], b[cls]) for cls in a}


def difference_heatmap(edited: Trace, diff: AttributionDiff, width: int = 16) -> go.Figure:
    """The edited trace's tokens in reading order, each aligned token coloured by its difference (blue: it
    gained share, red: it lost share); new tokens and the answer grey.

    Args:
        edited: The edited trace.
        diff: The difference of the edited trace's attribution from the original's (`analysis.diff`): one
            value per position of `edited`, None where a token has no partner or is a target token.
        width: The most tokens in a grid row.

    Returns:
        The heatmap figure: a ``difference`` trace on a diverging scale centred on zero and a grey ``new`` trace.
    """
    cells = token_grid(edited, width)
    n_rows = max((r for r, _c in cells), default=-1) + 1
    grids = {name: ([[None] * width for _ in range(n_rows)], [[""] * width for _ in range(n_rows)],
                    [[None] * width for _ in range(n_rows)]) for name in ("difference", "new")}
    for i, (r, c) in enumerate(cells):
        tok, value = edited.tokens[i], diff.values[i]
        z, text, custom = grids["difference" if value is not None else "new"]
        z[r][c] = value if value is not None else 0.0
        text[r][c] = plotly_text(visible_label(tok.text, LABEL_CHARS))
        custom[r][c] = [i, plotly_text(show_controls(repr(tok.text)))]
    top = diff.top or 1.0
    fig = go.Figure()
    z, text, custom = grids["difference"]
    fig.add_trace(go.Heatmap(
        z=z, text=text, customdata=custom, name="difference", texttemplate="%{text}", textfont={"size": 11},
        colorscale=DIFF_SCALE, zmin=-top, zmax=top, zmid=0.0, xgap=1, ygap=1, hoverongaps=False,
        colorbar={"orientation": "h", "y": 1.0, "yanchor": "bottom", "len": 0.5, "thickness": 10,
                  "tickformat": "+.1%", "title": {"text": f"change in share {OF_PROMPT}", "side": "top"}},
        hovertemplate="#%{customdata[0]} %{customdata[1]}<br>change %{z:+.2%}<extra></extra>"))
    z, text, custom = grids["new"]
    fig.add_trace(go.Heatmap(
        z=z, text=text, customdata=custom, name="new", texttemplate="%{text}", textfont={"size": 11},
        colorscale=[[0.0, NEW], [1.0, NEW]], showscale=False, xgap=1, ygap=1, hoverongaps=False,
        hovertemplate="#%{customdata[0]} %{customdata[1]}<br>new text or the answer: no partner<extra></extra>"))
    fig.update_layout(
        title={"text": "Difference: edited minus original (aligned tokens)", "font": {"size": 14}},
        height=max(180, n_rows * ROW_PX + 120), margin={"l": 20, "r": 10, "t": 90, "b": 10},
        xaxis={"visible": False, "range": [-0.5, width - 0.5], "fixedrange": True},
        yaxis={"autorange": "reversed", "visible": False, "fixedrange": True},
        meta={"view": "difference_heatmap", "width": width, "top": diff.top, "values": list(diff.values)})
    return fig


def pair_heatmaps(original: Trace, edited: Trace, diff: AttributionDiff) -> list[go.Figure]:
    """The original's and the edited trace's heatmaps on one colour scale, then the difference heatmap.

    Args:
        original: The original trace.
        edited: The edited trace.
        diff: The difference of the edited trace's attribution from the original's.

    Returns:
        Three figures: the original's heatmap, the edited trace's, the difference heatmap.
    """
    top = shared_tops(original, edited)
    return [token_heatmap(original, title="Original: combined prompt attribution", top=top),
            token_heatmap(edited, title="Edited: combined prompt attribution (same colour scale)", top=top),
            difference_heatmap(edited, diff)]


def outcome_html(outcome: EditOutcome, edit_words: str) -> str:
    """The edit and its verdict as escaped HTML: what was edited, the log-probabilities, the new answer.

    Args:
        outcome: The edit's effect on the answer.
        edit_words: What was edited, in words.

    Returns:
        A ``<table>`` of the edit and its numbers, then the verdict sentence as a caption.
    """
    rows = [("edit", edit_words), ("log-probability before", f"{outcome.before:.3f}"),
            ("log-probability after", f"{outcome.after:.3f}"), ("change", f"{outcome.change:+.3f} nats"),
            ("original answer", outcome.old_answer)]
    if outcome.new_answer is not None:
        rows.append(("new answer (greedy)", outcome.new_answer))
    items = "".join(f"<tr><th>{safe_html(k)}</th><td>{safe_html(v)}</td></tr>" for k, v in rows)
    return f'<table>{items}</table><p class="ft-caption">{safe_html(outcome.sentence)}</p>'


def pair_document(original: Trace, edited: Trace | None, outcome: EditOutcome, diff: AttributionDiff | None,
                  edit_words: str, title: str) -> str:
    """The pair as one offline HTML page: the verdict, both heatmaps on one scale and the difference.

    Args:
        original: The original trace.
        edited: The edited trace, or None when there is none (then only the original's heatmap is shown).
        outcome: The edit's effect on the answer.
        diff: The difference of the edited trace's attribution from the original's, or None (as for `edited`).
        edit_words: What was edited, in words.
        title: The page's title.

    Returns:
        The whole HTML page (`standalone_html`).
    """
    blocks: list[go.Figure | str] = [outcome_html(outcome, edit_words)]
    if edited is not None and diff is not None:
        blocks += [f"<p>{safe_html(diff.sentence)}</p>", *pair_heatmaps(original, edited, diff)]
    else:
        blocks.append(token_heatmap(original, title="Original: combined prompt attribution"))
    return standalone_html(title, blocks)


__all__ = ["difference_heatmap", "pair_heatmaps", "pair_document", "outcome_html", "shared_tops"]
