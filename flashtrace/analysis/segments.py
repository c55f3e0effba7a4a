"""Split a token sequence into segments: prompt sentences/lines, reasoning steps, the answer.

Segments are contiguous token ranges that tile the sequence exactly (no gaps, no overlaps) and never
mix roles: chat-template tokens, prompt, reasoning and answer are always apart. Within a role, a
small *splitter* strategy proposes where pieces of text begin (character positions); each token is
then assigned to the piece holding its first non-space character, so leading spaces travel with the
word they precede and whitespace-only tokens stay with the text before them.

Defaults: the prompt by lines and sentences; reasoning by numbered or bulleted steps, else lines,
else sentences; template runs and the answer whole. The user may instead give explicit boundaries
(token positions where a segment starts).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, Sequence as Seq

from ..engine.inputs import TokenSequence
from ..base.errors import InputError

if TYPE_CHECKING:
    from .schema import SegmentRecord, Trace


@dataclass(frozen=True)
class Segment:
    """One segment: tokens ``[start, end)``; characters ``[char_start, char_end)`` of its source text."""

    id: str  # "T0", "P3", "S12", "A": role letter + index within the role
    role: str  # template | prompt | reasoning | answer
    text: str
    start: int
    end: int
    order: int  # position of the segment in the sequence (0, 1, 2, ...)
    char_start: int | None = None
    char_end: int | None = None

    @property
    def n_tokens(self) -> int:
        """The number of tokens in the segment."""
        return self.end - self.start


class Splitter(Protocol):
    """A segmentation rule: where pieces of ``text[lo:hi]`` begin (their first non-space character)."""

    def starts(self, text: str, lo: int, hi: int) -> list[int] | None:
        """Sorted start positions in ``[lo, hi)``, or None when the rule does not apply to this text.

        Args:
            text: The whole source text (the prompt or the response) the positions index into.
            lo: The first character of the range to split.
            hi: The end of the range to split (exclusive).

        Returns:
            The character positions in ``[lo, hi)`` where pieces begin (each its first non-space character),
                sorted, or None when the rule does not apply.
        """


def _first_non_space(text: str, lo: int, hi: int) -> int | None:
    for i in range(lo, hi):
        if not text[i].isspace():
            return i
    return None


def _lines(text: str, lo: int, hi: int) -> list[tuple[int, int]]:
    """``(start, end)`` of each line of ``text[lo:hi]`` (newline excluded)."""
    out, start = [], lo
    while start <= hi:
        nl = text.find("\n", start, hi)
        end = hi if nl < 0 else nl
        out.append((start, end))
        if nl < 0:
            break
        start = nl + 1
    return out


class WholeSplitter:
    """The whole text is one piece."""

    def starts(self, text: str, lo: int, hi: int) -> list[int] | None:
        """One piece, starting at the first non-space character of `text[lo:hi]`.

        Args:
            text: The whole source text (the prompt or the response) the positions index into.
            lo: The first character of the range to split.
            hi: The end of the range to split (exclusive).

        Returns:
            A single start: the first non-space character, or `lo` when the range is blank (never None).
        """
        first = _first_non_space(text, lo, hi)
        return [lo if first is None else first]


_ANSWER_PREFIX = re.compile(r"[ \t>#*]*(?:final\s+)?answer\b", re.I)
_MARKER_ONLY = re.compile(r"[\W_]*(?:the\s+)?(?:final\s+)?answer\s*(?:is)?\s*[:：]?[\W_]*(?:\\boxed\{)?[\W_]*", re.I)


def is_answer_marker(text: str) -> bool:
    """Whether a segment's text only marks the answer ("Answer:", "**Final answer:**", "The answer is",
    "Answer: \\boxed{").

    Such a reasoning segment is no reasoning step: step influence and the step count leave it
    out (removing it measures the answer's format, not its reasoning; docs/evaluation.md).

    Args:
        text: The segment's text.

    Returns:
        True when the text, stripped, is non-empty and only an answer marker; False otherwise.
    """
    return bool(text.strip()) and _MARKER_ONLY.fullmatch(text.strip()) is not None


def is_step(segment: Segment | SegmentRecord) -> bool:
    """Whether a segment (`Segment` or a trace's `SegmentRecord`) is a reasoning step: a reasoning segment that
    is more than an answer marker.

    Args:
        segment: The segment to test.

    Returns:
        True for a reasoning segment whose text is not only an answer marker (`is_answer_marker`).
    """
    return segment.role == "reasoning" and not is_answer_marker(segment.text)


def steps_before_target(trace: Trace) -> list[SegmentRecord]:
    """A trace's reasoning steps (`is_step`) that end before its target starts: the steps that can carry the
    answer, which the step count, step removal and the Story count.

    Args:
        trace: The recording whose segments to read.

    Returns:
        The steps in text order (empty when the trace has no segments).
    """
    lo = trace.settings.target[0]
    return [s for s in trace.segments or [] if is_step(s) and s.end <= lo]


def _line_starts(text: str, lo: int, hi: int, starts_piece) -> tuple[list[int], int]:
    """First non-space character of each non-blank line where ``starts_piece(line_start, line_end)``, and
    how many of those lines are not "Answer:" lines."""
    found, content = [], 0
    for s, e in _lines(text, lo, hi):
        first = _first_non_space(text, s, e)
        if first is not None and starts_piece(s, e):
            found.append(first)
            content += not _ANSWER_PREFIX.match(text, s, e)
    return found, content


class LineSplitter:
    """One piece per non-blank line; applies when at least `min_pieces` of them are not "Answer:" lines."""

    def __init__(self, min_pieces: int = 1):
        self.min_pieces = min_pieces

    def starts(self, text: str, lo: int, hi: int) -> list[int] | None:
        """One piece per line of `text[lo:hi]`; None when fewer than `min_pieces` lines have content.

        Args:
            text: The whole source text (the prompt or the response) the positions index into.
            lo: The first character of the range to split.
            hi: The end of the range to split (exclusive).

        Returns:
            The first non-space character of each non-blank line, in order; None when fewer than `min_pieces`
                of those lines are not "Answer:" lines.
        """
        found, content = _line_starts(text, lo, hi, lambda s, e: True)
        return found if content >= self.min_pieces else None


_SENTENCE_END = re.compile(r"[.!?。！？]+[\"'”’)\]]*(?=\s)|[。！？]+")


class SentenceSplitter:
    """One piece per sentence (a ``. ! ?`` followed by a space, or CJK full stops), lines always cut."""

    def starts(self, text: str, lo: int, hi: int) -> list[int] | None:
        """One piece per sentence of each line of `text[lo:hi]`; None when there is no text.

        Args:
            text: The whole source text (the prompt or the response) the positions index into.
            lo: The first character of the range to split.
            hi: The end of the range to split (exclusive).

        Returns:
            The first non-space character of each sentence, in order; None when the range is blank.
        """
        found: list[int] = []
        for s, e in _lines(text, lo, hi):
            pos = s
            while (first := _first_non_space(text, pos, e)) is not None:
                found.append(first)
                match = _SENTENCE_END.search(text, first, e)
                if match is None:
                    break
                pos = match.end()
        return found or None


_STEP_MARKER = re.compile(r"[ \t>#*]*(?:step\s*\d+\s*[:.)]|\d+\s*[.)](?!\d)|[-*•+]\s)", re.I)


class StepSplitter:
    """Numbered or bulleted steps ("1.", "2)", "Step 3:", "- ", "* ", "• "): a new piece at each line
    that starts with a marker (continuation lines stay in their step; an "Answer:" line is a piece of its
    own); needs at least `min_steps` markers."""

    def __init__(self, min_steps: int = 2):
        self.min_steps = min_steps

    def starts(self, text: str, lo: int, hi: int) -> list[int] | None:
        """One piece per numbered or bulleted step line (and the "Answer:" line) of `text[lo:hi]`, plus the
        text before the first step; None when there are fewer than `min_steps` steps.

        Args:
            text: The whole source text (the prompt or the response) the positions index into.
            lo: The first character of the range to split.
            hi: The end of the range to split (exclusive).

        Returns:
            The first non-space character of the text before the first step (when there is any) and of each
                step or "Answer:" line, in order; None when fewer than `min_steps` lines start a step (an "Answer:"
                line does not count).
        """
        def is_step(s: int, e: int) -> bool:
            return bool(_STEP_MARKER.match(text, s, e) or _ANSWER_PREFIX.match(text, s, e))

        found, steps = _line_starts(text, lo, hi, is_step)
        if steps < self.min_steps:
            return None
        head = _first_non_space(text, lo, found[0])  # text before the first step is a piece of its own
        return ([head] if head is not None else []) + found


class FirstMatch:
    """The first of several rules that applies."""

    def __init__(self, *rules: Splitter):
        self.rules = rules

    def starts(self, text: str, lo: int, hi: int) -> list[int] | None:
        """The pieces of the first rule that finds any, else None.

        Args:
            text: The whole source text (the prompt or the response) the positions index into.
            lo: The first character of the range to split.
            hi: The end of the range to split (exclusive).

        Returns:
            The start positions of the first rule (in the order given) that returns a non-empty list; None when
                no rule does.
        """
        for rule in self.rules:
            found = rule.starts(text, lo, hi)
            if found:
                return found
        return None


DEFAULT_SPLITTERS: dict[str, Splitter] = {
    "template": WholeSplitter(),
    "prompt": SentenceSplitter(),
    "reasoning": FirstMatch(StepSplitter(), LineSplitter(min_pieces=2), SentenceSplitter()),
    "answer": WholeSplitter(),
}
_LETTER = {"template": "T", "prompt": "P", "reasoning": "S", "answer": "A"}


def _role_runs(sequence: TokenSequence) -> list[tuple[int, int]]:
    """``[start, end)`` of each maximal run of tokens sharing role and source."""
    runs, start = [], 0
    toks = sequence.tokens
    for i in range(1, len(toks) + 1):
        if i == len(toks) or (toks[i].role, toks[i].source) != (toks[start].role, toks[start].source):
            runs.append((start, i))
            start = i
    return runs


def _source_text(sequence: TokenSequence, source: str | None) -> str | None:
    return {"prompt": sequence.prompt, "response": sequence.response}.get(source)


def _token_key(text: str, start: int, end: int) -> int:
    """The character a token belongs to: its first non-space character, else its start."""
    first = _first_non_space(text, start, end)
    return start if first is None else first


def _split_run(sequence: TokenSequence, lo: int, hi: int, splitter: Splitter) -> list[int]:
    """Token positions in ``(lo, hi)`` where a new segment starts inside one role run."""
    toks = sequence.tokens[lo:hi]
    text = _source_text(sequence, toks[0].source)
    if text is None or any(t.start is None for t in toks):
        return []
    c_lo, c_hi = min(t.start for t in toks), max(t.end for t in toks)
    starts = splitter.starts(text, c_lo, c_hi) or []
    cuts, last = [], 0
    for offset, t in enumerate(toks):
        piece = max(bisect.bisect_right(starts, _token_key(text, t.start, t.end)) - 1, 0)
        if piece > last:  # pieces only move forward, so segments stay contiguous
            if offset > 0:
                cuts.append(lo + offset)
            last = piece
    return cuts


def _check_boundaries(boundaries: Seq[int], n: int, answer: tuple[int, int] | None) -> list[int]:
    cuts = set()
    for b in boundaries:
        if isinstance(b, bool) or not isinstance(b, int):
            raise InputError(f"segment boundaries must be token positions (integers), got {b!r}")
        if not 0 <= b <= n:
            raise InputError(f"segment boundary {b} is outside the sequence of {n} tokens")
        if answer is not None and answer[0] < b < answer[1]:
            raise InputError(f"segment boundary {b} falls inside the answer (tokens {answer[0]}..{answer[1] - 1}), "
                             "which is always one segment")
        if 0 < b < n:
            cuts.add(b)
    return sorted(cuts)


def segment_sequence(sequence: TokenSequence, *, boundaries: Seq[int] | None = None,
                     splitters: dict[str, Splitter] | None = None) -> list[Segment]:
    """Segments of `sequence` in order; their token ranges tile ``[0, len(sequence))`` exactly.

    Args:
        sequence: The token sequence to split (tokens with roles, sources and character offsets).
        boundaries: Token positions where a segment must start; when given, they replace the automatic
            splitting (role changes still cut, and the answer stays whole).
        splitters: Overrides the rule per role (keys ``template``, ``prompt``, ``reasoning``, ``answer``);
            the others keep `DEFAULT_SPLITTERS`. Not used when `boundaries` are given.

    Returns:
        The segments in order (empty for an empty sequence).

    Raises:
        InputError: When a boundary is not an integer, lies outside the sequence, or falls inside the answer.
    """
    n = len(sequence)
    if n == 0:
        return []
    runs = _role_runs(sequence)
    cuts = {lo for lo, _ in runs[1:]}
    if boundaries is not None:
        cuts.update(_check_boundaries(boundaries, n, sequence.token_range("answer")))
    else:
        rules = {**DEFAULT_SPLITTERS, **(splitters or {})}
        for lo, hi in runs:
            cuts.update(_split_run(sequence, lo, hi, rules[sequence.tokens[lo].role]))
    edges = [0, *sorted(cuts), n]
    counters: dict[str, int] = {}
    segments = []
    for order, (lo, hi) in enumerate(zip(edges[:-1], edges[1:])):
        toks = sequence.tokens[lo:hi]
        role = toks[0].role
        index = counters.get(role, 0)
        counters[role] = index + 1
        seg_id = "A" if role == "answer" and index == 0 else f"{_LETTER[role]}{index}"
        text = _source_text(sequence, toks[0].source)
        if text is not None and all(t.start is not None for t in toks):
            c_lo, c_hi = min(t.start for t in toks), max(t.end for t in toks)
            segments.append(Segment(seg_id, role, text[c_lo:c_hi], lo, hi, order, c_lo, c_hi))
        else:
            segments.append(Segment(seg_id, role, "".join(t.text for t in toks), lo, hi, order))
    return segments


def segment_at(segments: Seq[Segment], position: int) -> Segment:
    """The segment holding token `position`.

    Args:
        segments: Segments in order, tiling the tokens (`segment_sequence`).
        position: A token position.

    Returns:
        The segment whose token range holds `position`.

    Raises:
        IndexError: When no segment holds `position`.
    """
    index = bisect.bisect_right([s.start for s in segments], position) - 1
    if index < 0 or position >= segments[index].end:
        raise IndexError(f"token {position} is in no segment")
    return segments[index]


__all__ = ["Segment", "is_answer_marker", "is_step", "steps_before_target", "Splitter", "WholeSplitter", "LineSplitter", "SentenceSplitter", "StepSplitter", "FirstMatch",
           "DEFAULT_SPLITTERS", "segment_sequence", "segment_at"]
