"""Step-level attribution: many token ranges (reasoning steps, the answer) attributed in one batched sweep.

Each range becomes a weight vector, uniform over its tokens that are not stop tokens; all of them go
to the aggregator at once (for span aggregation: one sweep over the recorded layers, attention rows
rebuilt once per layer for the union of the ranges' rows), so the cost is about one hop, not one hop
per step.
"""

from __future__ import annotations

from typing import Sequence

import torch

from .hops import Aggregator
from ...base.errors import InputError

TokenRange = tuple[int, int]


def range_weights(ranges: Sequence[TokenRange], keep: torch.Tensor) -> torch.Tensor:
    """``[B, N]`` weights: row b uniform over the kept tokens of ``ranges[b]``; all-zero when it has none.

    Args:
        ranges: ``(lo, hi)`` token ranges (end excluded), one per row.
        keep: ``[N]`` bool, marks tokens that may carry weight (not stop tokens).

    Returns:
        ``[B, N]`` float32 weights, each row summing to 1 or all zero.

    Raises:
        InputError: When a range is empty or outside the ``N`` tokens.
    """
    n = keep.numel()
    weights = torch.zeros(len(ranges), n)
    for b, (lo, hi) in enumerate(ranges):
        if not 0 <= lo < hi <= n:
            raise InputError(f"range {lo}:{hi} is outside the {n} tokens")
        weights[b, lo:hi] = keep[lo:hi].float()
    kept = weights.sum(1, keepdim=True)  # a count of tokens: 0, or 1 and more
    return weights / kept.clamp_min(1.0)  # a row of stop tokens only stays all zero


def step_attributions(aggregate: Aggregator, ranges: Sequence[TokenRange], keep: torch.Tensor
                      ) -> list[torch.Tensor | None]:
    """Attribution ``[N]`` of each range over all positions, stop tokens zeroed, from ONE aggregator call.

    A range made only of stop tokens has nothing to attribute and gets None.

    Args:
        aggregate: The attribution of target weights ``[B, N]`` to scores ``[B, N]``.
        ranges: ``(lo, hi)`` token ranges (end excluded): reasoning steps, the answer.
        keep: ``[N]`` bool, marks tokens that may carry weight (not stop tokens).

    Returns:
        One attribution ``[N]`` per range, in order; None for a range of stop tokens only.

    Raises:
        InputError: When a range is empty or outside the ``N`` tokens (`range_weights`).
    """
    weights = range_weights(ranges, keep)  # [B, N]
    valid = torch.nonzero(weights.sum(1) > 0).flatten()
    out: list[torch.Tensor | None] = [None] * len(ranges)
    if valid.numel() == 0:
        return out
    scores = aggregate(weights[valid]) * keep.float()  # [B', N]
    for row, b in enumerate(valid.tolist()):
        out[b] = scores[row]
    return out


__all__ = ["range_weights", "step_attributions"]
