"""Token-level data shared by the views: the values a view shows, the tops of its colour scales (target
tokens left out; one scale shared across hops if asked), which tokens are salient (what stays unfolded),
visible-whitespace labels, the grid layout of the heatmap, and the flowing, escaped HTML rendering of a
trace's text with its colour legend."""

from __future__ import annotations

import html

from ..analysis.facts import analyse
from ..analysis.schema import Trace
from ..analysis.views import step_values, target_positions, view_values  # noqa: F401 - re-exported
from .colors import GOLD, ROLE_COLORS, TARGET_OUTLINE, chip_color, chip_gradient

VISIBLE = {" ": "·", "\n": "↵", "\t": "→", "\r": "␍"}
# bidirectional controls (LRE..RLO, LRI..PDI, LRM/RLM/ALM) would reorder the tokens shown after them
_BIDI = {chr(c): f"⟨U+{c:04X}⟩" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)}
_BIDI_TABLE = str.maketrans(_BIDI)


def show_controls(text: str) -> str:
    """`text` with bidirectional control characters written out (``⟨U+202E⟩``) instead of applied.

    Args:
        text: Any text.

    Returns:
        `text` with each bidirectional control replaced by its written-out name.
    """
    return text.translate(_BIDI_TABLE)


def safe_html(text: object, quote: bool = True) -> str:
    """`text` for HTML: escaped, with bidirectional controls written out (``⟨U+202E⟩``), so no text from a user,
    a trace or a file is read as markup or reorders what follows it. Every view and export shows text through
    it (or `plotly_text`).

    Args:
        text: The text, or any object (shown as its ``str``).
        quote: Whether quotes are escaped too (``&quot;``, ``&#x27;``), as inside an attribute value.

    Returns:
        The escaped text, safe inside HTML.
    """
    return html.escape(show_controls(str(text)), quote=quote)


def plotly_text(text: str) -> str:
    """`text` for a Plotly label: ``&``, ``<`` and ``>`` escaped (Plotly reads a small HTML subset and
    decodes those three), quotes left alone (Plotly would show ``&quot;`` literally), bidirectional controls
    written out.

    Args:
        text: The label text.

    Returns:
        The text, safe as a Plotly label.
    """
    return safe_html(text, quote=False)


def template_text(text: str) -> str:
    """`plotly_text` for literal text inside a Plotly hover template: ``%{`` (which would start a placeholder)
    gets an invisible word joiner between its two characters.

    Args:
        text: The literal text.

    Returns:
        The text, safe inside a Plotly hover template.
    """
    return plotly_text(text).replace("%{", "%\u2060{")


def token_class(role: str) -> str:
    """Colour class of a role: ``prompt``, ``generated`` (reasoning or answer) or ``template``.

    Args:
        role: A token role: ``"prompt"``, ``"template"``, ``"reasoning"`` or ``"answer"``.

    Returns:
        ``"generated"`` for reasoning and answer, else `role` itself.
    """
    return "generated" if role in ("reasoning", "answer") else role


def class_maxima(trace: Trace, values: list[float], skip: range | set[int] = range(0)) -> dict[str, float]:
    """Largest value per colour class (the top of that class's colour scale), positions in `skip` left out.

    Args:
        trace: The trace whose token roles give each position's class.
        values: One value per position of `trace`.
        skip: Positions left out (e.g. the target tokens).

    Returns:
        ``{"prompt": top, "generated": top, "template": top}``; 0.0 for a class with no positive value.
    """
    top = {"prompt": 0.0, "generated": 0.0, "template": 0.0}
    for i, (tok, v) in enumerate(zip(trace.tokens, values)):
        if i in skip:
            continue
        cls = token_class(tok.role)
        top[cls] = max(top[cls], v)
    return top


def shared_maxima(trace: Trace) -> dict[str, float]:
    """Tops of one colour scale shared by every hop view: per class, the largest hop-mass share any hop
    puts on a non-target token, so the same colour means the same share in hop 0 and hop K.

    Args:
        trace: The trace whose hops are compared.

    Returns:
        ``{"prompt": top, "generated": top, "template": top}`` over all hops.
    """
    tops = [class_maxima(trace, view_values(trace, h.k), target_positions(trace)) for h in trace.hops]
    return {cls: max((t[cls] for t in tops), default=0.0) for cls in ("prompt", "generated", "template")}


