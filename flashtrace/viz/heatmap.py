"""The token heatmap (Plotly): every token a cell in reading order, coloured by the view's value, with
hover details; target tokens outlined and off the colour scale; rows without salient tokens optionally
folded away; and the top-k table rows for the same view."""

from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go

from ..analysis.facts import OF_PROMPT, analyse
from ..analysis.schema import Trace
from ..analysis.text import pct
from ..analysis.views import top_view_tokens
from .colors import GOLD, PROMPT_SCALE, REASONING_SCALE, TARGET_FILL, TARGET_OUTLINE, TEMPLATE_SCALE
from .tokens import (safe_html, plotly_text, scale_maxima, show_controls, target_positions, token_class, token_grid, view_values,
                     visible_label)

from ..base.errors import InputError

ROW_PX = 24
BAR_BAND_PX = 48  # the colour keys' band between the title and the grid
SCALED = ("prompt", "generated")  # classes with a colour key (template tokens share the grid, not a key)
LABEL_CHARS = 8  # what fits a cell at 16 cells per row on a laptop-wide page
WINDOW = 512  # tokens per heatmap page of a long trace: drawing thousands of labelled cells takes seconds
_CLASSES = (("prompt", "prompt", PROMPT_SCALE), ("generated", "reasoning + answer", REASONING_SCALE),
            ("template", "chat template", TEMPLATE_SCALE))


def _hover(i: int, tok, target: range) -> list:
    mark = " · target (not on the colour scale)" if i in target else ""
    return [i, plotly_text(show_controls(repr(tok.text))), tok.role + mark]


def heatmap_cells(trace: Trace, width: int, token_range: tuple[int, int], keep: set[int] | None = None
                  ) -> tuple[list[tuple[int, int] | None], list[tuple[int, int, int]]]:
    """Where each token of `token_range` is drawn: ``(row, column)``, or None when its grid row is folded
    away (with `keep`, rows holding neither a kept position nor a target token fold). Also the folded runs
    as ``(first position, end position, display row they sit above)``.

    Args:
        trace: The trace drawn.
        width: The most tokens in a grid row (`token_grid`).
        token_range: The tokens drawn, ``[start, end)``.
        keep: The positions whose grid rows stay shown; None folds nothing.

    Returns:
        ``(cells, folds)``: per token of `token_range`, its display ``(row, column)`` or None; and the folded
        runs, empty without `keep` (or when no row would be shown).
    """
    lo = token_range[0]
    cells = token_grid(trace, width, token_range)
    if keep is None:
        return list(cells), []
    target = target_positions(trace)
    shown_rows = sorted({r for i, (r, _c) in enumerate(cells, start=lo) if i in keep or i in target})
    if not shown_rows:
        return list(cells), []
    order = {r: n for n, r in enumerate(shown_rows)}
    out: list[tuple[int, int] | None] = []
    folds: list[tuple[int, int, int]] = []
    for i, (r, c) in enumerate(cells, start=lo):
        if r in order:
            out.append((order[r], c))
        elif folds and folds[-1][1] == i:
            folds[-1] = (folds[-1][0], i + 1, folds[-1][2])
        else:
            folds.append((i, i + 1, sum(1 for x in shown_rows if x < r)))
        if r not in order:
            out.append(None)
    return out, folds


def heatmap_windows(n_tokens: int, size: int = WINDOW) -> list[tuple[int, int]]:
    """Token ranges a long trace's heatmap is paged into (one range when it fits in 1.5 windows).

    Args:
        n_tokens: The number of tokens of the trace.
        size: The number of tokens per window.

    Returns:
        ``(start, end)`` ranges, end exclusive, covering ``[0, n_tokens)`` in order.
    """
    if n_tokens <= size * 3 // 2:
        return [(0, n_tokens)]
    return [(lo, min(lo + size, n_tokens)) for lo in range(0, n_tokens, size)]


def window_of(windows: list[tuple[int, int]], values: list[float], positions: list[int]) -> int:
    """Index of the window holding the highest of `values` among `positions` (0 when there are none).

    Args:
        windows: Token ranges ``(start, end)``, as from `heatmap_windows`.
        values: One value per position.
        positions: The positions considered.

    Returns:
        The index into `windows`.
    """
    if not positions:
        return 0
    best = max(positions, key=lambda i: values[i])
    return next(w for w, (lo, hi) in enumerate(windows) if lo <= best < hi)


def _share_of(hop: int | None, values) -> str:
    """What a hovered value is a share of, named from the view."""
    if values is not None:
        return "of the attribution shown"
    return OF_PROMPT if hop is None else f"of hop {hop}'s attribution"


