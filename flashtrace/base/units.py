"""Durations in words, as every floor shows them (the app, the command line, benchmarks)."""

from __future__ import annotations


def time_range(lo: float, hi: float) -> str:
    """Seconds ``lo`` to ``hi`` in words: "under 1 s", "2.0–8.0 s", "12–48 s" or minutes.

    Args:
        lo: The shortest duration, in seconds.
        hi: The longest duration, in seconds.

    Returns:
        The range in words: "under 1 s" when `hi` is under a second, seconds up to two minutes, minutes above.
    """
    if hi < 1:
        return "under 1 s"
    if hi < 120:
        fmt = "{:.1f}" if hi < 10 else "{:.0f}"
        return f"{fmt.format(lo)}–{fmt.format(hi)} s"
    return f"{lo / 60:.1f}–{hi / 60:.1f} min"


__all__ = ["time_range"]
