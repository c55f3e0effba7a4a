"""The deletion check of a trace, summarised: a trace may store the result of
`flashtrace.evaluate.faithfulness.faithfulness_check` in ``extra["faithfulness"]``; `summarise_check`
turns it into the drops, the spread of the random draws and a verdict in words' terms."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

FAITHFULNESS_KEY = "faithfulness"  # where a trace stores its precomputed deletion check (extra)
NEGLIGIBLE = 0.01  # nats: a check where no deletion moves the answer's log-probability more than this tells nothing


@dataclass(frozen=True)
class Check:
    """The stored deletion check: log-probabilities of the answer before and after deleting the top
    `fraction` of prompt tokens, and after deleting as many at random (several draws)."""

    fraction: float
    n_deleted: int
    before: float
    top: float
    randoms: tuple[float, ...]
    drop_top: float  # before - top
    drops_random: tuple[float, ...]
    verdict: str  # no-effect | not-lower | below-random | within-random | above-draws | clearly-above

    @property
    def drop_random_mean(self) -> float:
        """The mean log-probability drop over the random deletions."""
        return float(np.mean(self.drops_random))

    @property
    def z(self) -> float | None:
        """How many standard deviations of the random draws the top deletion's drop lies above their mean."""
        sd = float(np.std(self.drops_random, ddof=1)) if len(self.drops_random) > 1 else 0.0
        return (self.drop_top - self.drop_random_mean) / sd if sd > 0 else None



def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def valid_check(result: Any) -> bool:
    """Whether `result` looks like a stored deletion check (finite numbers where numbers belong).

    Args:
        result: The value a trace stores under ``extra["faithfulness"]`` (any type; only a dict can pass).

    Returns:
        True when `result` is a dict with finite numbers ``fraction``, ``before`` and ``top``, a non-empty list
            ``random`` of finite numbers and an integer ``n_deleted``; False otherwise.
    """
    if not isinstance(result, dict):
        return False
    if not all(_number(result.get(k)) for k in ("fraction", "before", "top")):
        return False
    randoms = result.get("random")
    return (isinstance(randoms, list) and len(randoms) >= 1 and all(_number(v) for v in randoms)
            and isinstance(result.get("n_deleted"), int) and not isinstance(result.get("n_deleted"), bool))


def summarise_check(result: Any) -> Check | None:
    """A `Check` with its verdict from a deletion-check result (None when absent or malformed).

    Verdicts:
    ``no-effect`` (no deletion, top or random, moves the answer's log-probability by more than `NEGLIGIBLE` nats:
    the answer is as likely without them, as when the reasoning before it already states it, so the check cannot
    tell), ``not-lower`` (deleting the top tokens did not lower the answer's log-probability), ``below-random``
    (it fell less than with every random draw), ``within-random`` (inside the draws' range),
    ``above-draws`` (more than every draw, but less than two standard deviations of the draws above their
    mean, or too few draws to tell), ``clearly-above`` (more than every draw and at least two standard
    deviations above their mean).

    Args:
        result: The deletion-check result a trace stores under ``extra["faithfulness"]`` (any type; None or a
            malformed value gives None, see `valid_check`).

    Returns:
        The `Check` (drops, random draws and verdict), or None when `result` is absent or malformed.
    """
    if not valid_check(result):
        return None
    before, top = float(result["before"]), float(result["top"])
    drops = tuple(before - float(v) for v in result["random"])
    drop_top = before - top
    check = Check(float(result["fraction"]), int(result["n_deleted"]), before, top,
                  tuple(float(v) for v in result["random"]), drop_top, drops, "")
    if max(abs(d) for d in (drop_top, *drops)) <= NEGLIGIBLE:
        verdict = "no-effect"
    elif drop_top <= 0:
        verdict = "not-lower"
    elif drop_top < min(drops):
        verdict = "below-random"
    elif drop_top <= max(drops):
        verdict = "within-random"
    elif check.z is not None and check.z >= 2 and len(drops) >= 3:
        verdict = "clearly-above"
    else:
        verdict = "above-draws"
    return Check(check.fraction, check.n_deleted, before, top, check.randoms, drop_top, drops, verdict)


__all__ = ["FAITHFULNESS_KEY", "NEGLIGIBLE", "Check", "summarise_check", "valid_check"]