def scale_maxima(trace: Trace, hop: int | None = None, shared: bool = False,
                 values: list[float] | None = None) -> dict[str, float]:
    """The colour-scale tops a view uses: the view's own maxima over non-target tokens, or for a hop view
    with `shared`, `shared_maxima` (the combined view is normalised differently and keeps its own).

    Args:
        trace: The trace shown.
        hop: The hop whose view is shown, or None for the combined view.
        shared: For a hop view, use one scale shared by every hop (`shared_maxima`).
        values: The values shown instead of the view's own; their own maxima are used then (`shared` is
            ignored).

    Returns:
        ``{"prompt": top, "generated": top, "template": top}``.

    Raises:
        InputError: When `hop` is not a hop of the trace (from `view_values`).
    """
    if shared and hop is not None and values is None:
        return shared_maxima(trace)
    return class_maxima(trace, view_values(trace, hop) if values is None else values, target_positions(trace))


def salient_positions(trace: Trace, values: list[float], positions: list[int], k: int = 10,
                      share: float = 0.3) -> set[int]:
    """Tokens worth showing in a folded view: per colour class among `positions` (target tokens left out),
    the `k` highest non-zero values and every value at least `share` of that class's highest.

    Args:
        trace: The trace shown.
        values: One value per position of `trace`.
        positions: The positions to choose from.
        k: How many of the highest non-zero values per class are kept.
        share: Every value at least this fraction of its class's highest is kept too.

    Returns:
        The salient positions (none of a class whose highest value is not positive).
    """
    target = target_positions(trace)
    by_class: dict[str, list[int]] = {}
    for i in positions:
        if i not in target:
            by_class.setdefault(token_class(trace.tokens[i].role), []).append(i)
    keep: set[int] = set()
    for members in by_class.values():
        ranked = sorted(members, key=lambda i: -values[i])
        top = values[ranked[0]]
        if top <= 0:
            continue
        keep.update(i for i in ranked[:k] if values[i] > 0)
        keep.update(i for i in members if values[i] >= share * top)
    return keep


def fold_runs(units: list[tuple[int, int]], keep: set[int] | range, min_tokens: int = 8
              ) -> list[tuple[int, int, bool]]:
    """Token ranges `units` (in order) as ``(start, end, shown)`` runs: a unit holding a position in `keep`
    is shown; neighbouring units without one merge into one folded run, unless it is shorter than
    `min_tokens` (then it is shown: folding it would save nothing).

    Args:
        units: Token ranges ``(start, end)``, end exclusive, in text order.
        keep: The positions that keep their unit shown.
        min_tokens: The fewest tokens a folded run holds; a shorter one is shown.

    Returns:
        ``(start, end, shown)`` runs covering `units`, in order.
    """
    runs: list[tuple[int, int, bool]] = []
    for lo, hi in units:
        shown = any(i in keep for i in range(lo, hi))
        if runs and not shown and not runs[-1][2]:
            runs[-1] = (runs[-1][0], hi, False)
        else:
            runs.append((lo, hi, shown))
    return [(lo, hi, shown or hi - lo < min_tokens) for lo, hi, shown in runs]


def visible_label(text: str, max_chars: int | None = 10) -> str:
    """Token text with whitespace and bidirectional controls made visible (· ↵ → ⟨U+202E⟩) and long tokens
    shortened; not escaped.

    Args:
        text: The token's text.
        max_chars: The longest label; a longer one is cut and ends in ``…``. None (or 0) keeps it whole.

    Returns:
        The label, ``∅`` for an empty token.
    """
    text = show_controls(text)
    label = "".join(VISIBLE.get(ch, ch) for ch in text) if not text.strip() else \
        text.replace("\n", "↵").replace("\t", "→").replace("\r", "␍")
    if max_chars and len(label) > max_chars:
        label = label[: max_chars - 1] + "…"
    return label or "∅"


