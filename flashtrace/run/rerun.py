"""Edit and re-run: one edit of the user's (segments removed or replaced), the answer's log-probability
before and after, and optionally the answer the model now writes (greedy) and a trace of it.

The log-probabilities come from `interventions.score` on the trace's own token ids. The new answer is
generated from the edited ids: from the start of the response when only prompt sentences were edited
(the model writes its whole response again), from the start of the target when a reasoning step was
(the edited reasoning is kept and the model answers after it). The new trace tokenises the edited text
afresh and is attributed with the original trace's settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

from ..analysis.interventions import DEFAULT_NEW_TOKENS
from ..analysis.schema import Trace
from ..engine.estimate import check_run
from ..engine.models.generation import generate_response
from .interventions import Edited, Progress, check_model, chosen_segments, edit_ids, fitted_replacement, score, unedited
from .tracing import attribute, prepare
from ..base.errors import InputError

if TYPE_CHECKING:
    from ..engine.models.loading import LoadedModel


@dataclass(frozen=True)
class EditResult:
    """What one edit did: the target's log-probability `before` and `after` (teacher-forced), the text the
    model generated after the edit (None when not asked), and the new trace (None when not asked)."""

    edited: Edited
    before: float
    after: float
    generated: str | None = None
    prompt: str | None = None  # the edited prompt and response texts the new trace was made from
    response: str | None = None
    trace: Trace | None = None

    @property
    def change(self) -> float:
        """``after - before``: negative when the edit made the original target less likely."""
        return self.after - self.before


def _edited_text(text: str, ranges: list[tuple[int, int]], replacement: str | None) -> tuple[str, Callable[[int], int]]:
    """`text` with the character `ranges` cut (the first replaced by `replacement`), and a map from an
    original character offset (outside the ranges) to its offset in the new text."""
    pieces, last = [], 0
    for i, (lo, hi) in enumerate(ranges):
        pieces.append(text[last:lo])
        if i == 0 and replacement:
            pieces.append(replacement)
        last = hi
    pieces.append(text[last:])

    def moved(offset: int) -> int:
        out = offset
        for i, (lo, hi) in enumerate(ranges):
            if hi <= offset:
                out -= hi - lo
                if i == 0 and replacement:
                    out += len(replacement)
        return out

    return "".join(pieces), moved


def edited_texts(trace: Trace, segment_ids: Sequence[str], replacement: str | None = None) -> tuple[str, str]:
    """The trace's prompt and response texts with the segments cut (the first replaced by `replacement`,
    fitted with `fitted_replacement`).

    Args:
        trace: The trace edited.
        segment_ids: The ids of the segments cut (prompt sentences or reasoning steps).
        replacement: The text that takes the first segment's place; None (or empty) cuts it too.

    Returns:
        ``(prompt, response)``: the edited texts.

    Raises:
        InputError: When the edited segments have no character offsets (the trace cannot be re-run as text), or
            a segment id is not editable (from `chosen_segments`).
    """
    chosen = chosen_segments(trace, segment_ids)
    replacement = fitted_replacement(trace, segment_ids, replacement) if replacement else None
    if any(s.char_start is None or s.char_end is None for s in chosen):
        raise InputError("the edited segments have no character offsets; this trace cannot be re-run as text")
    texts = []
    for role, text in (("prompt", trace.prompt), ("reasoning", trace.response)):
        ranges = [(s.char_start, s.char_end) for s in chosen if s.role == role]
        texts.append(_edited_text(text, ranges, replacement if chosen[0].role == role else None)[0])
    return texts[0], texts[1]


def _answer_prefix(trace: Trace, segment_ids: Sequence[str], replacement: str | None) -> str:
    """The edited response up to the start of the target (what is kept when a reasoning step is edited)."""
    chosen = [s for s in chosen_segments(trace, segment_ids) if s.role == "reasoning"]
    first = chosen_segments(trace, segment_ids)[0]
    ranges = [(s.char_start, s.char_end) for s in chosen]
    text, moved = _edited_text(trace.response, ranges, replacement if first.role == "reasoning" else None)
    start = trace.tokens[trace.settings.target[0]].start
    return text[: moved(start)] if start is not None else text


class _Phases:
    """One progress over an edit's three parts, each weighted by its predicted seconds: the scoring, the
    generation (by token, of at most `new_tokens`) and the new trace's attribution. `progress(done, total)`
    hears ``PARTS`` parts in all, so a bar never sits full while the model is still writing."""

    PARTS = 1000

    def __init__(self, weights: tuple[float, float, float], new_tokens: int, progress: Progress | None):
        total = sum(weights) or 1.0
        self.weights, self.new_tokens, self.progress = [w / total for w in weights], max(new_tokens, 1), progress
        self.offsets = [0.0, self.weights[0], self.weights[0] + self.weights[1]]

    def _report(self, part: int, fraction: float) -> None:
        if self.progress is not None:
            done = self.offsets[part] + self.weights[part] * min(max(fraction, 0.0), 1.0)
            self.progress(min(round(done * self.PARTS), self.PARTS), self.PARTS)

    def scoring(self, done: int, total: int) -> None:
        self._report(0, done / max(total, 1))

    def generating(self, _text: str, n: int) -> None:
        self._report(1, n / self.new_tokens)

    def generated(self) -> None:
        self._report(1, 1.0)

    def tracing(self, done: int, total: int) -> None:
        self._report(2, done / max(total, 1))


def _phases(loaded, trace: Trace, start: int, new_tokens: int, retrace: bool, progress: Progress | None) -> _Phases:
    from ..engine.estimate import estimate, generation_seconds, scoring_seconds

    n = len(trace.tokens)
    weights = (scoring_seconds(loaded, n, 2),
               generation_seconds(loaded, start, new_tokens) if new_tokens else 0.0,
               estimate(loaded, start + new_tokens // 2, trace.settings.hops).seconds if retrace else 0.0)
    return _Phases(weights, new_tokens, progress)


def checked_edit(loaded: LoadedModel, trace: Trace, segment_ids: Sequence[str], replacement: str | None = None, *,
                 regenerate: bool = False, retrace: bool = False,
                 max_new_tokens: int = DEFAULT_NEW_TOKENS) -> tuple[Edited, str | None]:
    """``(the edited ids, the replacement as it will be put in)`` once `edit` with these arguments is known to fit
    (`check_run`: the edited trace and the new tokens in the model's context; the scoring, and with `retrace` the
    new trace, in memory); what `edit` checks first, for a caller to check before saying how long it will take.

    Args:
        loaded: The model the trace was made with.
        trace: The trace edited.
        segment_ids: The ids of the segments removed (or, the first, replaced).
        replacement: The text that takes the first segment's place; None removes it.
        regenerate: The model is to write a new response or answer after the edit.
        retrace: The edited text is to be traced again.
        max_new_tokens: The most new tokens generated (counted only with `regenerate` or `retrace`).

    Returns:
        ``(edited, replacement)``: the edited sequence, and the replacement fitted with `fitted_replacement`
            (None when there is none).

    Raises:
        InputError: When the model is not the trace's, a segment id is not editable, or the edited trace and the
            new tokens do not fit the model's context.
        ResourceError: When the run would not fit in memory.
    """
    check_model(loaded, trace)
    replacement = fitted_replacement(trace, segment_ids, replacement) if replacement else None
    insert = loaded.tokenizer.encode(replacement, add_special_tokens=False) if replacement else None
    edited = edit_ids(trace, segment_ids, insert, replacement)
    check_run(loaded, len(edited.ids), new_tokens=max_new_tokens if (regenerate or retrace) else 0, rows=2,
              hops=trace.settings.hops if retrace else 0, steps=retrace and trace.steps is not None,
              what="the edited trace",
              advice="shorten the replacement (--replace) or ask for fewer new tokens (--max-new-tokens)")
    return edited, replacement


def edit(loaded: LoadedModel, trace: Trace, segment_ids: Sequence[str], replacement: str | None = None, *,
         regenerate: bool = False, retrace: bool = False, max_new_tokens: int = DEFAULT_NEW_TOKENS,
         progress: Progress | None = None) -> EditResult:
    """Remove `segment_ids` (prompt sentences or reasoning steps) from `trace`, or replace the first by
    `replacement` text and remove the others; score the original target before and after.

    Args:
        loaded: The model the trace was made with.
        trace: The trace edited.
        segment_ids: The ids of the segments removed (prompt sentences or reasoning steps).
        replacement: The text that replaces the first of them (the others are removed); None removes them all.
        regenerate: The model (greedy) writes a new response or answer after the edit.
        retrace: The edited prompt and the new response are traced with the trace's settings (implies
            `regenerate`).
        max_new_tokens: The most new tokens generated.
        progress: `progress(done, total)` hears of the whole run as one count (`_Phases`: the scoring, each
            generated token, the new trace's attribution, weighted by their predicted seconds) and may raise to
            stop.

    Returns:
        The target's log-probability before and after, and, when asked, the generated text, the edited prompt
            and response, and the new trace (None when the new response is blank).

    Raises:
        InputError: When the edit is refused (from `checked_edit`), or the edited segments have no character
            offsets to re-run as text.
        ResourceError: When the run would not fit in memory.
    """
    edited, replacement = checked_edit(loaded, trace, segment_ids, replacement, regenerate=regenerate, retrace=retrace,
                                       max_new_tokens=max_new_tokens)
    steps_edited = any(s.role == "reasoning" for s in chosen_segments(trace, segment_ids))
    start = edited.target[0] if steps_edited else edited.response_start
    phases = _phases(loaded, trace, start, max_new_tokens if (regenerate or retrace) else 0, retrace, progress)
    before, after = score(loaded, [unedited(trace), edited], progress=phases.scoring)
    if not (regenerate or retrace):
        return EditResult(edited, before, after)
    generated = generate_response(loaded, list(edited.ids[:start]), max_new_tokens=max_new_tokens,
                                  on_text=phases.generating).text
    phases.generated()
    prompt, _ = edited_texts(trace, segment_ids, replacement)
    response = (_answer_prefix(trace, segment_ids, replacement) if steps_edited else "") + generated
    new_trace = None
    if retrace and response.strip():
        s = trace.settings
        prepared = prepare(loaded, prompt, response, chat_template=s.chat_template, hops=s.hops)
        new_trace = attribute(prepared, hops=s.hops, method=s.method, recursive=s.recursive, hop0=s.hop0,
                              stop_tokens=s.stop_tokens, threshold=s.threshold, steps=trace.steps is not None,
                              title=f"{trace.title} (edited)"[:200], progress=phases.tracing)
    return EditResult(edited, before, after, generated, prompt, response, new_trace)


__all__ = ["EditResult", "edit", "checked_edit", "edited_texts", "DEFAULT_NEW_TOKENS"]
