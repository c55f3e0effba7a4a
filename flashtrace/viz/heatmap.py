"""The token heatmap (Plotly): every token a cell in reading order, coloured by the view's value, with
hover details; and the top-k table rows for the same view."""

from __future__ import annotations

import html

import plotly.graph_objects as go

from ..trace import Trace
from .colors import PROMPT_SCALE, REASONING_SCALE, TEMPLATE_SCALE
from .tokens import class_maxima, token_class, token_grid, view_values, visible_label

ROW_PX = 24
LABEL_CHARS = 8  # what fits a cell at 16 cells per row on a laptop-wide page
WINDOW = 512  # tokens per heatmap page of a long trace: drawing thousands of labelled cells takes seconds
_CLASSES = (("prompt", "prompt", PROMPT_SCALE), ("generated", "reasoning + answer", REASONING_SCALE),
            ("template", "chat template", TEMPLATE_SCALE))


def _hover(i: int, tok, target: tuple[int, int]) -> list:
    mark = " · target" if target[0] <= i < target[1] else ""
    return [i, html.escape(repr(tok.text)), tok.role + mark]


def heatmap_windows(n_tokens: int, size: int = WINDOW) -> list[tuple[int, int]]:
    """Token ranges a long trace's heatmap is paged into (one range when it fits in 1.5 windows)."""
    if n_tokens <= size * 3 // 2:
        return [(0, n_tokens)]
    return [(lo, min(lo + size, n_tokens)) for lo in range(0, n_tokens, size)]


def window_of(windows: list[tuple[int, int]], values: list[float], positions: list[int]) -> int:
    """Index of the window holding the highest of `values` among `positions` (0 when there are none)."""
    if not positions:
        return 0
    best = max(positions, key=lambda i: values[i])
    return next(w for w, (lo, hi) in enumerate(windows) if lo <= best < hi)


def token_heatmap(trace: Trace, hop: int | None = None, width: int = 16, title: str | None = None,
                  values: list[float] | None = None, token_range: tuple[int, int] | None = None) -> go.Figure:
    """Heatmap of the view (``hop=None`` combined prompt attribution, else hop `hop`'s mass share), or of
    explicit per-position `values` (e.g. one reasoning step's attribution, `step_values`), over all
    tokens or those in `token_range` (colour scales still span the whole trace).

    One heatmap trace per colour class (named ``prompt``, ``generated``, ``template``); each trace's
    ``z[row][col]`` is the value of the token at that cell (None where another class sits), so the
    figure data is exactly `view_values(trace, hop)` laid out by `token_grid`.
    """
    values = view_values(trace, hop) if values is None else list(values)
    if len(values) != trace.n_tokens:
        raise ValueError(f"{len(values)} values for {trace.n_tokens} tokens")
    lo, hi = token_range or (0, trace.n_tokens)
    if not 0 <= lo < hi <= trace.n_tokens:
        raise ValueError(f"token range {lo}:{hi} is outside the {trace.n_tokens} tokens")
    cells = token_grid(trace, width, (lo, hi))
    n_rows = (cells[-1][0] + 1) if cells else 0
    top = class_maxima(trace, values)
    target = trace.settings.target
    fig = go.Figure()
    for bar_index, (cls, label, scale) in enumerate(_CLASSES):
        z = [[None] * width for _ in range(n_rows)]
        text = [[""] * width for _ in range(n_rows)]
        custom = [[None] * width for _ in range(n_rows)]
        present = False
        for i, (r, c) in enumerate(cells, start=lo):
            tok = trace.tokens[i]
            if token_class(tok.role) != cls:
                continue
            present = True
            z[r][c] = values[i]
            text[r][c] = html.escape(visible_label(tok.text, LABEL_CHARS))
            custom[r][c] = _hover(i, tok, target)
        if not present:
            continue
        fig.add_trace(go.Heatmap(
            z=z, text=text, customdata=custom, name=cls, texttemplate="%{text}", textfont={"size": 11},
            colorscale=scale, zmin=0.0, zmax=top[cls] or 1.0, xgap=1, ygap=1, hoverongaps=False,
            showscale=cls != "template",
            colorbar={"title": {"text": label, "side": "right"}, "x": 1.0 + 0.09 * bar_index, "len": 0.9,
                      "thickness": 12},
            hovertemplate="#%{customdata[0]} %{customdata[2]}<br>token %{customdata[1]}<br>"
                          "score %{z:.4g}<extra></extra>"))
    first_in_row = {}
    for i, (r, _c) in enumerate(cells, start=lo):
        first_in_row.setdefault(r, i)
    view = "combined (final prompt attribution)" if hop is None else f"hop {hop} (share of the hop's mass)"
    view = view if title is None else title
    if (lo, hi) != (0, trace.n_tokens):
        view += f" · tokens {lo}-{hi - 1} of {trace.n_tokens}"
    fig.update_layout(
        title={"text": view, "font": {"size": 14}},
        height=max(160, n_rows * ROW_PX + 70), margin={"l": 50, "r": 10, "t": 40, "b": 10},
        xaxis={"visible": False, "range": [-0.5, width - 0.5], "fixedrange": True},
        yaxis={"autorange": "reversed", "tickmode": "array", "tickvals": list(first_in_row),
               "ticktext": [f"#{p}" for p in first_in_row.values()], "tickfont": {"size": 9}, "fixedrange": True},
        meta={"view": "token_heatmap", "hop": hop, "width": width, "range": [lo, hi]},
    )
    return fig


def heatmap_values(fig: go.Figure, trace: Trace) -> list[float | None]:
    """Read back each drawn token's value from a `token_heatmap` figure, in position order over its token
    range (for tests and the HTML export)."""
    width, (lo, hi) = fig.layout.meta["width"], fig.layout.meta["range"]
    by_class = {t.name: t.z for t in fig.data}
    return [by_class[token_class(trace.tokens[i].role)][r][c]
            for i, (r, c) in enumerate(token_grid(trace, width, (lo, hi)), start=lo)]


def top_tokens(trace: Trace, hop: int | None = None, k: int = 10) -> list[dict]:
    """The `k` highest positions of the view: prompt tokens for the combined view, prompt and generated
    tokens for a hop. Rows: rank, position, token (visible whitespace, unescaped), role, score."""
    values = view_values(trace, hop)
    roles = ("prompt",) if hop is None else ("prompt", "reasoning", "answer")
    ranked = sorted(trace.positions(*roles), key=lambda i: -values[i])[:k]
    return [{"rank": r, "position": i, "token": visible_label(trace.tokens[i].text, 40), "role": trace.tokens[i].role,
             "score": values[i]} for r, i in enumerate(ranked, 1)]