@dataclass(frozen=True)
class HeatmapLayout:
    """Where the heatmap draws what (the data, apart from the drawing): the drawn tokens' ``(position, (row,
    column))``, the folded runs, the grid's width and rows, the target and gold positions, the colour-scale
    tops and the classes that get a colour key."""

    drawn: list[tuple[int, tuple[int, int]]]
    folds: list[tuple[int, int, int]]
    width: int
    n_rows: int
    target: range
    gold: set[int]
    top: dict[str, float]
    bars: list[str]

    def cell_class(self, trace: Trace, i: int) -> str:
        """The class token `i` is drawn in: target, or its role's colour class.

        Args:
            trace: The trace drawn.
            i: The token's position in `trace`.

        Returns:
            ``"target"`` when `i` is in the target, else its role's colour class (``"prompt"``, ``"generated"`` or
            ``"template"``, `token_class`).
        """
        return "target" if i in self.target else token_class(trace.tokens[i].role)


def heatmap_layout(trace: Trace, values: list[float], width: int, token_range: tuple[int, int],
                   keep: set[int] | None, top: dict[str, float] | None) -> HeatmapLayout:
    """The `HeatmapLayout` of `values` over `token_range` (`heatmap_cells`), scale tops `top` or the view's own.

    Args:
        trace: The trace drawn.
        values: One value per position of `trace`.
        width: The most tokens in a grid row.
        token_range: The tokens drawn, ``[start, end)``.
        keep: The positions whose grid rows stay shown; None folds nothing.
        top: The scale top per colour class; None for the maxima of `values` over non-target tokens.

    Returns:
        Where the heatmap draws what.
    """
    cells, folds = heatmap_cells(trace, width, token_range, keep)
    drawn = [(i, rc) for i, rc in enumerate(cells, start=token_range[0]) if rc is not None]
    top = scale_maxima(trace, values=values) if top is None else top
    facts = analyse(trace)
    layout = HeatmapLayout(drawn, folds, width, max((rc[0] for _i, rc in drawn), default=-1) + 1,
                           target_positions(trace), set(facts.gold.positions) if facts.gold else set(), top, [])
    drawn_classes = {layout.cell_class(trace, i) for i, _rc in drawn}
    layout.bars.extend(c for c, _label, _scale in _CLASSES if c in drawn_classes and c in SCALED and top.get(c, 0) > 0)
    return layout


def _class_heatmap(trace: Trace, values: list[float], layout: HeatmapLayout, cls: str, label: str, scale,
                   share_of: str) -> go.Heatmap | None:
    """The heatmap trace of one colour class (None when no drawn token is in it): its tokens' values at their
    cells, labels and hover details."""
    rows, width = layout.n_rows, layout.width
    z, text, custom = ([[blank] * width for _ in range(rows)] for blank in (None, "", None))
    mine = [(i, rc) for i, rc in layout.drawn if layout.cell_class(trace, i) == cls]
    if not mine:
        return None
    for i, (r, c) in mine:
        tok = trace.tokens[i]
        z[r][c], text[r][c], custom[r][c] = values[i], plotly_text(visible_label(tok.text, LABEL_CHARS)), \
            _hover(i, tok, layout.target)
    keyed = cls in layout.bars
    return go.Heatmap(
        z=z, text=text, customdata=custom, name=cls, texttemplate="%{text}", textfont={"size": 11},
        colorscale=scale, zmin=0.0, zmax=layout.top.get(cls) or 1.0, xgap=1, ygap=1, hoverongaps=False,
        showscale=keyed, colorbar=_colorbar(label, layout.bars.index(cls) if keyed else 0),
        hovertemplate="#%{customdata[0]} %{customdata[2]}<br>token %{customdata[1]}<br>"
                      f"%{{z:.2%}} {plotly_text(share_of)}<extra></extra>")


def _fold_lines(layout: HeatmapLayout) -> list[dict]:
    return [{"type": "line", "xref": "paper", "x0": -0.04, "x1": 1.0, "y0": row - 0.5, "y1": row - 0.5,
             "line": {"color": "#9ca3af", "width": 1, "dash": "dot"}} for _a, _b, row in layout.folds]


def _row_axis(layout: HeatmapLayout, details: bool) -> dict:
    """The y axis: rows top down, ``⋯`` after a fold, each row's first position with `details`."""
    first_in_row: dict[int, int] = {}
    for i, (r, _c) in layout.drawn:
        first_in_row.setdefault(r, i)
    after_fold = {row for _a, _b, row in layout.folds}
    ticks = [("⋯ " if r in after_fold else "") + (f"#{p}" if details else "") for r, p in first_in_row.items()]
    return {"autorange": "reversed", "tickmode": "array", "tickvals": list(first_in_row), "ticktext": ticks,
            "tickfont": {"size": 9}, "fixedrange": True}


