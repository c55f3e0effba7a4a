"""CPU kernel for one row through a float32 linear layer, ``out = W · x``: a generation step's every product.

A generation step multiplies one hidden vector by every weight matrix, so it is bound by how fast the weights
stream from memory. This kernel gives each thread one contiguous range of rows of ``W``, four rows at a time
(four streams from memory), summed in float32 with vectorised multiply-adds. Over the 1.5B model's own weights
(6.2 GB, nothing cached) on the 2-core reference machine it read 18.5 GB/s on one thread and 20.3 on two, where
torch's single-row product read 15.9 on one thread and a plain sum 31.3 on two (best of 5). Generation uses it on
one thread (`models.decode`: the second thread did not pay in whole generation steps).

The sums run in another order than torch's, so a step's logits differ from torch's in the last bits (within
1e-5 relative on the tests' models); greedy generation can then part from transformers' at an exact near-tie.
"""

from __future__ import annotations

import numba
import numpy as np

from .softmax import KERNEL_LOCK, SERIAL, in_serial_kernels


@numba.njit(parallel=True, fastmath=True, cache=True)
def _gemv(w, x, out, threads):  # pragma: no cover - compiled
    n = w.shape[0]
    for t in numba.prange(threads):
        _rows(w, x, out, t * n // threads, (t + 1) * n // threads)


@numba.njit(nogil=True, fastmath=True, cache=True)
def _gemv_serial(w, x, out, threads):  # pragma: no cover - compiled
    """`_gemv` on the calling thread, without the GIL (`threads` is ignored)."""
    _rows(w, x, out, 0, w.shape[0])


@numba.njit(inline="always", fastmath=True)
def _rows(w, x, out, start, stop):  # pragma: no cover - compiled
    """Rows ``start..stop-1`` four at a time (four streams from memory at once), then the rest one by one."""
    k = w.shape[1]
    i = start
    while i + 4 <= stop:
        a0 = a1 = a2 = a3 = np.float32(0.0)
        for j in range(k):
            xj = x[j]
            a0 += w[i, j] * xj
            a1 += w[i + 1, j] * xj
            a2 += w[i + 2, j] * xj
            a3 += w[i + 3, j] * xj
        out[i], out[i + 1], out[i + 2], out[i + 3] = a0, a1, a2, a3
        i += 4
    for r in range(i, stop):
        acc = np.float32(0.0)
        for j in range(k):
            acc += w[r, j] * x[j]
        out[r] = acc


SERIAL[_gemv] = _gemv_serial


def gemv(w: np.ndarray, x: np.ndarray, out: np.ndarray, threads: int = 1) -> np.ndarray:
    """``out[i] = Σ_j w[i, j] · x[j]`` for float32 C-contiguous ``w`` ``[n, k]``, ``x`` ``[k]``, ``out`` ``[n]``, on
    `threads` threads of numba's pool.

    Args:
        w: The matrix ``[n, k]``, float32 and C-contiguous.
        x: The vector ``[k]``, float32 and C-contiguous.
        out: Where the product is written, ``[n]`` float32 and C-contiguous.
        threads: Threads of numba's pool (one kernel at a time: `softmax.KERNEL_LOCK`); one thread runs the serial
            twin without the lock.

    Returns:
        `out`, holding the product.
    """
    if threads <= 1 or in_serial_kernels():
        _gemv_serial(w, x, out, 1)
        return out
    with KERNEL_LOCK:
        if numba.get_num_threads() != threads:
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        _gemv(w, x, out, numba.get_num_threads())
    return out


def warm_up() -> None:
    """Load or compile the kernel and its twin (numba's on-disk cache), so a first generation step does not pay it."""
    w, x = np.ones((5, 8), np.float32), np.ones(8, np.float32)
    gemv(w, x, np.empty(5, np.float32), threads=2)
    gemv(w, x, np.empty(5, np.float32), threads=1)


__all__ = ["gemv", "warm_up"]
