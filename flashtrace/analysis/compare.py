"""Hop depth comparison: how the prompt attribution changes as hops 0, 1, 2, ... are added (one recording).

Depth K means the attribution after hops ``0..K``: ``final_K = Σ_{k≤K} contribution_k``. For each depth
this gives the prompt attribution (normalised over the user's prompt tokens), where hop K's raw
attribution lands (prompt / reasoning / answer), and how much of the target's attribution has reached
the input so far; between consecutive depths, the Spearman rank correlation and top-k overlap of the
prompt ranking; and the convergence depth, from which on the top-k overlap with the next depth stays
at or above 0.9.

`hop_additions` splits the same data by hop: what hop K adds over depth K-1 is hop K's stored
contribution ``ρ_{K-1}·a_K·obs``, on tokens and summed per prompt segment (sentence/line), so the rows
sum to the final attribution exactly. These are the building blocks of `flashtrace.analysis.facts`, which
every view reads; the sentences about them are written in `flashtrace.analysis.story`.

Two different quantities, never one symbol: ρ is the hop mass (share of the target's attribution still
on generated text); agreement between depths is the rank correlation (Spearman).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .schema import Trace, normalised
from ..base.errors import InputError

if TYPE_CHECKING:
    from collections.abc import Sequence

CONVERGED_OVERLAP = 0.9


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties given their average rank."""
    order = np.argsort(values, kind="stable")
    sorted_vals = values[order]
    ranks = np.empty(len(values))
    start = 0
    for end in range(1, len(values) + 1):
        if end == len(values) or sorted_vals[end] != sorted_vals[start]:
            ranks[order[start:end]] = (start + end + 1) / 2  # mean of ranks start+1 .. end
            start = end
    return ranks


