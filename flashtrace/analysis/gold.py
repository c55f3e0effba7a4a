"""Known evidence in a trace: the gold character ranges a task or the user marked in the prompt (``extra["gold"]``,
or ``extra["gallery"]["gold"]`` for gallery traces), as the prompt tokens they cover. `flashtrace.analysis.facts`
measures how the attribution treats them."""

from __future__ import annotations

from .schema import Trace


def _gold_ranges(extra: dict) -> list[tuple[int, int]]:
    spans = extra.get("gold")
    if spans is None and isinstance(extra.get("gallery"), dict):
        spans = extra["gallery"].get("gold")
    if not isinstance(spans, list):
        return []

    def valid(span) -> bool:
        return (isinstance(span, (list, tuple)) and len(span) == 2
                and all(isinstance(v, int) and not isinstance(v, bool) for v in span) and 0 <= span[0] < span[1])

    return [(s[0], s[1]) for s in spans if valid(s)]


def gold_positions(trace: Trace) -> set[int]:
    """Prompt tokens inside a gold character range (``extra["gold"]`` or ``extra["gallery"]["gold"]``:
    ``[start, end]`` pairs into the prompt text); malformed entries are ignored.

    Args:
        trace: The recording whose ``extra`` may mark gold ranges.

    Returns:
        The positions of the prompt tokens that overlap a gold range (empty when none is marked).
    """
    ranges = _gold_ranges(trace.extra)
    return {i for i, t in enumerate(trace.tokens) if t.role == "prompt" and t.start is not None and t.end is not None
            and any(t.start < hi and lo < max(t.end, t.start + 1) for lo, hi in ranges)}


__all__ = ["gold_positions"]
