"""An edited trace against its original (torch-free): which tokens line up, how each aligned token's
attribution changed, and what the edit did to the answer.

Tokens are aligned where the text is unchanged: the two token sequences are matched as (part, text) pairs,
part being the prompt side (prompt and template tokens) or the response side (reasoning and answer), by
the longest common runs (`difflib.SequenceMatcher`, no junk heuristic). Target tokens are left out on
both sides: they are what each attribution explains, never a cause. An aligned token's *difference* is
its share of the prompt's attribution in the edited trace minus its share in the original (the combined
view, `view_values(trace)`, both summing to 1 over their prompt); tokens the edit removed or inserted
have none.

Claims need a margin. The answer's log-probability rose or fell only by more than `LOGPROB_MARGIN` nats;
otherwise the edit left it about the same (a tie). An aligned token gained or lost attribution only by
more than `MARGIN` (2 points of the prompt's attribution); otherwise the attribution of the unchanged text
is called unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher

from .facts import LABEL_CHARS, MARGIN, OF_PROMPT, analyse
from .interventions import LOGPROB_MARGIN
from .schema import Trace
from .text import distinct_labels, short_text
from .views import span_text, target_positions, view_values

ANSWER_CHARS = 160  # a new answer quoted in a sentence is cut to this (the page shows it whole)
_PART = {"prompt": "prompt", "template": "prompt", "reasoning": "response", "answer": "response"}


@dataclass(frozen=True)
class Alignment:
    """Token positions matched between an original trace and its edited version (target tokens left out)."""

    pairs: tuple[tuple[int, int], ...]  # (original position, edited position), in order
    removed: tuple[int, ...]  # original positions with no partner (cut or changed by the edit)
    inserted: tuple[int, ...]  # edited positions with no partner (new text)


@dataclass(frozen=True)
class AttributionDiff:
    """Per edited-trace token: its share of the prompt's attribution minus its aligned token's share in the
    original (None where it has no partner or is a target token)."""

    alignment: Alignment
    values: tuple[float | None, ...]
    top: float  # the largest |difference| (0 when none): the colour scale's half-range
    largest_rise: tuple[int, float] | None  # (edited position, difference) beyond MARGIN, else None
    largest_fall: tuple[int, float] | None
    sentence: str


@dataclass(frozen=True)
class EditOutcome:
    """What the edit did to the answer: the original answer's log-probability before and after
    (teacher-forced, nats), and the answer the model now writes."""

    before: float
    after: float
    change: float  # after - before
    verdict: str  # higher | lower | tie
    old_answer: str
    new_answer: str | None
    same_answer: bool | None  # None when no new answer was generated
    sentence: str


def _keys(trace: Trace, skip: range) -> tuple[list[int], list[tuple[str, str]]]:
    positions = [i for i in range(trace.n_tokens) if i not in skip]
    return positions, [(_PART.get(trace.tokens[i].role, "prompt"), trace.tokens[i].text) for i in positions]


def align_tokens(original: Trace, edited: Trace) -> Alignment:
    """Pair the tokens whose text (and side: prompt or response) the edit left unchanged.

    Args:
        original: The trace before the edit.
        edited: The trace of the edited prompt or reasoning.

    Returns:
        The aligned position pairs, the original positions the edit removed or changed and the edited positions it
            inserted (target tokens left out on both sides).
    """
    a_pos, a_keys = _keys(original, target_positions(original))
    b_pos, b_keys = _keys(edited, target_positions(edited))
    matcher = SequenceMatcher(None, a_keys, b_keys, autojunk=False)
    pairs = [(a_pos[block.a + k], b_pos[block.b + k]) for block in matcher.get_matching_blocks()
             for k in range(block.size)]
    paired_a, paired_b = {a for a, _ in pairs}, {b for _, b in pairs}
    return Alignment(tuple(pairs), tuple(p for p in a_pos if p not in paired_a),
                     tuple(p for p in b_pos if p not in paired_b))


def attribution_diff(original: Trace, edited: Trace) -> AttributionDiff:
    """The edited trace's combined attribution against the original's, token by aligned token.

    Args:
        original: The trace before the edit.
        edited: The trace of the edited prompt or reasoning.

    Returns:
        The difference per edited-trace token (None where it has no partner), the colour scale's half-range, the
            largest rise and fall beyond `MARGIN`, and a sentence about them.
    """
    alignment = align_tokens(original, edited)
    before, after = view_values(original), view_values(edited)
    values: list[float | None] = [None] * edited.n_tokens
    for a, b in alignment.pairs:
        values[b] = after[b] - before[a]
    known = [(i, v) for i, v in enumerate(values) if v is not None]
    top = max((abs(v) for _, v in known), default=0.0)
    rise = max(known, key=lambda iv: iv[1], default=None)
    fall = min(known, key=lambda iv: iv[1], default=None)
    rise = rise if rise is not None and rise[1] > MARGIN else None
    fall = fall if fall is not None and fall[1] < -MARGIN else None
    return AttributionDiff(alignment, tuple(values), top, rise, fall, _diff_sentence(edited, alignment, rise, fall))


def _token(trace: Trace, pos: int) -> str:
    return trace.tokens[pos].text.strip() or repr(trace.tokens[pos].text)


def _diff_sentence(edited: Trace, alignment: Alignment, rise, fall) -> str:
    head = (f"{len(alignment.pairs):,} tokens line up with the original; {len(alignment.removed):,} were removed "
            f"or changed and {len(alignment.inserted):,} are new (the answers left out).")
    if rise is None and fall is None:
        return (f"{head} No unchanged token's share moved by more than {MARGIN:.0%} {OF_PROMPT}: the attribution "
                "of the unchanged text is about the same.")
    parts = [f"\u201c{_token(edited, pos)}\u201d {verb} {abs(d):.1%} {OF_PROMPT}"
             for verb, found in (("gains", rise), ("loses", fall)) if found is not None for pos, d in [found]]
    return f"{head} Largest shifts beyond the {MARGIN:.0%} margin: " + "; ".join(parts) + "."


def answer_text(trace: Trace) -> str:
    """The text of the trace's target span (the answer by default), trimmed.

    Args:
        trace: The recording to read the target span of.

    Returns:
        The target span's text, trimmed.
    """
    return span_text(trace, trace.settings.target)


def _answer_words(old: str, new: str | None, same: bool | None) -> str:
    if new is None:
        return ""
    if not new.strip():
        return " The model now writes nothing."
    if same:
        return f" The model still answers \u201c{old}\u201d."
    return f" The model now answers \u201c{short_text(new, ANSWER_CHARS)}\u201d instead of \u201c{old}\u201d."


def edit_outcome(before: float, after: float, old_answer: str, new_answer: str | None = None) -> EditOutcome:
    """The verdict on an edit: the original answer's log-probability `before` and `after` it (nats), and
    whether the answer the model now writes (`new_answer`, when generated) still contains the old one.

    Args:
        before: The original answer's log-probability before the edit (teacher-forced, nats).
        after: The original answer's log-probability after the edit (teacher-forced, nats).
        old_answer: The original answer's text.
        new_answer: The answer the model now writes, when generated (None: not generated).

    Returns:
        The change, its verdict (``higher``, ``lower`` or ``tie`` within `LOGPROB_MARGIN`), whether the new answer
            still contains the old one (None when no new answer was generated) and a sentence saying so.
    """
    change = after - before
    verdict = "higher" if change > LOGPROB_MARGIN else "lower" if change < -LOGPROB_MARGIN else "tie"
    words = {"higher": f"rises by {change:.2f} nats: the edit makes the original answer more likely",
             "lower": f"falls by {-change:.2f} nats: the edit makes the original answer less likely",
             "tie": f"changes by {change:+.2f} nats, within the {LOGPROB_MARGIN:g}-nat margin: a tie, about as "
                    "likely as before"}[verdict]
    same = None if new_answer is None else bool(old_answer) and old_answer in new_answer
    sentence = (f"The original answer's log-probability (teacher-forced) {words}."
                + _answer_words(old_answer, new_answer, same))
    return EditOutcome(before, after, change, verdict, old_answer, new_answer, same, sentence)


def editable(trace: Trace) -> dict[str, str]:
    """``{segment id: short label}`` of what an edit may remove or replace: the prompt sentences and the
    reasoning steps that do not overlap the target, in text order.

    Args:
        trace: The recording whose segments may be edited.

    Returns:
        ``{segment id: short label}``, in text order (empty when the trace has no segments).
    """
    lo, hi = trace.settings.target
    segments = [s for s in trace.segments or [] if s.role in ("prompt", "reasoning") and (s.end <= lo or s.start >= hi)]
    return dict(zip([s.id for s in segments], distinct_labels([s.text for s in segments], LABEL_CHARS)))


def default_edit(trace: Trace) -> str | None:
    """What an edit picks first: the top sentence of the evidence ranking, when it can be edited.

    Args:
        trace: The recording to pick an edit in.

    Returns:
        The segment id of the top evidence sentence, or None when there is none or it cannot be edited.
    """
    evidence = analyse(trace).evidence(1)
    key = evidence[0][0].key if evidence else None
    return key if key in editable(trace) else None


__all__ = ["editable", "default_edit", "Alignment", "AttributionDiff", "EditOutcome", "align_tokens", "attribution_diff", "answer_text",
           "edit_outcome"]
