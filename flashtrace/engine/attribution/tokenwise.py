"""Token-wise IFR (METHOD.md §2): one attribution row per target token, the baseline FlashTrace beats.

Row ``i`` is exactly the span aggregate of the one-token span ``{i}``; a span's token-wise score is
the weighted sum of its row-normalised rows. ``batched=True`` computes many rows per sweep (fair
comparison); ``batched=False`` does one row at a time (the paper's timing protocol).
"""

from __future__ import annotations

from typing import Callable

import torch

from ..models.recording import Recording
from .span import DEFAULT_BUDGET, normalise_weights, span_aggregate


def tokenwise_rows(
    recording: Recording,
    targets: torch.Tensor | list[int],
    *,
    batched: bool = True,
    budget_bytes: int = DEFAULT_BUDGET,
    on_rows: Callable[[int], None] | None = None,
    value_kernel: bool = True,
) -> torch.Tensor:
    """IFR rows ``[M, N]`` for target positions `targets` (each row: Σ over layers, not normalised);
    `value_kernel` as in `span_aggregate`.

    Args:
        recording: The forward pass's recording.
        targets: The ``M`` target positions.
        batched: Whether many rows share a sweep (as many as `budget_bytes` holds), else one row at a time.
        budget_bytes: The memory a sweep may use.
        on_rows: Called with the number of rows after each sweep (progress).
        value_kernel: As in `span_aggregate`: proximities from the values on CPU tensors.

    Returns:
        ``[M, N]`` rows, one per target position, not normalised.
    """
    targets = torch.as_tensor(targets, dtype=torch.long).flatten()
    n = recording.n_tokens
    layer = recording.layers[0]
    per_row = 4 * n * (layer.n_heads * 3 + layer.x_prev.shape[1])
    group = max(1, budget_bytes // per_row) if batched else 1
    rows = torch.empty(targets.numel(), n)
    for start in range(0, targets.numel(), group):
        chunk = targets[start : start + group]
        onehot = torch.zeros(chunk.numel(), n)
        onehot[torch.arange(chunk.numel()), chunk] = 1.0
        rows[start : start + chunk.numel()] = span_aggregate(recording, onehot, budget_bytes=budget_bytes,
                                                                    value_kernel=value_kernel).scores
        if on_rows:
            on_rows(chunk.numel())
    return rows


def tokenwise_aggregate(recording: Recording, weights: torch.Tensor | list, *, batched: bool = True,
                        budget_bytes: int = DEFAULT_BUDGET, on_rows: Callable[[int], None] | None = None
                        ) -> torch.Tensor:
    """Token-wise IFR for weight vectors ``[B, N]``: ``Σ_i w_i · row_i / Σ row_i`` → ``[B, N]``.

    Args:
        recording: The forward pass's recording.
        weights: ``[B, N]`` or ``[N]`` non-negative target weights (normalised to sum 1 per vector).
        batched: Whether many rows share a sweep, else one row at a time.
        budget_bytes: The memory a sweep may use.
        on_rows: Called with the number of rows after each sweep (progress).

    Returns:
        ``[B, N]`` scores.

    Raises:
        InputError: When `weights` are not valid weight vectors (`normalise_weights`).
    """
    w = normalise_weights(weights, recording.n_tokens)
    targets = torch.nonzero(w.sum(0) > 0).flatten()
    rows = tokenwise_rows(recording, targets, batched=batched, budget_bytes=budget_bytes, on_rows=on_rows)
    rows = rows / rows.sum(1, keepdim=True).clamp_min(1e-30)
    return w[:, targets] @ rows
