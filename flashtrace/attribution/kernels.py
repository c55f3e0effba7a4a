"""Proximity: the plain formula (`proximity`) and the kernel for many spans,
``p[b, h, j] = max(0, ‖y_b‖₁ − ‖y_b − ᾱ[b, h, j]·f[h, j]‖₁)``.

On the CPU a fused numba kernel reads each value vector once for all spans and sums the
per-dimension differences ``|y_d| − |y_d − z_d|`` (small terms, so no cancellation); elsewhere (GPU)
the same formula runs as torch operations.
"""

from __future__ import annotations

import numba
import numpy as np
import torch

# numba's own thread pool: its OpenMP layer would share libgomp with torch and reset torch's thread count
numba.config.THREADING_LAYER = "workqueue"


@numba.njit(parallel=True, fastmath=True, cache=True)
def _proximity_cpu(f, abar, y, out):  # pragma: no cover - compiled
    n_heads, n_src, d_model = f.shape
    n_spans = y.shape[0]
    for hj in numba.prange(n_heads * n_src):
        h = hj // n_src
        j = hj % n_src
        for b in range(n_spans):
            a = abar[b, h, j]
            if a == 0.0:
                out[b, h, j] = 0.0
                continue
            acc = np.float32(0.0)
            for d in range(d_model):
                yd = y[b, d]
                acc += abs(yd) - abs(yd - a * f[h, j, d])
            out[b, h, j] = max(acc, np.float32(0.0))


def proximity(part: torch.Tensor, whole: torch.Tensor) -> torch.Tensor:
    """Proximity of a part to a whole (ALTI / IFR), ``max(0, ‖y‖₁ − ‖y − z‖₁)`` over the last dim:
    ``[..., D], [..., D] → [...]``; broadcasts like ``whole - part``."""
    return (whole.abs().sum(-1) - (whole - part).abs().sum(-1)).clamp_min(0)


def _proximity_torch(f: torch.Tensor, abar: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    parts = abar[..., None] * f[None]  # [B, H, c, D]
    diff = y.abs()[:, None, None, :] - (y[:, None, None, :] - parts).abs()
    return diff.sum(-1).clamp_min_(0)


def head_proximities(f: torch.Tensor, abar: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``f [H, c, D]`` head values, ``abar [B, H, c]`` aggregated attention, ``y [B, D]`` span targets
    → proximities ``[B, H, c]`` (float32)."""
    if f.device.type != "cpu":
        return _proximity_torch(f, abar, y)
    numba.set_num_threads(max(1, min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS)))
    out = np.empty(abar.shape, dtype=np.float32)
    _proximity_cpu(f.detach().contiguous().numpy(), abar.detach().contiguous().numpy(),
                   y.detach().float().contiguous().numpy(), out)
    return torch.from_numpy(out)


def warm_up() -> None:
    """Load the CPU kernel (numba's on-disk cache, or compile it once) and start numba's threads, so
    that the first attribution in a process does not pay it (≈ 0.35 s measured). Called at model load."""
    head_proximities(torch.zeros(1, 2, 4), torch.ones(1, 1, 2), torch.ones(1, 4))
