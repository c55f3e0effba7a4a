"""The per-token values the token views draw (the heatmap, the text view, the top-k table), so that they
too come from the analysis floor: the combined view is the trace's final prompt attribution as a share of
the prompt's attribution; hop k's view is hop k's own attribution as a share of that hop's attribution;
a step's view is that step's own attribution as a share of its attribution."""

from __future__ import annotations

from .schema import Trace
from ..base.errors import InputError


def _shares(values: list[float]) -> list[float]:
    total = sum(values)
    return [v / total for v in values] if total > 0 else [0.0] * len(values)


def view_values(trace: Trace, hop: int | None = None) -> list[float]:
    """What a view shows per position. ``hop=None`` (combined): ``scores.prompt`` (sums to 1 over the
    prompt). ``hop=k``: hop k's raw vector as a share of its total, over all positions."""
    if hop is None:
        return list(trace.scores.prompt)
    if not 0 <= hop < len(trace.hops):
        raise InputError(f"hop {hop} is not in this trace (it has hops 0..{len(trace.hops) - 1})")
    return _shares(trace.hops[hop].raw)


def step_values(trace: Trace, segment_id: str) -> list[float]:
    """One reasoning step's (or the answer's) own attribution over all positions, as a share of its total."""
    if trace.steps is None or segment_id not in trace.steps.vectors:
        raise InputError(f"segment {segment_id} has no step attribution in this trace")
    return _shares(trace.steps.vectors[segment_id])


def target_positions(trace: Trace) -> range:
    """Positions of the target span: what the attribution explains (never a cause of itself)."""
    lo, hi = trace.settings.target
    return range(lo, hi)


def punctuation_only(text: str) -> bool:
    """A token with no letter or digit (``-``, ``=``, ``:``, whitespace): left out of word lists."""
    return not any(c.isalnum() for c in text)


def top_view_tokens(trace: Trace, hop: int | None = None, k: int = 10, words_only: bool = True) -> list[int]:
    """The `k` positions with the most of a view: prompt tokens for the combined view, prompt and generated
    tokens for a hop; target tokens left out (they are what is explained), and with `words_only`
    punctuation-only tokens too. Largest first; ties in text order."""
    values = view_values(trace, hop)
    roles = ("prompt",) if hop is None else ("prompt", "reasoning", "answer")
    target = target_positions(trace)
    keep = [i for i in trace.positions(*roles)
            if i not in target and values[i] > 0 and not (words_only and punctuation_only(trace.tokens[i].text))]
    return sorted(keep, key=lambda i: (-values[i], i))[:k]


_EDGE_PUNCTUATION = ".,;:!?\"'()[]{}“”‘’«»"


def span_text(trace: Trace, span: tuple[int, int]) -> str:
    """The text of tokens ``[start, end)`` of `trace`, trimmed."""
    return "".join(t.text for t in trace.tokens[span[0]:span[1]]).strip()


def word_runs(trace: Trace, positions) -> list[tuple[str, tuple[int, ...]]]:
    """The words among the tokens at `positions` (in order): consecutive tokens that no space or punctuation
    separates ("mar" + "bles", "1" + "2") make one, as ``(word, its token positions)``; edge punctuation is not
    part of a word ("one." is "one") and punctuation-only tokens are none."""
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
