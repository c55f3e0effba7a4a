"""Faithfulness metrics of METHOD.md §7: deletion curves, RISE, MAS, Recovery@10%.

Conventions: attributions are given over the *evaluated positions* (the user's prompt tokens) as a
vector ``[P]``. Tokens are deleted in descending attribution order (ties: earlier position first) in
``k`` equal groups (`torch.tensor_split`, so group sizes differ by at most one). The caller scores
each deletion state; these functions turn the scores into curves and areas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch


def deletion_order(scores: torch.Tensor) -> torch.Tensor:
    """Positions ``[P]`` sorted by attribution, highest first; ties keep position order.

    Args:
        scores: The attribution over the evaluated positions, ``[P]``.

    Returns:
        The indices of `scores` (``[P]``, long) in deletion order.
    """
    return torch.sort(scores.float(), descending=True, stable=True).indices


def deletion_masks(order: torch.Tensor, k: int = 20) -> torch.Tensor:
    """``[k+1, P]`` bool: row t marks the positions deleted after step t (row 0 none, row k all).

    Args:
        order: The positions in deletion order, ``[P]`` (`deletion_order`).
        k: The steps: `order` is cut into `k` groups whose sizes differ by at most one.

    Returns:
        The ``[k+1, P]`` bool masks.
    """
    p = order.numel()
    masks = torch.zeros(k + 1, p, dtype=torch.bool)
    for t, group in enumerate(torch.tensor_split(order, k), start=1):
        masks[t] = masks[t - 1]
        masks[t, group] = True
    return masks


def normalise_curve(s: torch.Tensor) -> torch.Tensor:
    """``n_t = clip((s_t - s_k) / |s_0 - s_k|, 0, 1)`` made non-increasing by a running minimum.

    When deleting everything does not change the score (``s_0 == s_k``) the curve is flat at 1
    (nothing was explained away).

    Args:
        s: The raw deletion scores ``s_t``, ``[k+1]``.

    Returns:
        The normalised curve ``n_t``, ``[k+1]`` float64.
    """
    s = s.double()
    span = (s[0] - s[-1]).abs()
    if span == 0:
        return torch.ones_like(s)
    n = ((s - s[-1]) / span).clamp(0.0, 1.0)
    return torch.cummin(n, dim=0).values


def auc(y: torch.Tensor) -> float:
    """Trapezoid area under ``y`` sampled at equally spaced points of the unit interval.

    Args:
        y: The curve's values, at least two, the first at 0 and the last at 1.

    Returns:
        The area.
    """
    return float(torch.trapezoid(y.double(), dx=1.0 / (y.numel() - 1)))


def mass_remaining(scores: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """``d_t`` ``[k+1]``: share of (non-negative) attribution mass still present after step t, 1 → 0.
    With no positive mass, the share of tokens still present is used.

    Args:
        scores: The attribution over the evaluated positions, ``[P]`` (negative scores count as 0).
        masks: The deletion masks, ``[k+1, P]`` bool (`deletion_masks`).

    Returns:
        ``d_t``, ``[k+1]`` float64.
    """
    pos = scores.double().clamp(min=0.0)
    total = pos.sum()
    if total <= 0:
        pos, total = torch.ones_like(pos), torch.tensor(float(pos.numel()), dtype=torch.double)
    return (pos[None, :] * (~masks).double()).sum(1) / total


def rise(n: torch.Tensor) -> float:
    """Area under the normalised deletion curve (lower is better).

    Args:
        n: The normalised deletion curve, ``[k+1]`` (`normalise_curve`).

    Returns:
        The RISE score.
    """
    return auc(n)


def mas(n: torch.Tensor, d: torch.Tensor) -> float:
    """``AUC(minmax(clip(n + |n - d|, 0, 1)))`` (lower is better).

    Args:
        n: The normalised deletion curve, ``[k+1]`` (`normalise_curve`).
        d: The attribution mass remaining, ``[k+1]`` (`mass_remaining`).

    Returns:
        The MAS score (the curve is all zeros when it is constant).
    """
    c = (n.double() + (n.double() - d.double()).abs()).clamp(0.0, 1.0)
    lo, hi = c.min(), c.max()
    c = (c - lo) / (hi - lo) if hi > lo else torch.zeros_like(c)
    return auc(c)


def recovery(scores: torch.Tensor, gold: torch.Tensor, fraction: float = 0.1) -> float | None:
    """Share of gold positions found among the top ``ceil(fraction·P)`` positions.

    Args:
        scores: The attribution over the evaluated positions, ``[P]``.
        gold: Which positions are gold, ``[P]`` bool.
        fraction: The share of positions counted as the top.

    Returns:
        The share, in [0, 1]; None when there is no gold position.
    """
    n_gold = int(gold.sum())
    if n_gold == 0:
        return None
    top = deletion_order(scores)[: math.ceil(fraction * scores.numel())]
    return float(gold[top].sum()) / n_gold


@dataclass
class DeletionResult:
    """One deletion curve: the target's log-probabilities as prompt tokens are deleted (raw and
    normalised), the attribution mass left, and the RISE and MAS scores."""
    s: list[float]  # [k+1] raw target log-probabilities
    n: list[float]  # [k+1] normalised, non-increasing
    d: list[float]  # [k+1] attribution mass remaining
    rise: float
    mas: float


def curve_metrics(scores: torch.Tensor, s: torch.Tensor, masks: torch.Tensor) -> DeletionResult:
    """RISE and MAS from the raw deletion scores ``s`` ``[k+1]`` of `scores`' deletion `masks`.

    Args:
        scores: The attribution over the evaluated positions, ``[P]``.
        s: The raw deletion scores (target log-probabilities), ``[k+1]``.
        masks: The deletion masks `s` was scored on, ``[k+1, P]`` bool.

    Returns:
        The deletion curve: raw, normalised, mass remaining, RISE and MAS.
    """
    n = normalise_curve(s)
    d = mass_remaining(scores, masks)
    return DeletionResult(s.double().tolist(), n.tolist(), d.tolist(), rise(n), mas(n, d))


def deletion_metrics(scores: torch.Tensor, score_masks: Callable[[torch.Tensor], torch.Tensor], k: int = 20
                     ) -> DeletionResult:
    """Full deletion evaluation of one attribution.

    Args:
        scores: The attribution over the evaluated positions, ``[P]``.
        score_masks: Maps ``[B, P]`` deletion masks to ``[B]`` target log-probabilities.
        k: The deletion curve's steps.

    Returns:
        The deletion curve: raw, normalised, mass remaining, RISE and MAS.
    """
    masks = deletion_masks(deletion_order(scores), k)
    return curve_metrics(scores, score_masks(masks), masks)


__all__ = ["deletion_order", "deletion_masks", "normalise_curve", "auc", "mass_remaining", "rise", "mas",
           "recovery", "DeletionResult", "curve_metrics", "deletion_metrics"]
