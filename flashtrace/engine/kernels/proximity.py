"""Proximity: the plain formula (`proximity`) and the kernels for many spans,
``p[b, h, j] = max(0, ‖y_b‖₁ − ‖y_b − ᾱ[b, h, j]·f[h, j]‖₁)`` with head values ``f[h, j] = v[kv(h), j]·W_O[h]``.

On the CPU, `value_proximities` never forms ``f`` (METHOD.md §3 costs it at N·D² per layer). Per
dimension, with ``s = sign(y_d)`` (+1 at 0) and ``w = s·z_d``, ``|y_d| − |y_d − z_d| = w − 2·max(0, w − |y_d|)``,
so the proximity is the linear part ``ᾱ·v·(W_O s)`` (a ``d_v``-long dot product) minus a correction
that only dimensions with ``ᾱ|f_d| > |y_d|`` can carry. Cauchy–Schwarz, ``|f_d| ≤ ‖v‖·‖W_O[:, d]‖``,
bounds which those can be: the dimensions are sorted by ``|y_d| / ‖W_O[:, d]‖`` once per span and head,
and only the prefix below ``ᾱ‖v‖`` is computed exactly. The result is the same formula, not an
approximation. `head_proximities` takes ready head values: the torch formula on GPUs, a numba kernel
on the CPU (the paper protocol's baseline, `span_aggregate(..., value_kernel=False)`).
"""

from __future__ import annotations

from contextlib import nullcontext

import numba
import numpy as np
import torch

# (importing softmax also sets numba's threading layer)
from .softmax import SERIAL, TILE, exp_accumulate, run_kernel, serial_kernels


@numba.njit(fastmath=True)
def _proximity_task(hj, f, abar, y, out):  # pragma: no cover - compiled
    n_src = f.shape[1]
    h = hj // n_src
    j = hj % n_src
    for b in range(y.shape[0]):
        a = abar[b, h, j]
        if a == 0.0:
            out[b, h, j] = 0.0
            continue
        acc = np.float32(0.0)
        for d in range(f.shape[2]):
            yd = y[b, d]
            acc += abs(yd) - abs(yd - a * f[h, j, d])
        out[b, h, j] = max(acc, np.float32(0.0))


@numba.njit(parallel=True, fastmath=True, cache=True)
def _proximity_cpu(f, abar, y, out):  # pragma: no cover - compiled
    for hj in numba.prange(f.shape[0] * f.shape[1]):
        _proximity_task(hj, f, abar, y, out)


@numba.njit(nogil=True, fastmath=True, cache=True)
def _proximity_cpu_serial(f, abar, y, out):  # pragma: no cover - compiled
    """`_proximity_cpu` on the calling thread, without the GIL."""
    for hj in range(f.shape[0] * f.shape[1]):
        _proximity_task(hj, f, abar, y, out)


@numba.njit(fastmath=True)
def _value_proximity_task(hj, v, w_t, v_norm, u, sign, y_abs, order, bound, abar, rep, out):  # pragma: no cover
    d_model, d_v = w_t.shape[1], w_t.shape[2]
    n_src = abar.shape[2]
    h = hj // n_src
    j = hj % n_src
    kv = h // rep
    for b in range(abar.shape[0]):
        a = abar[b, h, j]
        if a == 0.0:
            out[b, h, j] = 0.0
            continue
        linear = np.float32(0.0)
        for e in range(d_v):
            linear += v[kv, j, e] * u[b, h, e]
        reach = a * v_norm[kv, j]  # ≥ ᾱ|f_d| / ‖W_O[:, d]‖ for every d
        excess = np.float32(0.0)
        for m in range(d_model):
            if bound[b, h, m] >= reach:
                break
            d = order[b, h, m]
            f = np.float32(0.0)
            for e in range(d_v):
                f += v[kv, j, e] * w_t[h, d, e]
            w = a * f * sign[b, d]
            if w > y_abs[b, d]:
                excess += w - y_abs[b, d]
        out[b, h, j] = max(a * linear - 2 * excess, np.float32(0.0))


@numba.njit(parallel=True, fastmath=True, cache=True)
def _value_proximity_cpu(v, w_t, v_norm, u, sign, y_abs, order, bound, abar, rep, out):  # pragma: no cover - compiled
    for hj in numba.prange(w_t.shape[0] * abar.shape[2]):
        _value_proximity_task(hj, v, w_t, v_norm, u, sign, y_abs, order, bound, abar, rep, out)


@numba.njit(nogil=True, fastmath=True, cache=True)
def _value_proximity_cpu_serial(v, w_t, v_norm, u, sign, y_abs, order, bound, abar, rep, out):  # pragma: no cover
    """`_value_proximity_cpu` on the calling thread, without the GIL."""
    for hj in range(w_t.shape[0] * abar.shape[2]):
        _value_proximity_task(hj, v, w_t, v_norm, u, sign, y_abs, order, bound, abar, rep, out)


SERIAL[_proximity_cpu] = _proximity_cpu_serial
SERIAL[_value_proximity_cpu] = _value_proximity_cpu_serial


