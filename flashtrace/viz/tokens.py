"""Token-level data shared by the views: the values a view shows, visible-whitespace labels, the grid
layout of the heatmap, and the flowing, escaped HTML rendering of a trace's text."""

from __future__ import annotations

import html

from ..trace import Trace
from .colors import ROLE_COLORS, ROLE_SCALES, scale_color, text_color_for

VISIBLE = {" ": "·", "\n": "↵", "\t": "→", "\r": "␍"}


def token_class(role: str) -> str:
    """Colour class of a role: ``prompt``, ``generated`` (reasoning or answer) or ``template``."""
    return "generated" if role in ("reasoning", "answer") else role


def view_values(trace: Trace, hop: int | None = None) -> list[float]:
    """What a view shows per position.

    ``hop=None`` (combined): the final prompt attribution, normalised to sum 1 over prompt tokens
    (``scores.prompt``). ``hop=k``: hop k's raw vector as a share of its total mass, over all positions.
    """
    if hop is None:
        return list(trace.scores.prompt)
    if not 0 <= hop < len(trace.hops):
        raise ValueError(f"hop {hop} is not in this trace (it has hops 0..{len(trace.hops) - 1})")
    raw = trace.hops[hop].raw
    total = sum(raw)
    return [v / total for v in raw] if total > 0 else [0.0] * len(raw)


def step_values(trace: Trace, segment_id: str) -> list[float]:
    """One reasoning step's (or the answer's) own attribution over all positions, as a share of its mass."""
    if trace.steps is None or segment_id not in trace.steps.vectors:
        raise ValueError(f"segment {segment_id} has no step attribution in this trace")
    vec = trace.steps.vectors[segment_id]
    total = sum(vec)
    return [v / total for v in vec] if total > 0 else [0.0] * len(vec)


def class_maxima(trace: Trace, values: list[float]) -> dict[str, float]:
    """Largest value per colour class (the top of that class's colour scale)."""
    top = {"prompt": 0.0, "generated": 0.0, "template": 0.0}
    for tok, v in zip(trace.tokens, values):
        cls = token_class(tok.role)
        top[cls] = max(top[cls], v)
    return top


def visible_label(text: str, max_chars: int | None = 10) -> str:
    """Token text with whitespace made visible (· ↵ →) and long tokens shortened; not escaped."""
    label = "".join(VISIBLE.get(ch, ch) for ch in text) if not text.strip() else \
        text.replace("\n", "↵").replace("\t", "→").replace("\r", "␍")
    if max_chars and len(label) > max_chars:
        label = label[: max_chars - 1] + "…"
    return label or "∅"


def token_grid(trace: Trace, width: int = 20, token_range: tuple[int, int] | None = None) -> list[tuple[int, int]]:
    """``(row, column)`` of every token (or of the tokens in `token_range`, rows counted from 0): rows hold
    at most `width` tokens and break after a newline and where the role changes, so prompt, template,
    reasoning and answer start on fresh rows."""
    lo, hi = token_range or (0, trace.n_tokens)
    cells, row, col = [], 0, 0
    prev_role = None
    for tok in trace.tokens[lo:hi]:
        if col and (col >= width or tok.role != prev_role):
            row, col = row + 1, 0
        cells.append((row, col))
        col += 1
        prev_role = tok.role
        if "\n" in tok.text:
            row, col = row + 1, 0
    return cells


def _style(cls: str, value: float, top: float) -> tuple[str, str]:
    bg = scale_color(ROLE_SCALES[cls], value / top if top > 0 else 0.0)
    return bg, text_color_for(bg)


def tokens_html(trace: Trace, hop: int | None = None, max_height_px: int | None = 480,
                token_range: tuple[int, int] | None = None, values: list[float] | None = None) -> str:
    """The trace's text (or the tokens in `token_range`) as flowing HTML, each token's background
    coloured by the view's value (or by `values`): blue prompt, orange reasoning/answer, grey template.
    Every piece of text is escaped."""
    values = view_values(trace, hop) if values is None else values
    top = class_maxima(trace, values)
    lo, hi = trace.settings.target
    first, last = token_range or (0, trace.n_tokens)
    parts, prev_role = [], None
    for i, (tok, v) in enumerate(zip(trace.tokens, values)):
        if not first <= i < last:
            continue
        if tok.role != prev_role:
            parts.append(f'<span class="ft-role" style="color:{ROLE_COLORS[tok.role]}">{tok.role}</span>')
            prev_role = tok.role
        bg, fg = _style(token_class(tok.role), v, top[token_class(tok.role)])
        shown = visible_label(tok.text, None) if not tok.text.strip() else tok.text.replace("\n", "↵")
        title = f"#{i} {tok.role}{' (target)' if lo <= i < hi else ''}: {tok.text!r} score {v:.4g}"
        target = " ft-target" if lo <= i < hi else ""
        parts.append(f'<span class="ft-tok{target}" style="background:{bg};color:{fg}" '
                     f'title="{html.escape(title, quote=True)}">{html.escape(shown)}</span>')
        if "\n" in tok.text:
            parts.append("<br>")
    scroll = f"max-height:{max_height_px}px;overflow-y:auto;" if max_height_px else ""
    return (f'<div class="ft-tokens" style="{scroll}line-height:1.9;font-family:ui-monospace,monospace;'
            f'font-size:0.85rem;white-space:pre-wrap;word-break:break-word">{TOKEN_CSS}{"".join(parts)}</div>')


TOKEN_CSS = ("<style>.ft-tok{border-radius:3px;padding:1px 0;margin:0 1px}"
             ".ft-target{outline:2px solid #16a34a;outline-offset:-1px}"
             ".ft-role{font-size:0.7rem;font-weight:600;text-transform:uppercase;margin:0 6px 0 2px}</style>")
