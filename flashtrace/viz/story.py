"""Figures of the Story page's panels (`flashtrace.analysis.story`): small, labelled in words, sized for a
1280×720 projector. Every text that comes from a trace is escaped before Plotly renders it."""

from __future__ import annotations

from dataclasses import dataclass


import plotly.graph_objects as go

from ..analysis.check import Check
from ..analysis.facts import OF_PROMPT
from ..analysis.story import Panel, Ranked
from ..analysis.text import pct
from ..analysis.schema import Trace
from .colors import GOLD, PROMPT, REASONING, SUSPECT, TEMPLATE
from .export import standalone_html
from .tokens import safe_html, tokens_html

# margins leave room for tick labels; `automargin` on every axis grows them where labels are longer, so
# neither the app nor a PNG/SVG export (kaleido) cuts a label off
_LAYOUT = {"margin": {"l": 56, "r": 24, "t": 44, "b": 36}, "font": {"size": 13}}
LARGE_FONT = 17  # the presenter view's figure text (pixels)


def _escaped(text: str) -> str:
    return safe_html(text, quote=False)


def text_html(label: str, text: str, size_rem: float, max_height_px: int | None = None, strong: bool = False,
              css_class: str = "ft-text") -> str:
    """`text` as plain, escaped HTML under a small `label`: line breaks kept, long words wrapped, in a box
    that scrolls only past `max_height_px` (None: never).

    Args:
        label: The small label above the text (escaped).
        text: The text (escaped, leading and trailing whitespace stripped).
        size_rem: The text's font size in rem.
        max_height_px: The height above which the box scrolls; None (or 0): never.
        strong: Set the text in bold.
        css_class: The CSS class of the outer ``<div>``.

    Returns:
        The HTML: a ``<div>`` holding the label and the text.
    """
    scroll = f"max-height:{max_height_px}px;overflow-y:auto;" if max_height_px else ""
    weight = "font-weight:600;" if strong else ""
    return (f'<div class="{css_class}" style="margin:0 0 10px 0">'
            f'<div style="font-size:0.85rem;opacity:0.7;margin-bottom:2px">{safe_html(label)}</div>'
            f'<div class="ft-text-body" style="font-size:{size_rem}rem;line-height:1.4;white-space:pre-wrap;'
            f'overflow-wrap:anywhere;{weight}{scroll}">{safe_html(text.strip())}</div></div>')


def question_html(data: dict, large: bool = False) -> str:
    """Story step 1's question: the sentence that asks it, large (a long prompt; the whole prompt is offered
    apart), or the whole short prompt.

    Args:
        data: The question panel's data: ``question`` (the prompt), ``ask`` (its asking sentence, or empty),
            ``reasoning`` and ``answer``.
        large: Use the presenter view's larger type.

    Returns:
        The question as HTML (`text_html`).
    """
    if data["ask"]:
        return text_html("The question (its last sentence; the whole prompt is below)", data["ask"],
                         2.0 if large else 1.45, strong=True, css_class="ft-question")
    return text_html("The question (the prompt)", data["question"], 1.7 if large else 1.25, css_class="ft-question")


REASONING_LINES = {False: 6, True: 9}  # screen lines of reasoning step 1 shows, normal / presenter view (1280×720)
LINE_CHARS = {False: 62, True: 56}  # characters per screen line in step 1's reasoning column
ASKED_APART = 2  # lines fewer when step 1 shows the asking sentence with "The whole prompt" under it


def reasoning_lines(data: dict, large: bool) -> int:
    """How many screen lines of reasoning fit on step 1 under the question (1280×720).

    Args:
        data: The question panel's data; an ``ask`` (asking sentence) costs lines.
        large: For the presenter view.

    Returns:
        The number of screen lines.
    """
    return REASONING_LINES[large] - (ASKED_APART if data.get("ask") else 0)


