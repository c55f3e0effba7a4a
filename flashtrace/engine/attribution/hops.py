"""Recursive attribution through the reasoning chain (METHOD.md §4).

Hop 0 attributes the target span; hop k ≥ 1 re-attributes the mass that hop k-1 left on generated
tokens (the recursive span G), weighted by that mass. ``ρ_k`` tracks the share of the original
attribution still on generated tokens; each hop adds ``ρ_{k-1} · a_k`` on observed (prompt)
positions, so ``final = Σ_k contribution_k`` exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from ...base.errors import InputError

Aggregator = Callable[[torch.Tensor], torch.Tensor]  # weights [B, N] -> non-negative scores [B, N]


@dataclass
class Hop:
    """One hop `k` of the recursion: its target weights, its raw attribution over all positions, rho
    (the share still on generated tokens after it) and its contribution to the final prompt attribution."""
    k: int
    weights: torch.Tensor  # [N] target weights of this hop (sum 1)
    raw: torch.Tensor  # [N] a_k over all positions (stop tokens zeroed)
    rho: float  # ρ_k: share of the attribution still on generated tokens after this hop
    contribution: torch.Tensor  # [N] what this hop adds to the final prompt attribution


def recursive_hops(
    aggregate: Aggregator,
    target: torch.Tensor,  # [N] non-negative weights of the hop-0 target
    recursive_mask: torch.Tensor,  # [N] bool, the span G re-attributed by later hops
    observed_mask: torch.Tensor,  # [N] bool, prompt positions that keep their attribution
    hops: int = 1,
    stop_mask: torch.Tensor | None = None,  # [N] bool, tokens with weight 0 in targets and scores
    on_hop: Callable[[int], None] | None = None,
) -> tuple[list[Hop], torch.Tensor]:
    """Hops ``0..hops`` (fewer when no mass is left on G) and the final attribution ``[N]``.

    Args:
        aggregate: The attribution of target weights ``[B, N]`` to non-negative scores ``[B, N]``.
        target: ``[N]`` non-negative weights of the hop-0 target.
        recursive_mask: ``[N]`` bool, the span G re-attributed by later hops.
        observed_mask: ``[N]`` bool, prompt positions that keep their attribution.
        hops: The hops after hop 0.
        stop_mask: ``[N]`` bool, tokens with weight 0 in targets and scores (default: none).
        on_hop: Called with `k` after each hop `k` (progress).

    Returns:
        ``(hops, final)``: each hop run, and the final attribution ``[N]``, the sum of their contributions.

    Raises:
        InputError: When the target span has no token with positive weight (all stop tokens, say).
    """
    stops = torch.zeros_like(target, dtype=torch.bool) if stop_mask is None else stop_mask
    keep = (~stops).float()
    obs = observed_mask.float()
    weights = target.float() * keep
    if weights.sum() <= 0:
        raise InputError("the target span has no token with positive weight (all stop tokens?)")
    weights = weights / weights.sum()
    result: list[Hop] = []
    final = torch.zeros_like(weights)
    rho_prev = 1.0
    for k in range(hops + 1):
        raw = aggregate(weights[None])[0] * keep
        total = float(raw.sum())
        on_g = float(raw[recursive_mask].sum())
        rho = rho_prev * (on_g / total if total > 0 else 0.0)
        contribution = raw * obs * rho_prev
        final += contribution
        result.append(Hop(k=k, weights=weights, raw=raw, rho=rho, contribution=contribution))
        if on_hop:
            on_hop(k)
        if on_g <= 0:  # no mass left on G (the scores are non-negative): a later hop would add nothing
            break
        weights = raw * recursive_mask.float()
        weights = weights / weights.sum()
        rho_prev = rho
    return result, final