def spearman(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float | None:
    """Spearman rank correlation of two equally long score lists (None when either is constant).

    Args:
        a: The first score list (ties get their average rank).
        b: The second score list, as long as `a`.

    Returns:
        The rank correlation, or None when either list is constant or has fewer than two scores.
    """
    ra, rb = _average_ranks(np.asarray(a, dtype=float)), _average_ranks(np.asarray(b, dtype=float))
    if len(ra) < 2 or ra.std() == 0 or rb.std() == 0:
        return None
    return float(np.corrcoef(ra, rb)[0, 1])


def top_k(scores: Sequence[float] | np.ndarray, positions: list[int], k: int) -> list[int]:
    """The `k` positions with the highest score (ties: earlier position first).

    Args:
        scores: A score per position, indexed by position.
        positions: The positions to rank.
        k: How many positions to keep.

    Returns:
        Up to `k` of `positions`, highest score first (ties: earlier position first).
    """
    return sorted(positions, key=lambda i: (-scores[i], i))[:k]


def top_k_overlap(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, positions: list[int],
                  k: int) -> float:
    """``|top_k(a) ∩ top_k(b)| / k`` over `positions` (k capped at their number).

    Args:
        a: The first scores, indexed by position.
        b: The second scores, indexed by position.
        positions: The positions to rank in both.
        k: The size of each top list, capped at the number of `positions`.

    Returns:
        The share of the top-k positions the two score lists have in common, 0..1 (1.0 when there are no
            `positions`).
    """
    k = min(k, len(positions))
    if k == 0:
        return 1.0
    return len(set(top_k(a, positions, k)) & set(top_k(b, positions, k))) / k


@dataclass
class HopDepthComparison:
    """Per-depth data for depths ``0..max_hops`` (see the module docstring)."""

    depths: list[int]
    hops_run: int  # hops actually computed; fewer than max_hops when no mass was left on the reasoning
    k: int
    prompt_positions: list[int]  # ranked positions: user prompt tokens with a score at some depth (no stop tokens)
    prompt_scores: list[list[float]]  # [depth][N]: final_K normalised to sum 1 over the prompt tokens
    mass: list[dict[str, float] | None]  # [depth]: where hop K's raw attribution lands (template counts as prompt)
    reached: list[float]  # [depth]: share of the target's attribution on the input after hops 0..K
    rho: list[float]  # [depth]: ρ_K, the share still on generated tokens
    spearman: list[float | None]  # [depth - 1]: rank correlation between depth K and K+1
    overlap: list[float]  # [depth - 1]: top-k overlap between depth K and K+1
    convergence_depth: int | None  # first K whose top-k overlap with every next depth is >= 0.9
    top: list[list[int]] = field(default_factory=list)  # [depth]: the top-k prompt positions

    def to_dict(self) -> dict:
        """The comparison as plain JSON-ready data (nested dicts and lists).

        Returns:
            A dict with one key per field of the comparison (`depths`, `prompt_scores`, `spearman`, ...), its
                values plain numbers, lists and dicts.
        """
        return asdict(self)


ROLES = ("prompt", "template", "reasoning", "answer")


def role_shares(raw: Sequence[float] | np.ndarray, roles: Sequence[str]) -> dict[str, float]:
    """Share of the attribution vector `raw` on each token role (`ROLES`; `roles` one per position), 0 each when
    `raw` sums to 0: the one role split of every view (the depth comparison merges the template into the prompt).

    Args:
        raw: The attribution vector, one value per position.
        roles: The token role of each position (one of `ROLES`).

    Returns:
        ``{role: share}`` for every role in `ROLES` (0 each when `raw` sums to 0).
    """
    raw, roles = np.asarray(raw, dtype=float), np.asarray(roles)
    total = raw.sum()
    return {r: float(raw[roles == r].sum() / total) if total > 0 else 0.0 for r in ROLES}


def _split(raw, roles) -> dict[str, float]:
    """Share of `raw` on the prompt (template included), the reasoning and the answer (`role_shares`)."""
    shares = role_shares(raw, roles)
    return {"prompt": shares["prompt"] + shares["template"], "reasoning": shares["reasoning"],
            "answer": shares["answer"]}


def _convergence(overlap: list[float]) -> int | None:
    """The first depth from which every consecutive top-k overlap is at least `CONVERGED_OVERLAP`."""
    converged = None
    for d in reversed(range(len(overlap))):
        if overlap[d] < CONVERGED_OVERLAP:
            break
        converged = d
    return converged


def _check_depth_args(trace: Trace, max_hops: int | None, k: int = 1) -> int:
    max_hops = trace.settings.hops if max_hops is None else max_hops
    if not 0 <= max_hops <= trace.settings.hops:
        raise InputError(f"max_hops must be between 0 and the trace's {trace.settings.hops} hops, got {max_hops}")
    if k < 1:
        raise InputError(f"k must be at least 1, got {k}")
    return max_hops


def compare_depths(trace: Trace, k: int = 10, max_hops: int | None = None) -> HopDepthComparison:
    """Hop depth comparison from a trace's stored hops (no recomputation); depths ``0..max_hops``
    (default: the trace's hop setting).

    Args:
        trace: The recording to compare depths of.
        k: The size of the top-k prompt lists compared between consecutive depths (at least 1).
        max_hops: The deepest depth compared, 0 up to the trace's hop setting (None: that setting).

    Returns:
        The per-depth prompt scores, masses, rank correlations, top-k overlaps and convergence depth.

    Raises:
        InputError: When `max_hops` is outside 0..the trace's hops or `k` is below 1.
    """
    max_hops = _check_depth_args(trace, max_hops, k)
    roles = [t.role for t in trace.tokens]
    user_prompt = trace.positions("prompt")
    depths = list(range(max_hops + 1))
    shares = prompt_shares(_added(trace, max_hops), user_prompt)  # [depths, P]
    scores = []
    for row in shares:
        full = np.zeros(trace.n_tokens)
        full[user_prompt] = row
        scores.append(full.tolist())
    mass = [_split(trace.hops[d].raw, roles) if d < len(trace.hops) else None for d in depths]
    rho = [trace.hops[min(d, len(trace.hops) - 1)].rho for d in depths]
    ranked = [i for i in user_prompt if any(s[i] > 0 for s in scores)] or user_prompt
    corr = [spearman([scores[d][i] for i in ranked], [scores[d + 1][i] for i in ranked]) for d in depths[:-1]]
    overlap = [top_k_overlap(scores[d], scores[d + 1], ranked, k) for d in depths[:-1]]
    return HopDepthComparison(depths=depths, hops_run=min(len(trace.hops) - 1, max_hops), k=k,
                              prompt_positions=ranked, prompt_scores=scores, mass=mass,
                              reached=reached_input(trace, max_hops), rho=rho, spearman=corr, overlap=overlap,
                              convergence_depth=_convergence(overlap), top=[top_k(s, ranked, k) for s in scores])


def input_shares(trace: Trace, max_hops: int | None = None, roles: tuple[str, ...] = ("template", "prompt")
                 ) -> list[float]:
    """Per hop ``0..max_hops``: the share of the target's attribution that hop k moves onto the input
    (chat template + prompt; `roles` for a part of it), ``ρ_{k-1} · Σ_input a_k / Σ_all a_k`` (ρ_{-1} = 1);
    0 for hops not run.

    Args:
        trace: The recording to read the stored hops of.
        max_hops: The last hop (None: the trace's hop setting).
        roles: The token roles counted as the input (default the chat template and the prompt).

    Returns:
        One share per hop ``0..max_hops`` (0.0 for a hop not run).
    """
    max_hops = trace.settings.hops if max_hops is None else max_hops
    observed = np.asarray([t.role in roles for t in trace.tokens])
    shares, rho_prev = [], 1.0
    for k in range(max_hops + 1):
        if k >= len(trace.hops):
            shares.append(0.0)
            continue
        raw = np.asarray(trace.hops[k].raw)  # [N]
        total = raw.sum()
        shares.append(float(rho_prev * raw[observed].sum() / total) if total > 0 else 0.0)
        rho_prev = trace.hops[k].rho
    return shares


def reached_input(trace: Trace, max_hops: int | None = None, roles: tuple[str, ...] = ("template", "prompt")
                  ) -> list[float]:
    """Per depth K: the share of the target's attribution that has reached the input after hops 0..K.

    With the default recursive span (reasoning + answer) and the whole input this is ``1 - ρ_K``.

    Args:
        trace: The recording to read the stored hops of.
        max_hops: The deepest depth (None: the trace's hop setting).
        roles: The token roles counted as the input; with `roles`, the share is that part of it:
            ``("prompt",)`` leaves the chat template out.

    Returns:
        One cumulative share per depth ``0..max_hops`` (the running sum of `input_shares`).
    """
    return [float(v) for v in np.cumsum(input_shares(trace, max_hops, roles))]


@dataclass
class HopAdditions:
    """What each hop adds to the prompt attribution, per token.

    ``added[k]`` is hop k's stored contribution ``ρ_{k-1}·a_k·obs`` over all positions (raw units, zeros
    for hops that were not run), so ``Σ_k added[k]`` is the trace's final attribution. ``unit`` is the
    final attribution summed over the user's prompt tokens: dividing by it gives shares of what the
    Explore page shows, on one scale for every hop."""

    hops: list[int]  # 0..max_hops
    prompt_positions: list[int]  # the user's prompt tokens in text order
    added: list[list[float]]  # [hop][N]
    unit: float
    input_share: list[float]  # [hop]: share of the target's attribution this hop moved onto the input
    reached: list[float]  # [depth]: cumulative input_share
    rho: list[float]  # [depth]: ρ_K, the share still on generated text after hops 0..K
    target_label: str = "answer"  # "answer" when the target is the answer span or its value, else "target"
    reached_prompt: list[float] = field(default_factory=list)  # [depth]: the part of `reached` on the prompt

    def to_dict(self) -> dict:
        """The additions as plain JSON-ready data (nested dicts and lists).

        Returns:
            A dict with one key per field of the additions (`hops`, `added`, `unit`, ...), its values plain
                numbers, strings and lists.
        """
        return asdict(self)


def _targets_the_answer(trace: Trace) -> bool:
    """Whether the trace's target is its answer span or the answer's value."""
    return tuple(trace.settings.target) in (tuple(trace.spans.answer or ()), tuple(trace.spans.value or ()))


def _added(trace: Trace, max_hops: int) -> np.ndarray:
    """Each hop's stored contribution over all positions, ``[max_hops + 1, N]``: zeros for a hop that was not
    run, so the cumulative sum repeats the last depth reached."""
    n = trace.n_tokens
    return np.asarray([trace.hops[k].contribution if k < len(trace.hops) else [0.0] * n
                       for k in range(max_hops + 1)], dtype=float).reshape(max_hops + 1, n)


def prompt_shares(added: np.ndarray, positions: list[int]) -> np.ndarray:
    """After hops ``0..k`` for each k: the cumulative attribution on the user's prompt `positions`, as shares
    summing to 1 (0 each where it sums to 0), ``[depths, len(positions)]``: the one per-depth prompt
    ranking of the depth comparison and of `facts`.

    Args:
        added: Each hop's contribution over all positions, ``[depths, N]``.
        positions: The user's prompt positions.

    Returns:
        The per-depth shares, ``[depths, len(positions)]``, each row summing to 1 (or all 0).
    """
    return row_shares(np.cumsum(added, axis=0)[:, positions] if len(positions) else np.zeros((len(added), 0)))


def row_shares(rows: np.ndarray) -> np.ndarray:
    """Each row of `rows` scaled to sum 1; a row without mass stays zero.

    Args:
        rows: A 2-D array, one row per depth (or any other grouping).

    Returns:
        A new array of the same shape, each row divided by its sum (zeros where the sum is not positive).
    """
    total = rows.sum(axis=1, keepdims=True)
    return np.divide(rows, total, out=np.zeros_like(rows), where=total > 0)


def hop_additions(trace: Trace, max_hops: int | None = None) -> HopAdditions:
    """`HopAdditions` from a trace's stored hops (no recomputation), hops ``0..max_hops``.

    Args:
        trace: The recording to read the stored hops of.
        max_hops: The last hop, 0 up to the trace's hop setting (None: that setting).

    Returns:
        What each hop adds per token, with the unit, the input shares, the reached shares and ρ per depth.

    Raises:
        InputError: When `max_hops` is outside 0..the trace's hops.
    """
    max_hops = _check_depth_args(trace, max_hops)
    added = _added(trace, max_hops)  # [hops, N]
    user_prompt = trace.positions("prompt")
    unit = float(added.sum(axis=0)[user_prompt].sum()) if user_prompt else 0.0
    rho = [trace.hops[min(k, len(trace.hops) - 1)].rho for k in range(max_hops + 1)]
    return HopAdditions(hops=list(range(max_hops + 1)), prompt_positions=user_prompt, added=added.tolist(),
                        unit=unit, input_share=input_shares(trace, max_hops), reached=reached_input(trace, max_hops),
                        reached_prompt=reached_input(trace, max_hops, ("prompt",)),
                        rho=rho, target_label="answer" if _targets_the_answer(trace) else "target")


__all__ = ["HopDepthComparison", "HopAdditions", "compare_depths", "hop_additions", "prompt_shares", "row_shares", "input_shares",
           "reached_input", "spearman", "top_k", "top_k_overlap", "CONVERGED_OVERLAP"]