def _heading(trace: Trace, hop: int | None, title: str | None, lo: int, hi: int) -> str:
    view = "combined (final prompt attribution)" if hop is None else f"hop {hop} (share of the hop's mass)"
    view = view if title is None else title
    return view + (f" · tokens {lo}-{hi - 1} of {trace.n_tokens}" if (lo, hi) != (0, trace.n_tokens) else "")


def token_heatmap(trace: Trace, hop: int | None = None, width: int = 16, title: str | None = None,
                  values: list[float] | None = None, token_range: tuple[int, int] | None = None,
                  top: dict[str, float] | None = None, keep: set[int] | None = None, details: bool = False,
                  share_of: str | None = None) -> go.Figure:
    """Heatmap of the view (``hop=None`` combined prompt attribution, else hop `hop`'s mass share), or of
    explicit per-position `values` (e.g. one reasoning step's attribution, `step_values`), over all
    tokens or those in `token_range` (colour scales still span the whole trace). Rows are unlabelled but for
    ``⋯`` after folded rows; with `details`, each row is labelled with its first token's position.

    One heatmap trace per colour class (named ``prompt``, ``generated``, ``template``) and one for the
    target tokens (``target``: a flat fill, outlined, left out of the colour scales); each trace's
    ``z[row][col]`` is the value of the token at that cell (None where another class sits), so the
    figure data is exactly `view_values(trace, hop)` laid out by `token_grid`. Scale tops are `top`
    (e.g. `shared_maxima` to compare hops) or the view's own maxima over non-target tokens. With `keep`,
    grid rows holding none of those positions (and no target token) are folded away, marked by a dashed
    line; `heatmap_values` reads None for them. Hover shows each token's value as the share it is (`share_of`,
    by default named from the view: of the prompt's attribution, of hop k's, of the shown attribution), as the
    tables do, never a raw score.

    Args:
        trace: The trace drawn.
        hop: The hop whose mass share is shown, or None for the combined prompt attribution.
        width: The most tokens in a grid row.
        title: The figure's heading instead of the view's name (the token range is still added).
        values: Explicit per-position values shown instead of the view's, one per token.
        token_range: Only the tokens ``[start, end)``; None for all.
        top: The scale top per colour class; None for the view's own maxima over non-target tokens.
        keep: The positions whose grid rows stay shown; None folds nothing.
        details: Label each row with its first token's position.
        share_of: What the hovered values are a share of, e.g. ``"of hop 1's attribution"``; None names it
            from the view.

    Returns:
        The heatmap figure; its ``layout.meta`` records the view, width, range, gold, folded rows, `keep`
        and scale tops.

    Raises:
        InputError: When `values` does not have one value per token, when `token_range` is empty or outside
            the trace, or (from `view_values`) when `hop` is not a hop of the trace.
    """
    share_of = share_of or _share_of(hop, values)
    values = view_values(trace, hop) if values is None else list(values)
    if len(values) != trace.n_tokens:
        raise InputError(f"{len(values)} values for {trace.n_tokens} tokens")
    lo, hi = token_range or (0, trace.n_tokens)
    if not 0 <= lo < hi <= trace.n_tokens:
        raise InputError(f"token range {lo}:{hi} is outside the {trace.n_tokens} tokens")
    layout = heatmap_layout(trace, values, width, (lo, hi), keep, top)
    fig = go.Figure()
    for cls, label, scale in _CLASSES + (("target", "target", [[0.0, TARGET_FILL], [1.0, TARGET_FILL]]),):
        heat = _class_heatmap(trace, values, layout, cls, label, scale, share_of)
        if heat is not None:
            fig.add_trace(heat)
    shapes = (_target_outlines(layout.drawn, layout.target) + _target_outlines(layout.drawn, layout.gold, GOLD, "dot")
              + _fold_lines(layout))
    key_px = BAR_BAND_PX if layout.bars else 0
    fig.update_layout(
        title={"text": _heading(trace, hop, title, lo, hi), "font": {"size": 14}, "y": 1.0, "yref": "paper",
               "yanchor": "bottom", "pad": {"b": key_px - 12 if key_px else 10}}, shapes=shapes,
        height=max(160, layout.n_rows * ROW_PX + 70 + key_px), margin={"l": 50, "r": 10, "t": 40 + key_px, "b": 10},
        xaxis={"visible": False, "range": [-0.5, width - 0.5], "fixedrange": True},
        yaxis=_row_axis(layout, details),
        meta={"view": "token_heatmap", "hop": hop, "width": width, "range": [lo, hi],
              "gold": sorted(g for g in layout.gold if lo <= g < hi),
              "folded": [[a, b] for a, b, _row in layout.folds], "keep": None if keep is None else sorted(keep),
              "top": dict(layout.top)},
    )
    return fig


