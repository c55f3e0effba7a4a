"""CPU kernel for the attention aggregation's inner step: ``out[h, b, c0 + j] += Σ_i coef[b, i] ·
exp(logit[h, i, j] − lse[h, i])`` over each row's visible columns, in one pass over the logits.

Torch would take four passes over each block of logits (subtract, exp, mask, weighted sum); this
kernel reads each logit once and skips the masked columns by bounds. Its exponential is a float32
polynomial (Cody–Waite range reduction, degree-7 Taylor, exponent bits set directly), within
2.5e-7 relative of ``exp`` on [-80, 0.5] and vectorisable by LLVM (numba's ``math.exp`` is not,
without Intel's SVML).

Every parallel kernel of the package has a serial, GIL-free twin (`SERIAL`): a sweep that runs layers
on several Python threads calls those inside `serial_kernels` (numba's pool would take one at a time).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numba
import numpy as np
import torch
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

if TYPE_CHECKING:
    from typing import Callable, Iterator

# numba's own thread pool for every kernel of the package (this module and kernels/proximity.py): its
# OpenMP layer would share libgomp with torch and reset torch's thread count
numba.config.THREADING_LAYER = "workqueue"

TILE = 256  # columns per parallel task

# numba's workqueue layer aborts the process when two Python threads run parallel kernels at once
# ("Concurrent access has been detected"): every parallel kernel of the package runs under this lock.
KERNEL_LOCK = threading.Lock()


SERIAL: dict = {}  # parallel kernel -> its serial twin (same loop body, ``nogil``): `serial_kernels`
_local = threading.local()


def run_kernel(kernel: Callable[..., None], *args: np.ndarray | int) -> None:
    """Call a numba ``parallel=True`` kernel, one thread at a time (see `KERNEL_LOCK`); inside
    `serial_kernels`, its serial twin instead, without the lock (twins run side by side).

    Args:
        kernel: A numba ``parallel=True`` kernel with a serial twin in `SERIAL`.
        *args: The kernel's arguments (arrays and integers), passed on as they are.
    """
    if in_serial_kernels():
        SERIAL[kernel](*args)
        return
    with KERNEL_LOCK:
        numba.set_num_threads(max(1, min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS)))
        kernel(*args)


def in_serial_kernels() -> bool:
    """Whether this thread is inside `serial_kernels` (kernels then run their serial twins).

    Returns:
        True inside `serial_kernels` in this thread, else False.
    """
    return getattr(_local, "serial", False)


@contextmanager
def serial_kernels() -> Iterator[None]:
    """In this thread, `run_kernel` calls each kernel's single-threaded twin: for work split over
    Python threads (``span_aggregate``'s ``layer_threads``), where one numba pool would take one kernel at a time.

    Yields:
        None, once: inside the block this thread runs the serial twins; on leaving, what it ran before.
    """
    before = getattr(_local, "serial", False)
    _local.serial = True
    try:
        yield
    finally:
        _local.serial = before


@intrinsic
def _float_from_bits(typingctx, bits):  # pragma: no cover - compiled
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())

    return types.float32(types.int32), codegen


@numba.njit(inline="always", fastmath=True)
def fast_exp(x: float) -> float:  # pragma: no cover - compiled
    """``exp(x)`` for float32 ``x ≤ ~88``; values under -87 give ~1e-38 instead of a denormal or 0.

    Args:
        x: The exponent, a float32 at most ~88 (values under -87 count as -87).

    Returns:
        ``exp(x)`` as a float32, within 2.5e-7 relative on [-80, 0.5].
    """
    x = max(x, np.float32(-87.0))
    k = np.floor(x * np.float32(1.4426950408889634) + np.float32(0.5))
    r = x - k * np.float32(0.693145751953125) - k * np.float32(1.428606765330187e-06)  # |r| ≤ ln2 / 2
    p = np.float32(1.0 / 5040)
    p = p * r + np.float32(1.0 / 720)
    p = p * r + np.float32(1.0 / 120)
    p = p * r + np.float32(1.0 / 24)
    p = p * r + np.float32(1.0 / 6)
    p = p * r + np.float32(0.5)
    p = p * r + np.float32(1.0)
    p = p * r + np.float32(1.0)
    return p * _float_from_bits((np.int32(k) + np.int32(127)) << np.int32(23))


@numba.njit(fastmath=True)
def _exp_task(task, logits, lse, coef, starts, stops, i0, out, c0, tile):  # pragma: no cover - compiled
    """One task of `exp_accumulate`: head ``task // n_tiles``, the columns of tile ``task % n_tiles``."""
    n_heads, r, w = logits.shape
    n_spans = coef.shape[0]
    n_tiles = (w + tile - 1) // tile
    h = task // n_tiles
    t0 = (task % n_tiles) * tile
    t1 = min(t0 + tile, w)
    for i in range(r):
        lo = max(t0, starts[i0 + i] - c0)
        hi = min(t1, stops[i0 + i] - c0)
        if lo >= hi:
            continue
        m = lse[h, i0 + i]
        src = logits[h, i, lo:hi]
        for b in range(n_spans):
            c = coef[b, i0 + i]
            if c == 0.0:
                continue
            dst = out[h, b, c0 + lo : c0 + hi]
            for j in range(src.size):  # from 0 over 1-D slices: no negative-index wrap, so LLVM vectorises
                dst[j] += c * fast_exp(src[j] - m)


@numba.njit(parallel=True, fastmath=True, cache=True)
def exp_accumulate(logits: np.ndarray, lse: np.ndarray, coef: np.ndarray, starts: np.ndarray, stops: np.ndarray,
                   i0: int, out: np.ndarray, c0: int, tile: int) -> None:  # pragma: no cover - compiled
    """Block ``logits [H, r, w]`` of columns ``c0..c0+w-1`` for the rows ``i0..i0+r-1`` of ``lse [H, R]``,
    ``coef [B, R]`` and of the visible column range ``starts[i] ≤ col < stops[i]`` (absolute positions);
    ``out [H, B, n_src]`` accumulated in place. Tasks (head, column tile) write disjoint columns.

    Args:
        logits: The block of logits ``[H, r, w]``, float32, for columns ``c0..c0+w-1``.
        lse: The log-sum-exp of every row ``[H, R]``, float32.
        coef: Each span's weight of every row ``[B, R]``, float32.
        starts: Each row's first visible column ``[R]`` (absolute position).
        stops: Each row's end of the visible columns ``[R]`` (absolute position, excluded).
        i0: The row of `lse`, `coef`, `starts` and `stops` that the block's first row is.
        out: The sums ``[H, B, n_src]``, float32, accumulated in place.
        c0: The absolute position of the block's first column.
        tile: Columns per parallel task (`TILE`).
    """
    n_tasks = logits.shape[0] * ((logits.shape[2] + tile - 1) // tile)
    for task in numba.prange(n_tasks):
        _exp_task(task, logits, lse, coef, starts, stops, i0, out, c0, tile)


@numba.njit(nogil=True, fastmath=True, cache=True)
def exp_accumulate_serial(logits: np.ndarray, lse: np.ndarray, coef: np.ndarray, starts: np.ndarray,
                          stops: np.ndarray, i0: int, out: np.ndarray, c0: int,
                          tile: int) -> None:  # pragma: no cover - compiled
    """`exp_accumulate` on the calling thread, without the GIL.

    Args:
        logits: The block of logits ``[H, r, w]``, float32, for columns ``c0..c0+w-1``.
        lse: The log-sum-exp of every row ``[H, R]``, float32.
        coef: Each span's weight of every row ``[B, R]``, float32.
        starts: Each row's first visible column ``[R]`` (absolute position).
        stops: Each row's end of the visible columns ``[R]`` (absolute position, excluded).
        i0: The row of `lse`, `coef`, `starts` and `stops` that the block's first row is.
        out: The sums ``[H, B, n_src]``, float32, accumulated in place.
        c0: The absolute position of the block's first column.
        tile: Columns per task (`TILE`).
    """
    n_tasks = logits.shape[0] * ((logits.shape[2] + tile - 1) // tile)
    for task in range(n_tasks):
        _exp_task(task, logits, lse, coef, starts, stops, i0, out, c0, tile)


SERIAL[exp_accumulate] = exp_accumulate_serial
