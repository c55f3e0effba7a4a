"""Intervals and paired tests for evaluation summaries (issue 46): a claim of change needs a margin.

- `bootstrap_interval`: the percentile bootstrap 95 % interval of a mean (resampled examples, seeded, so a
  summary rebuilt from the same records gives the same interval).
- `paired_difference`: two methods on the same examples: the mean of their per-example differences, its
  bootstrap interval, and a two-sided sign-flip permutation p-value (exact up to 2^16 sign patterns, else
  sampled). A difference whose interval holds 0 is a tie.

numpy only (a core dependency), no scipy: the summary is built wherever the package is installed.
"""

from __future__ import annotations

import itertools

import numpy as np

RESAMPLES = 4000
SEED = 46
EXACT_UP_TO = 16  # examples: up to 2^16 sign patterns are enumerated


def bootstrap_interval(values: list[float], level: float = 0.95, resamples: int = RESAMPLES,
                       seed: int = SEED) -> tuple[float, float] | None:
    """``(low, high)``: the percentile bootstrap interval of the mean of `values` (None for fewer than 2).

    Args:
        values: The per-example values (None values are left out).
        level: The interval's coverage.
        resamples: How many bootstrap resamples.
        seed: The resampling's seed (the same values give the same interval).

    Returns:
        ``(low, high)``, or None for fewer than 2 values.
    """
    data = np.asarray([v for v in values if v is not None], dtype=float)
    if data.size < 2:
        return None
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)  # [resamples]
    tail = (1 - level) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)


def _sign_flip_p(diffs: np.ndarray, seed: int) -> float:
    """Two-sided p-value of a mean difference of 0 against flipping each example's sign."""
    observed = abs(diffs.mean())
    if diffs.size <= EXACT_UP_TO:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=diffs.size)))  # [2^n, n]
    else:
        signs = np.random.default_rng(seed).choice((1.0, -1.0), size=(RESAMPLES, diffs.size))
    means = np.abs((signs * diffs).mean(axis=1))
    return float(np.mean(means >= observed - 1e-12))


def paired_difference(a: list[float | None], b: list[float | None], seed: int = SEED) -> dict | None:
    """`a` − `b` over the examples where both have a value.

    Args:
        a: The first method's per-example values (None: no value).
        b: The second method's values on the same examples, in the same order.
        seed: The seed of the bootstrap and of a sampled permutation test.

    Returns:
        ``{"n", "mean", "interval", "p", "tie"}`` (`interval`: the bootstrap interval of the mean difference,
        `p`: the sign-flip permutation p-value, `tie`: the interval holds 0), or None for fewer than 2 pairs.
    """
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
    if len(pairs) < 2:
        return None
    diffs = np.asarray([x - y for x, y in pairs], dtype=float)
    interval = bootstrap_interval(diffs.tolist(), seed=seed)
    return {"n": len(pairs), "mean": float(diffs.mean()), "interval": list(interval),
            "p": _sign_flip_p(diffs, seed), "tie": interval[0] <= 0.0 <= interval[1]}


__all__ = ["bootstrap_interval", "paired_difference", "RESAMPLES"]