def token_grid(trace: Trace, width: int = 20, token_range: tuple[int, int] | None = None) -> list[tuple[int, int]]:
    """``(row, column)`` of every token (or of the tokens in `token_range`, rows counted from 0): rows hold
    at most `width` tokens and break after a newline and where the role changes, so prompt, template,
    reasoning and answer start on fresh rows.

    Args:
        trace: The trace laid out.
        width: The most tokens in a row.
        token_range: Only the tokens ``[start, end)``; None for all.

    Returns:
        ``(row, column)`` per token, in token order.
    """
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


def text_units(trace: Trace, lo: int, hi: int) -> list[tuple[int, int]]:
    """What the text view folds whole: the trace's segments (sentences, steps, answer) clipped to
    ``[lo, hi)``, or rows of 16 tokens for a trace without segments.

    Args:
        trace: The trace shown.
        lo: The first position shown.
        hi: The position after the last one shown.

    Returns:
        Token ranges ``(start, end)``, end exclusive, in text order.
    """
    if trace.segments:
        return [(max(s.start, lo), min(s.end, hi)) for s in trace.segments if s.end > lo and s.start < hi]
    rows: dict[int, list[int]] = {}
    for i, (r, _c) in enumerate(token_grid(trace, 16, (lo, hi)), start=lo):
        rows.setdefault(r, []).append(i)
    return [(ps[0], ps[-1] + 1) for ps in rows.values()]


def _token_span(trace: Trace, i: int, value: float, top: dict[str, float], target: range, gold: set[int]) -> str:
    tok = trace.tokens[i]
    cls = token_class(tok.role)
    shown = visible_label(tok.text, None) if not tok.text.strip() else show_controls(tok.text).replace("\n", "↵")
    title = (f"#{i} {tok.role}{' (target, not on the colour scale)' if i in target else ''}"
             f"{' (known evidence)' if i in gold else ''}: {show_controls(repr(tok.text))} score {value:.4g}")
    if i in target:
        cls_attr, style = "ft-tok ft-target", ""
    else:
        cls_attr = "ft-tok ft-gold" if i in gold else "ft-tok"
        style = f' style="background:{chip_color(cls, value / top[cls] if top[cls] > 0 else 0.0)}"'
    return (f'<span class="{cls_attr}"{style} title="{safe_html(title, quote=True)}">{safe_html(shown)}</span>'
            + ("<br>" if "\n" in tok.text else ""))


def legend_html(top: dict[str, float], classes: list[str], note: str = "", gold: bool = False) -> str:
    """The text view's colour legend: one gradient per class from 0 to its scale top, the target's
    outline, the gold underline when the trace knows its evidence, and a `note` on the scale (escaped).

    Args:
        top: The scale top per colour class (as from `scale_maxima`); a class with none above 0 gets no gradient.
        classes: The colour classes shown, in order.
        note: A note on the scale (escaped); empty for none.
        gold: Whether to explain the gold underline (the trace knows its evidence).

    Returns:
        The legend, a ``<div class="ft-legend">``.
    """
    names = {"prompt": "prompt", "generated": "reasoning + answer", "template": "chat template"}
    items = [f'<span class="ft-key">{names[c]} 0 <span class="ft-bar" style="background:{chip_gradient(c)}"></span> '
             f'{top[c]:.3g}</span>' for c in classes if top.get(c, 0) > 0]
    items.append('<span class="ft-key"><span class="ft-sample ft-target">target</span> outlined, not on the scale</span>')
    if gold:
        items.append('<span class="ft-key"><span class="ft-sample ft-gold">gold</span> underlined: the known evidence</span>')
    if note:
        items.append(f'<span class="ft-key ft-note">{safe_html(note)}</span>')
    return f'<div class="ft-legend">{"".join(items)}</div>'