def screen_lines(text: str, width: int) -> int:
    """How many screen lines `text` takes at `width` characters a line (its own line breaks kept).

    Args:
        text: The text (leading and trailing whitespace stripped).
        width: The characters in a screen line.

    Returns:
        The number of screen lines (0 for an empty text).
    """
    return sum(max(1, -(-len(line) // width)) for line in text.strip().splitlines())


def condensed(text: str, max_lines: int, width: int) -> tuple[str, int]:
    """`text` as it fits in `max_lines` screen lines: whole, or its first and last lines with a line in the
    middle that says how many lines it leaves out. Returns the text and how many of its lines were left out.

    Args:
        text: The text (leading and trailing whitespace stripped).
        max_lines: The most screen lines it may take.
        width: The characters in a screen line.

    Returns:
        ``(text shown, number of its lines left out)``; 0 left out when it fits whole.
    """
    lines = text.strip().splitlines()
    if screen_lines(text, width) <= max_lines:
        return text.strip(), 0
    note = "⋯ {:,} more lines: see “The whole reasoning” ⋯".format
    head, tail, used = [], [], screen_lines(note(len(lines)), width)  # the note in the middle, at its longest
    for i in range(len(lines)):  # alternate: the opening lines, then the closing ones
        line = lines[i // 2] if i % 2 == 0 else lines[-1 - i // 2]
        cost = screen_lines(line, width)
        if used + cost > max_lines or len(head) + len(tail) >= len(lines) - 1:
            break
        (head if i % 2 == 0 else tail).append(line)
        used += cost
    left = len(lines) - len(head) - len(tail)
    return "\n".join([*head, note(left), *reversed(tail)]), left


def reasoning_html(data: dict, large: bool = False, max_height_px: int | None = 480, whole: bool = False) -> str:
    """The model's reasoning in step 1: as many screen lines as fit beside the answer (`reasoning_lines`; its
    opening and closing lines, the middle counted), or `whole` (a box that scrolls past `max_height_px`; None:
    never scrolls, for an export).

    Args:
        data: The question panel's data: ``question`` (the prompt), ``ask`` (its asking sentence, or empty),
            ``reasoning`` and ``answer``.
        large: Use the presenter view's larger type (and its taller box).
        max_height_px: The height above which the box scrolls; None: never (the whole reasoning, for an export).
        whole: Show the whole reasoning rather than the lines that fit.

    Returns:
        The reasoning as HTML (`text_html`).
    """
    text = data["reasoning"] if whole or max_height_px is None else \
        condensed(data["reasoning"], reasoning_lines(data, large), LINE_CHARS[large])[0]
    box = None if max_height_px is None else 600 if large else max_height_px
    return text_html("The model's reasoning", text, 1.25 if large else 1.0, max_height_px=box,
                     css_class="ft-reasoning-whole" if whole else "ft-reasoning")


def answer_html(data: dict, large: bool = False, max_height_px: int | None = 400) -> str:
    """The answer (the text being explained), large (a long one scrolls past `max_height_px`; None: never).

    Args:
        data: The question panel's data: ``question`` (the prompt), ``ask`` (its asking sentence, or empty),
            ``reasoning`` and ``answer``.
        large: Use the presenter view's larger type.
        max_height_px: The height above which the box scrolls; None: never.

    Returns:
        The answer as HTML (`text_html`).
    """
    return text_html("The answer (the text being explained)", data["answer"], 2.0 if large else 1.45,
                     max_height_px=max_height_px, strong=True, css_class="ft-answer")


def prompt_html(data: dict, max_height_px: int | None = 320) -> str:
    """The whole prompt as plain text (a scroll box in the app; whole in an export).

    Args:
        data: The question panel's data: ``question`` (the prompt), ``ask`` (its asking sentence, or empty),
            ``reasoning`` and ``answer``.
        max_height_px: The height above which the box scrolls; None: never (an export).

    Returns:
        The prompt as HTML (`text_html`), labelled with its number of words.
    """
    return text_html(f"The whole prompt ({len(data['question'].split()):,} words)", data["question"], 0.95,
                     max_height_px=max_height_px, css_class="ft-prompt")


@dataclass(frozen=True)
class PieceRows:
    """The bars of `pieces_figure`, apart from the drawing: the pieces in order, each bar's note, how many
    trailing rows are asked questions, whether the gold piece was added below the ranking, and the key of
    the edited (suspect) sentence."""

    rows: list
    notes: list[str]
    n_asked: int
    gold_added: bool
    flagged: str | None

    @property
    def wide(self) -> bool:
        """Whether the bars need room for a longer note (an added gold, asked or suspect row)."""
        return self.gold_added or self.n_asked > 0 or self.flagged is not None


def piece_rows(pieces: list[Ranked], gold: dict | None = None, asked: list[Ranked] | None = None,
               suspect: Ranked | None = None) -> PieceRows:
    """The ranked pieces, then the gold piece when it ranks below them (noted with its rank), the suspect
    sentence when it is not among them, then the asked questions not yet shown; every gold, suspect and asked
    row noted.

    Args:
        pieces: The ranked pieces, strongest first.
        gold: The best-ranked gold piece (`analysis.story.gold_at`): ``{"piece": Ranked, "rank": ...,
            "ranked": "37th"}``; None without gold.
        asked: The asked question sentences (kept out of the ranking); None for none.
        suspect: The edited sentence of an honest failure; None for none.

    Returns:
        The bars' rows, notes and flags.
    """
    rows = list(pieces)
    gold_added = gold is not None and gold["piece"].key not in {p.key for p in pieces}
    if gold_added:
        rows.append(gold["piece"])
    if suspect is not None and suspect.key not in {p.key for p in rows}:
        rows.append(suspect)
    flagged = suspect.key if suspect is not None else None
    notes = []
    for p in rows:
        note = f" · gold, ranked {gold['ranked']}" if gold_added and p.key == gold["piece"].key else \
            " · gold" if p.piece.gold else ""
        notes.append(note + (" · the edited sentence" if p.key == flagged else ""))
    questions = [q for q in asked or [] if q.key not in {p.key for p in rows}]
    return PieceRows(rows + questions, notes + [" · asked"] * len(questions), len(questions), gold_added, flagged)


def _ring(p: Ranked, flagged: str | None) -> tuple[str, int]:
    """A bar's outline: red for the edited sentence, gold for known evidence, none otherwise."""
    if p.key == flagged:
        return SUSPECT, 3
    return (GOLD, 3) if p.piece.gold else ("rgba(0,0,0,0)", 0)


def pieces_figure(pieces: list[Ranked], title: str, view: str, gold: dict | None = None,
                  asked: list[Ranked] | None = None, suspect: Ranked | None = None,
                  share_of: str = OF_PROMPT) -> go.Figure:
    """Horizontal bars: the top prompt sentences (or tokens), labelled with their distinct short labels, and
    their shares of the prompt's attribution (or of what `share_of` names); the whole text on hover (escaped).
    Bars holding known evidence (gold) are ringed in gold and say so; when `gold` (`analysis.story.gold_at`)
    ranks below the listed pieces, it is added as a bar with its rank, so the gold shows even when it ranks low.
    `asked` (the question sentences, kept out of the ranking) come last, grey and marked "asked", with their
    shares. `suspect` (an honest failure's edited sentence) is ringed in red and marked, added when it is not
    among the pieces.

    Args:
        pieces: The ranked pieces, strongest first.
        title: The figure's title.
        view: The view's name, kept in the figure's ``layout.meta``.
        gold: The best-ranked gold piece (`analysis.story.gold_at`); None without gold.
        asked: The asked question sentences; None for none.
        suspect: The edited sentence of an honest failure; None for none.
        share_of: What the shares are a share of, e.g. ``"of that step's prompt attribution"``.

    Returns:
        The bar figure.
    """
    bars = piece_rows(pieces, gold, asked, suspect)
    rows = bars.rows
    rings = [_ring(p, bars.flagged) for p in rows]
    fig = go.Figure(go.Bar(
        y=[_escaped(p.label) for p in rows], x=[p.share for p in rows], orientation="h",
        marker_color=[PROMPT] * (len(rows) - bars.n_asked) + [TEMPLATE] * bars.n_asked,
        marker_line={"color": [c for c, _w in rings], "width": [w for _c, w in rings]},
        text=[pct(p.share) + note for p, note in zip(rows, bars.notes)], textposition="outside", cliponaxis=False,
        customdata=[_escaped(" ".join(p.text.split())[:300]) for p in rows],
        hovertemplate=f"%{{customdata}}<br>%{{x:.1%}} {share_of}<extra></extra>"))
    top = max((p.share for p in rows), default=1.0)
    # the axis title gets 24 px more below it than _LAYOUT gives: a taller fallback font (a machine without
    # Liberation or Open Sans) still fits inside a PNG/SVG export
    fig.update_layout(title={"text": title, "font": {"size": 14}}, height=94 + 44 * max(len(rows), 1),
                      xaxis={"range": [0, top * (1.6 if bars.wide else 1.35)], "tickformat": ".0%",
                             "fixedrange": True,
                             "automargin": True, "title": {"text": f"share {share_of}", "font": {"size": 12}}},
                      yaxis={"autorange": "reversed", "automargin": True, "fixedrange": True},
                      meta={"view": view, "gold": [p.key for p in rows if p.piece.gold]},
                      **{**_LAYOUT, "margin": {**_LAYOUT["margin"], "b": 60}})
    return fig


def split_figure(shares: dict[str, float]) -> go.Figure:
    """One 100 % bar: where the answer's direct (hop 0) attribution sits.

    Args:
        shares: Hop 0's shares: ``{"prompt": ..., "template": ..., "generated": ...}``.

    Returns:
        The stacked bar figure.
    """
    parts = (("prompt", "the prompt", PROMPT), ("template", "chat template", TEMPLATE),
             ("generated", "its own reasoning and answer", REASONING))
    fig = go.Figure()
    for key, name, color in parts:
        fig.add_trace(go.Bar(y=["hop 0"], x=[shares[key]], name=name, orientation="h", marker_color=color,
                             text=[pct(shares[key])] if shares[key] >= 0.06 else [""], textposition="inside",
                             hovertemplate=f"{name}: %{{x:.1%}}<extra></extra>"))
    fig.update_layout(barmode="stack", height=170,
                      title={"text": "Where the answer looks directly", "font": {"size": 14}},
                      xaxis={"range": [0, 1], "tickformat": ".0%", "fixedrange": True, "automargin": True},
                      yaxis={"visible": False, "fixedrange": True},
                      legend={"orientation": "h", "y": -0.35, "x": 0, "traceorder": "normal"},
                      meta={"view": "story_direct"}, **_LAYOUT)
    return fig


def reach_figure(panel: Panel) -> go.Figure:
    """Per depth K (hops 0..K): the share of the answer's attribution that has reached the input, and the
    share still on the reasoning (ρ_K).

    Args:
        panel: The ``hops`` panel; its data's ``reached`` holds the share reached per depth.

    Returns:
        The stacked bar figure, one bar per depth.
    """
    reach = panel.data["reached"]
    labels = ["directly (hop 0)"] + [f"after {k} hop{'s' if k > 1 else ''}" for k in range(1, len(reach))]
    fig = go.Figure([
        go.Bar(x=labels, y=reach, name="reached the input", marker_color=PROMPT, text=[pct(r) for r in reach],
               textposition="inside", hovertemplate="%{x}: %{y:.1%} reached the input<extra></extra>"),
        go.Bar(x=labels, y=[1 - r for r in reach], name="still on the model's own text", marker_color=REASONING,
               hovertemplate="%{x}: %{y:.1%} still on the model's own text<extra></extra>"),
    ])
    fig.update_layout(barmode="stack", height=300, title={"text": "How much of the answer's attribution has reached "
                                                          "the input", "font": {"size": 14}},
                      yaxis={"range": [0, 1], "tickformat": ".0%", "fixedrange": True, "automargin": True},
                      xaxis={"fixedrange": True, "automargin": True},
                      legend={"orientation": "h", "y": -0.2, "x": 0, "traceorder": "normal"},
                      meta={"view": "story_hops"}, **_LAYOUT)
    return fig


def check_figure(check: Check) -> go.Figure:
    """Answer log-probability: nothing deleted, the top tokens deleted, random tokens deleted (bar: mean of
    the draws, dots: each draw, so their spread shows). Values are written under each bar's name.

    Args:
        check: The trace's stored deletion check.

    Returns:
        The bar figure, the random draws as dots.
    """
    share = pct(check.fraction)
    random_mean = check.before - check.drop_random_mean
    values = (check.before, check.top, random_mean)
    names = ("nothing deleted", f"top {share} deleted", f"random {share} deleted (mean of {len(check.randoms)})")
    labels = [f"{name}<br><b>{value:.2f}</b>" for name, value in zip(names, values)]
    fig = go.Figure(go.Bar(x=labels, y=list(values), marker_color=[TEMPLATE, PROMPT, REASONING], showlegend=False,
                           hovertemplate="%{x}: %{y:.3f}<extra></extra>"))
    fig.add_trace(go.Scatter(x=[labels[2]] * len(check.randoms), y=list(check.randoms), mode="markers",
                             marker={"color": "#1f2937", "size": 7}, name="each random draw",
                             hovertemplate="one random draw: %{y:.3f}<extra></extra>"))
    low = min(min(values), min(check.randoms), 0.0)
    fig.update_layout(height=300, title={"text": "Answer log-probability (0 = certain; lower = less likely)",
                                         "font": {"size": 14}},
                      yaxis={"range": [low * 1.1 - 0.1, 0.1], "fixedrange": True, "automargin": True},
                      xaxis={"fixedrange": True, "automargin": True},
                      legend={"orientation": "h", "y": 1.0, "x": 1.0, "xanchor": "right", "yanchor": "bottom"},
                      meta={"view": "story_check"}, **_LAYOUT)
    return fig


def evidence_html(trace: Trace, max_height_px: int | None = 300) -> str:
    """The prompt's text with each token's background set by its final attribution (escaped).

    Args:
        trace: The trace shown.
        max_height_px: The height above which the text scrolls; None: never.

    Returns:
        The HTML (`tokens_html`); the whole text when the trace has no prompt span.
    """
    span = trace.spans.prompt
    return tokens_html(trace, None, max_height_px=max_height_px, token_range=tuple(span) if span else None)


def sentences_html(trace: Trace, pieces: list[Ranked]) -> str:
    """Each top prompt sentence on its own line, its tokens coloured by their final attribution, with its
    share (escaped). Pieces that are not segments (a trace without segments) are skipped.

    Args:
        trace: The trace shown.
        pieces: The ranked pieces, strongest first.

    Returns:
        The HTML, one ``<div>`` per sentence with its rank and share; empty when no piece is a segment.
    """
    by_id = {seg.id: seg for seg in trace.segments or []}
    rows = []
    for rank, piece in enumerate(pieces, start=1):
        seg = by_id.get(piece.key)
        if seg is None:
            continue
        text = tokens_html(trace, None, max_height_px=None, token_range=(seg.start, seg.end))
        rows.append(f'<div style="display:flex;gap:12px;align-items:baseline;margin:6px 0">'
                    f'<b style="min-width:4.5em">{rank}. {safe_html(pct(piece.share))}</b>'
                    f'<div style="flex:1">{text}</div></div>')
    return "".join(rows)


def panel_figures(trace: Trace, panel: Panel, large: bool = False) -> list[go.Figure]:
    """The figures a panel shows, in order (the question panel has none); `large`: the presenter view's
    larger type (and height to match).

    Args:
        trace: The trace told.
        panel: The Story panel.
        large: Use the presenter view's larger type and height.

    Returns:
        The panel's figures; empty for a panel without any.
    """
    figs = _figures(trace, panel)
    if large:  # sizes set on each part: the app's chart theme would otherwise keep its own small ticks
        for fig in figs:
            fig.update_layout(font={"size": LARGE_FONT}, title_font_size=LARGE_FONT + 2, legend_font_size=LARGE_FONT,
                              height=round(fig.layout.height * 1.15))
            fig.update_xaxes(tickfont_size=LARGE_FONT - 1, title_font_size=LARGE_FONT - 1)
            fig.update_yaxes(tickfont_size=LARGE_FONT - 1)
            fig.update_traces(textfont_size=LARGE_FONT)
    return figs


def _figures(trace: Trace, panel: Panel) -> list[go.Figure]:
    if panel.key == "direct":
        figs = [split_figure(panel.data["shares"])]
        if panel.data["sentences"]:
            figs.append(pieces_figure(panel.data["sentences"], "Prompt sentences the answer reads most (hop 0)",
                                      "story_direct_sentences", panel.data["gold"]))
        return figs
    if panel.key == "hops":
        return [reach_figure(panel)] if len(panel.data["reached"]) > 0 else []
    if panel.key == "evidence" and panel.data["sentences"]:
        asked = panel.data.get("asked") or []
        title = ("Context sentences with the most attribution after all hops; the question apart" if asked else
                 "Prompt sentences with the most attribution after all hops")
        return [pieces_figure(panel.data["sentences"], title, "story_evidence", panel.data["gold"], asked)]
    if panel.key == "failure" and panel.data["sentences"]:
        return [pieces_figure(panel.data["sentences"], "What the step where it went wrong reads in the context",
                              "story_failure", asked=panel.data["asked"], suspect=panel.data["suspect"],
                              share_of="of that step's prompt attribution")]
    if panel.key == "check" and panel.data["check"] is not None:
        return [check_figure(panel.data["check"])]
    return []


def panel_blocks(trace: Trace, panel: Panel) -> list[go.Figure | str]:
    """What one panel shows, for an HTML export: its text (escaped) and its figures, in the page's order
    (the whole prompt and the reasoning unboxed).

    Args:
        trace: The trace told.
        panel: The Story panel.

    Returns:
        Figures and escaped HTML strings, in order (`standalone_html`'s blocks).
    """
    data = panel.data
    if panel.key == "question":
        return [question_html(data), prompt_html(data, None) if data["ask"] else "",
                reasoning_html(data, max_height_px=None) if data["reasoning"] else "",
                answer_html(data, max_height_px=None)]
    blocks: list[go.Figure | str] = list(panel_figures(trace, panel))
    if panel.key == "evidence" and data["sentences"]:
        blocks += [sentences_html(trace, data["sentences"]), "<h3>The whole prompt, highlighted</h3>",
                   evidence_html(trace, max_height_px=None)]
    return blocks


_SECTION_CSS = ("<style>.ft-step{border-top:1px solid #d1d5db;padding-top:8px;margin-top:28px}"
                "@media print{.ft-step{break-before:page}}</style>")


def story_document(trace: Trace, panels: list[Panel], title: str) -> str:
    """The whole Story of `trace` (`panels`, in order) as one offline HTML page for sending after a meeting:
    a contents list (in-page links), then each step's title, caption, text and interactive figures. Every
    text from the trace is escaped; nothing is fetched (`standalone_html`).

    Args:
        trace: The trace told.
        panels: The Story's panels, in order.
        title: The page's title.

    Returns:
        The whole HTML page.
    """
    contents = "".join(f'<li><a href="#step-{n}">{safe_html(p.title)}</a></li>' for n, p in enumerate(panels, 1))
    blocks: list[go.Figure | str] = [_SECTION_CSS, f"<ol>{contents}</ol>"]
    for n, panel in enumerate(panels, 1):
        blocks.append(f'<section class="ft-step" id="step-{n}"><h2>{n}. {safe_html(panel.title)}</h2>'
                      f'<p class="ft-caption">{safe_html(panel.caption)}</p>')
        blocks += panel_blocks(trace, panel)
        blocks.append("</section>")
    intro = (f"A trace of {trace.model.name} explained in {len(panels)} steps: what its answer rests on and what "
             "its reasoning passed on. Hover the charts for values.")
    return standalone_html(title, blocks, intro)


__all__ = ["pieces_figure", "split_figure", "reach_figure", "check_figure", "evidence_html", "sentences_html",
           "panel_figures", "text_html", "question_html", "reasoning_html", "condensed", "screen_lines", "reasoning_lines", "answer_html", "prompt_html", "LARGE_FONT",
           "panel_blocks", "story_document"]