def _colorbar(label: str, index: int) -> dict:
    """A colour key laid flat above the grid, the `index`-th from the left: it stays in view at the top of a
    tall heatmap, and two keys (prompt, reasoning + answer) sit side by side instead of overlapping."""
    return {"orientation": "h", "x": index * 0.5, "xanchor": "left", "len": 0.42, "y": 1.0, "yanchor": "bottom",
            "ypad": 6, "thickness": 10, "nticks": 5, "tickformat": ".2~g", "tickfont": {"size": 10},
            "title": {"text": label, "side": "top", "font": {"size": 11}}}


def _target_outlines(drawn: list[tuple[int, tuple[int, int]]], target: range | set[int],
                     color: str = TARGET_OUTLINE, dash: str = "solid") -> list[dict]:
    """One outline rectangle per run of target (or gold) cells on a row."""
    runs: list[list[int]] = []  # [row, first col, last col]
    for i, (r, c) in drawn:
        if i not in target:
            continue
        if runs and runs[-1][0] == r and runs[-1][2] == c - 1:
            runs[-1][2] = c
        else:
            runs.append([r, c, c])
    return [{"type": "rect", "x0": c0 - 0.5, "x1": c1 + 0.5, "y0": r - 0.5, "y1": r + 0.5,
             "line": {"color": color, "width": 2, "dash": dash}, "fillcolor": "rgba(0,0,0,0)"} for r, c0, c1 in runs]


TOP_TOKENS_CSS = ("<style>.ft-topk{border-collapse:collapse;width:100%;font-size:0.875rem;margin-bottom:0.5rem}"
                  ".ft-topk th,.ft-topk td{border:1px solid rgba(128,128,128,0.25);padding:0.3rem 0.6rem;"
                  "text-align:left;white-space:pre}.ft-topk th{font-weight:400;opacity:0.7;"
                  "background:rgba(128,128,128,0.08)}.ft-topk .ft-num{text-align:right}</style>")
_NUMBERS = ("rank", "position", "share")  # right-aligned, as in a data table


def top_tokens_html(rows: list[dict]) -> str:
    """The `top_tokens` rows as a plain HTML table (class ``ft-topk``): every cell escaped text, shares as
    percentages with two decimals. A page shows it instead of a data grid, whose scripts (~1.6 MB) cost a
    first load more than ten rows are worth.

    Args:
        rows: The `top_tokens` rows (column name to value), all with the same columns.

    Returns:
        The table with its CSS, or a ``No tokens to rank.`` paragraph when `rows` is empty.
    """
    if not rows:
        return '<p class="ft-topk">No tokens to rank.</p>'

    def cell(tag: str, column: str, text: str) -> str:
        align = ' class="ft-num"' if column in _NUMBERS else ""
        return f"<{tag}{align}>{safe_html(text)}</{tag}>"

    head = "".join(cell("th", c, c) for c in rows[0])
    body = "".join("<tr>" + "".join(cell("td", c, pct(v, 2) if c == "share" else str(v)) for c, v in row.items())
                   + "</tr>" for row in rows)
    return f'{TOP_TOKENS_CSS}<table class="ft-topk"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def heatmap_values(fig: go.Figure, trace: Trace) -> list[float | None]:
    """Read back each token's value from a `token_heatmap` figure, in position order over its token
    range, None for tokens on folded rows (for tests and the HTML export).

    Args:
        fig: A figure made by `token_heatmap`.
        trace: The trace it was made from.

    Returns:
        One value per token of the figure's range, None on folded rows.
    """
    meta = fig.layout.meta
    width, (lo, hi) = meta["width"], meta["range"]
    keep = None if meta.get("keep") is None else set(meta["keep"])
    by_class = {t.name: t.z for t in fig.data}
    target = target_positions(trace)
    cells, _folds = heatmap_cells(trace, width, (lo, hi), keep)
    return [None if rc is None else by_class["target" if i in target else token_class(trace.tokens[i].role)][rc[0]][rc[1]]
            for i, rc in enumerate(cells, start=lo)]


def top_tokens(trace: Trace, hop: int | None = None, k: int = 10, details: bool = False) -> list[dict]:
    """The view's `k` strongest tokens (`analysis.views.top_view_tokens`: punctuation-only and target tokens
    left out). Rows: rank, token (visible whitespace, unescaped), role, share of the view; the position
    with `details`.

    Args:
        trace: The trace ranked.
        hop: The hop whose view is ranked, or None for the combined view.
        k: How many tokens at most.
        details: Add each token's position.

    Returns:
        One dict per token, strongest first: ``rank``, (``position``,) ``token``, ``role``, ``share``.

    Raises:
        InputError: When `hop` is not a hop of the trace (from `view_values`).
    """
    values = view_values(trace, hop)
    return [{"rank": rank, **({"position": i} if details else {}), "token": visible_label(trace.tokens[i].text, 40),
             "role": trace.tokens[i].role, "share": values[i]}
            for rank, i in enumerate(top_view_tokens(trace, hop, k), 1)]
