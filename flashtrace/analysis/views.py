"""The per-token values the token views draw (the heatmap, the text view, the top-k table), so that they
too come from the analysis floor: the combined view is the trace's final prompt attribution as a share of
the prompt's attribution; hop k's view is hop k's own attribution as a share of that hop's attribution;
a step's view is that step's own attribution as a share of its attribution."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .schema import Trace
from ..base.errors import InputError

if TYPE_CHECKING:
    from collections.abc import Iterable


def _shares(values: list[float]) -> list[float]:
    total = sum(values)
    return [v / total for v in values] if total > 0 else [0.0] * len(values)


def view_values(trace: Trace, hop: int | None = None) -> list[float]:
    """What a view shows per position.

    Args:
        trace: The recording to read.
        hop: None for the combined view: ``scores.prompt`` (sums to 1 over the prompt); ``hop=k``: hop k's raw
            vector as a share of its total, over all positions.

    Returns:
        One value per position (all zeros for a hop whose raw vector sums to 0).

    Raises:
        InputError: When `hop` is not one of the trace's hops.
    """
    if hop is None:
        return list(trace.scores.prompt)
    if not 0 <= hop < len(trace.hops):
        raise InputError(f"hop {hop} is not in this trace (it has hops 0..{len(trace.hops) - 1})")
    return _shares(trace.hops[hop].raw)


def step_values(trace: Trace, segment_id: str) -> list[float]:
    """One reasoning step's (or the answer's) own attribution over all positions, as a share of its total.

    Args:
        trace: The recording to read.
        segment_id: The id of the reasoning step or answer segment.

    Returns:
        One share per position (all zeros when the vector sums to 0).

    Raises:
        InputError: When the trace has no step vector for `segment_id`.
    """
    if trace.steps is None or segment_id not in trace.steps.vectors:
        raise InputError(f"segment {segment_id} has no step attribution in this trace")
    return _shares(trace.steps.vectors[segment_id])


def target_positions(trace: Trace) -> range:
    """Positions of the target span: what the attribution explains (never a cause of itself).

    Args:
        trace: The recording to read.

    Returns:
        The target's token positions, ``range(start, end)``.
    """
    lo, hi = trace.settings.target
    return range(lo, hi)


def punctuation_only(text: str) -> bool:
    """A token with no letter or digit (``-``, ``=``, ``:``, whitespace): left out of word lists.

    Args:
        text: The token's text.

    Returns:
        True when `text` holds no letter or digit (also for an empty text).
    """
    return not any(c.isalnum() for c in text)


def top_view_tokens(trace: Trace, hop: int | None = None, k: int = 10, words_only: bool = True) -> list[int]:
    """The `k` positions with the most of a view: prompt tokens for the combined view, prompt and generated
    tokens for a hop; target tokens left out (they are what is explained). Largest first; ties in text order.

    Args:
        trace: The recording to read.
        hop: The view (`view_values`): None for the combined view, else that hop's.
        k: How many positions at most.
        words_only: Leave punctuation-only tokens out too (`punctuation_only`).

    Returns:
        Up to `k` positions with a positive value, largest first.

    Raises:
        InputError: When `hop` is not one of the trace's hops (from `view_values`).
    """
    values = view_values(trace, hop)
    roles = ("prompt",) if hop is None else ("prompt", "reasoning", "answer")
    target = target_positions(trace)
    keep = [i for i in trace.positions(*roles)
            if i not in target and values[i] > 0 and not (words_only and punctuation_only(trace.tokens[i].text))]
    return sorted(keep, key=lambda i: (-values[i], i))[:k]


_EDGE_PUNCTUATION = ".,;:!?\"'()[]{}“”‘’«»"


def span_text(trace: Trace, span: tuple[int, int]) -> str:
    """The text of tokens ``[start, end)`` of `trace`, trimmed.

    Args:
        trace: The recording to read.
        span: The token range ``(start, end)``.

    Returns:
        The tokens' text joined and stripped of surrounding whitespace.
    """
    return "".join(t.text for t in trace.tokens[span[0]:span[1]]).strip()


def word_runs(trace: Trace, positions: Iterable[int]) -> list[tuple[str, tuple[int, ...]]]:
    """The words among the tokens at `positions` (in order): consecutive tokens that no space or punctuation
    separates ("mar" + "bles", "1" + "2") make one, as ``(word, its token positions)``; edge punctuation is not
    part of a word ("one." is "one") and punctuation-only tokens are none.

    Args:
        trace: The recording to read.
        positions: The token positions to read, in order.

    Returns:
        ``(word, its token positions)`` for each word, in the order of `positions`.
    """
    runs, current, previous = [], [], None

    def close() -> None:
        if current:
            word = "".join(trace.tokens[p].text for p in current).strip()
            runs.append((word.strip(_EDGE_PUNCTUATION) or word, tuple(current)))
            current.clear()

    for p in positions:
        text = trace.tokens[p].text
        if punctuation_only(text) or previous is None or p != previous + 1 or text[:1].isspace() \
                or not text[:1].isalnum():
            close()
        if not punctuation_only(text):
            current.append(p)
        previous = p
    close()
    return runs


__all__ = ["span_text", "word_runs", "view_values", "step_values", "target_positions", "punctuation_only", "top_view_tokens"]