def proximity(part: torch.Tensor, whole: torch.Tensor) -> torch.Tensor:
    """Proximity of a part to a whole (ALTI / IFR), ``max(0, ‖y‖₁ − ‖y − z‖₁)`` over the last dim:
    ``[..., D], [..., D] → [...]``; broadcasts like ``whole - part``.

    Args:
        part: The part ``z``, ``[..., D]``.
        whole: The whole ``y``, ``[..., D]``.

    Returns:
        The proximities ``[...]`` (the broadcast shape without the last dim).
    """
    return (whole.abs().sum(-1) - (whole - part).abs().sum(-1)).clamp_min(0)


def _proximity_torch(f: torch.Tensor, abar: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    parts = abar[..., None] * f[None]  # [B, H, c, D]
    diff = y.abs()[:, None, None, :] - (y[:, None, None, :] - parts).abs()
    return diff.sum(-1).clamp_min_(0)


def head_proximities(f: torch.Tensor, abar: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``f [H, c, D]`` head values, ``abar [B, H, c]`` aggregated attention, ``y [B, D]`` span targets
    → proximities ``[B, H, c]`` (float32). On the CPU a numba kernel reads each head value once for all
    spans (the formulation of IFR and the authors' code, kept as the paper protocol's baseline).

    Args:
        f: The head values ``[H, c, D]``.
        abar: The aggregated attention ``[B, H, c]``.
        y: The span targets ``[B, D]``.

    Returns:
        The proximities ``[B, H, c]``, float32 (on `f`'s device; on the CPU from the numba kernel).
    """
    if f.device.type != "cpu":
        return _proximity_torch(f, abar, y)
    out = np.empty(abar.shape, dtype=np.float32)
    run_kernel(_proximity_cpu, f.detach().float().contiguous().numpy(), abar.detach().float().contiguous().numpy(),
               y.detach().float().contiguous().numpy(), out)
    return torch.from_numpy(out)


SAFETY = 1e-6  # the sorted bounds are lowered by this fraction so float rounding never skips a dimension


SPAN_CHUNK_ELEMENTS = 2**22  # spans per kernel call are capped so their sorted orders stay ~50 MB


def value_proximities(v: torch.Tensor, w_o: torch.Tensor, abar: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The proximities of `head_proximities` from the values ``v [KVH, c, d_v]`` and the per-head output
    projection ``w_o [H, d_v, D]`` (CPU): ``abar [B, H, c]``, ``y [B, D]`` → ``[B, H, c]`` float32.

    Args:
        v: The values ``[KVH, c, d_v]``.
        w_o: The per-head output projection ``[H, d_v, D]``.
        abar: The aggregated attention ``[B, H, c]``.
        y: The span targets ``[B, D]``.

    Returns:
        The proximities ``[B, H, c]``, float32, on the CPU.
    """
    n_heads, _, d_model = w_o.shape
    w64 = w_o.detach().double().cpu()
    w_t = w64.float().transpose(1, 2).contiguous().numpy()  # [H, D, d_v]: one output dimension's column is contiguous
    col_norm = w64.pow(2).sum(1).sqrt()  # [H, D]
    v = v.detach().float().cpu().contiguous()
    v_norm = v.double().pow(2).sum(-1).sqrt().float().numpy()
    y = y.detach().float().cpu()
    abar = abar.detach().float().cpu().contiguous()
    out = np.empty(abar.shape, dtype=np.float32)
    step = max(1, SPAN_CHUNK_ELEMENTS // (n_heads * d_model))
    for b0 in range(0, y.shape[0], step):
        yb = y[b0 : b0 + step]
        sign = torch.where(yb >= 0, 1.0, -1.0)
        u = torch.einsum("hed,bd->bhe", w64, sign.double()).float()  # W_O s per span and head
        ratio = yb.abs().double()[:, None, :] / col_norm[None]  # [b, H, D]; a zero column never reaches
        bound, order = torch.sort(ratio.nan_to_num(nan=float("inf")), dim=-1)
        run_kernel(_value_proximity_cpu, v.numpy(), w_t, v_norm, u.contiguous().numpy(), sign.numpy(), yb.abs().numpy(),
                   order.int().contiguous().numpy(), (bound * (1 - SAFETY)).float().numpy(),
                   abar[b0 : b0 + step].numpy(), n_heads // v.shape[0], out[b0 : b0 + step])
    return torch.from_numpy(out)


# The warm-up's arguments: the smallest of each kind an attribution passes. numba compiles one version per
# argument types (dtype, dimensions, layout), so their sizes and values do not matter, only their kinds
# (tests/attribution/test_warm_up.py compares them with an attribution's calls).
_WARM_VALUE = (torch.ones(1, 2, 3), torch.ones(2, 3, 4), torch.ones(1, 2, 2), torch.ones(1, 4))
_WARM_EXP = (np.zeros((1, 1, 2), np.float32), np.zeros((1, 1), np.float32), np.ones((1, 1), np.float32),
             np.zeros(1, np.int64), np.ones(1, np.int64), 0, np.zeros((1, 1, 2), np.float32), 0, TILE)


def warm_up() -> None:
    """Load the CPU kernels and their serial twins (numba's on-disk cache, or compile them once) and start
    numba's threads, so that the first attribution in a process does not pay it (≈ 0.35 s measured).
    Called at model load."""
    for serial in (False, True):
        with serial_kernels() if serial else nullcontext():
            value_proximities(*_WARM_VALUE)
            run_kernel(exp_accumulate, *_WARM_EXP)