def tokens_html(trace: Trace, hop: int | None = None, max_height_px: int | None = 480,
                token_range: tuple[int, int] | None = None, values: list[float] | None = None,
                top: dict[str, float] | None = None, keep: set[int] | None = None, legend: str | None = None) -> str:
    """The trace's text (or the tokens in `token_range`) as flowing HTML, each token's background
    coloured by the view's value (or by `values`) on its class's scale (tops `top`, by default
    `scale_maxima`): blue prompt, orange reasoning/answer, grey template. Target tokens are outlined and
    left out of the scale. With `keep`, segments holding none of those positions fold into a closed
    ``<details>`` (click to open); with `legend` (a note on the scale), a colour legend comes first.
    Every piece of text is escaped.

    Args:
        trace: The trace shown.
        hop: The hop whose view colours the tokens, or None for the combined view.
        max_height_px: The height above which the text scrolls; None (or 0) for no limit.
        token_range: Only the tokens ``[start, end)``; None for all.
        values: The values shown instead of the view's (one per position).
        top: The scale top per colour class; None for `scale_maxima` of the values shown.
        keep: The positions that keep their segment shown (target tokens always do); None folds nothing.
        legend: The note on the scale of a colour legend put first; None for no legend.

    Returns:
        The HTML: the tokens' CSS, the legend if asked, and the text in a ``<div class="ft-tokens">``.

    Raises:
        InputError: When `hop` is not a hop of the trace (from `view_values`).
    """
    values = view_values(trace, hop) if values is None else values
    top = scale_maxima(trace, values=values) if top is None else top
    target = target_positions(trace)
    gold = set(analyse(trace).gold.positions) if analyse(trace).gold else set()
    first, last = token_range or (0, trace.n_tokens)
    units = [(first, last)] if keep is None else text_units(trace, first, last)
    runs = [(first, last, True)] if keep is None else fold_runs(units, set(keep) | set(target))
    parts, prev_role = [], None
    for lo, hi, shown in runs:
        body = []
        for i in range(lo, hi):
            tok = trace.tokens[i]
            if tok.role != prev_role:
                body.append(f'<span class="ft-role" style="color:{ROLE_COLORS[tok.role]}">{tok.role}</span>')
                prev_role = tok.role
            body.append(_token_span(trace, i, values[i], top, target, gold))
        if shown:
            parts.extend(body)
        else:
            parts.append(f'<details class="ft-fold"><summary title="tokens #{lo}–#{hi - 1}: no salient token; click '
                         f'to show them">⋯ {hi - lo} tokens folded</summary>{"".join(body)}</details>')
            prev_role = None  # the next shown token names its role again
    classes = sorted({token_class(trace.tokens[i].role) for i in range(first, last)},
                     key=["prompt", "generated", "template"].index)
    shows_gold = any(first <= g < last for g in gold)
    head = legend_html(top, classes, legend, shows_gold) if legend is not None else ""
    scroll = f"max-height:{max_height_px}px;overflow-y:auto;" if max_height_px else ""
    return (f'{TOKEN_CSS}{head}<div class="ft-tokens" style="{scroll}line-height:1.9;font-family:ui-monospace,monospace;'
            f'font-size:0.85rem;white-space:pre-wrap;word-break:break-word">{"".join(parts)}</div>')


TOKEN_CSS = ("<style>.ft-tok{border-radius:3px;padding:1px 0;margin:0 1px}"
             f".ft-target{{outline:2px solid {TARGET_OUTLINE};outline-offset:-1px}}"
             f".ft-gold{{text-decoration:underline 3px {GOLD};text-underline-offset:3px}}"
             ".ft-role{font-size:0.7rem;font-weight:600;text-transform:uppercase;margin:0 6px 0 2px}"
             ".ft-fold{display:inline;opacity:0.85}.ft-fold[open]{display:block}"
             ".ft-fold summary{display:inline;cursor:pointer;font-size:0.75rem;padding:0 4px;border-radius:3px;"
             "border:1px dashed rgba(128,128,128,0.6);list-style:none}"
             ".ft-legend{display:flex;flex-wrap:wrap;gap:4px 18px;font-size:0.8rem;margin:0 0 6px 0;align-items:center}"
             ".ft-key{display:inline-flex;align-items:center;gap:6px}.ft-sample{border-radius:3px;padding:0 2px}.ft-note{opacity:0.75}"
             ".ft-bar{display:inline-block;width:90px;height:12px;border-radius:2px;"
             "border:1px solid rgba(128,128,128,0.35)}</style>")
