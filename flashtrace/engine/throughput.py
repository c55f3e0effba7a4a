"""How fast this machine multiplies matrices, measured in the process, so that time estimates follow the
machine they run on instead of the one they were calibrated on.

Processors of the same family differ several-fold at exactly the work a trace does: on two 2-core machines of
this project, float32 runs of the same trace differed ~2× and a bfloat16 scoring copy was 2.3× faster than
float32 on one (AMX) and 1.5× slower on the other (AVX-512 BF16 alone). `estimate` therefore multiplies its
calibrated throughputs (one torch thread on the reference machine) by `machine_speed`, this machine's one-thread
float32 matrix-product throughput against the reference machine's, and `scoring.speedup` asks
`matmul_flops_per_s` how much faster another precision's products are here.

The measurement is the best of `REPEATS` products of a SmolLM2-sized linear layer (`SHAPE`) on one torch thread:
~30 ms per precision on a 2-core machine, taken the first time an estimate needs it and again at most once a
minute, keeping the best. One thread, because several threads wait on each other when another process holds a
core: with two busy processes on 2 cores, two threads measured 0.08× the idle speed and one thread 0.98×
(best of 12). The machine's load is `cpu_slowdown`'s business, not this one's.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Iterator

SHAPE = (256, 576, 1536)  # rows × inputs × outputs: SmolLM2-135M's MLP up-projection over 256 tokens
REPEATS = 12
# `matmul_flops_per_s("float32")` on the machine the estimate's throughputs describe. On the 2 Dec 2026 machine
# (2 cores, AMX) it measured 2.0-2.1e11, and idle traces, generations and methods comparisons
# (benchmarks/estimate_accuracy.py) took 0.40-0.67× the estimate made without this factor and 0.59-1.04× with a
# factor 2.5, so the reference is 2.1e11 / 2.5.
REFERENCE_FLOPS_PER_S = 8.4e10
REMEASURE_S = 60.0
SPEED_BOUNDS = (0.05, 50.0)  # a measurement outside these is taken as broken, not as this machine


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the block with `n` torch threads. torch's thread count is process-wide: it is set back afterwards
    unless someone changed it meanwhile.

    Args:
        n: The torch threads to run the block with.

    Yields:
        Nothing: the block runs while torch uses `n` threads.
    """
    import torch

    before = torch.get_num_threads()
    if n == before:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        if torch.get_num_threads() == n:
            torch.set_num_threads(before)


def _best_seconds(dtype: str, rows: int, threads: int, repeats: int = REPEATS) -> float:
    """The best time of `repeats` products of `rows` rows through SmolLM2's up-projection, in `dtype`, on
    `threads` torch threads."""
    import torch

    _, inputs, outputs = SHAPE
    kind = getattr(torch, dtype)
    gen = torch.Generator().manual_seed(0)  # its own generator: measuring leaves torch's global RNG as it was
    x, w = (torch.randn(shape, generator=gen).to(kind) for shape in ((rows, inputs), (outputs, inputs)))
    best = float("inf")
    with torch_threads(threads), torch.inference_mode():
        torch.nn.functional.linear(x, w)  # the first call pays for kernel selection
        for _ in range(repeats):
            start = time.perf_counter()
            torch.nn.functional.linear(x, w)
            best = min(best, time.perf_counter() - start)
    return max(best, 1e-9)


def _measure(dtype: str) -> float:
    """FLOP/s of the best of `REPEATS` products of `SHAPE` in `dtype` on one torch thread."""
    rows, inputs, outputs = SHAPE
    return 2 * rows * inputs * outputs / _best_seconds(dtype, rows, 1)


_BEST: dict[str, tuple[float, float]] = {}  # dtype -> (best FLOP/s so far, when measured)
_LOCK = threading.Lock()


def matmul_flops_per_s(dtype: str = "float32") -> float:
    """This machine's one-thread throughput (FLOP/s) for a SmolLM2-sized matrix product in `dtype` (a name such
    as ``bfloat16``): the best measured in this process, measured again at most every `REMEASURE_S` (a process
    that first measured on a busy machine learns its idle speed).

    Args:
        dtype: The precision's name in torch, such as ``float32`` or ``bfloat16``.

    Returns:
        The best throughput measured so far, in FLOP/s.
    """
    now = time.monotonic()
    with _LOCK:
        best, when = _BEST.get(dtype, (0.0, -float("inf")))
        if now - when >= REMEASURE_S:
            _BEST[dtype] = best, when = max(best, _measure(dtype)), now
    return best


def machine_speed() -> float:
    """How many times faster than the reference machine this one multiplies float32 matrices on one thread
    (`estimate` counts the threads apart). ``FLASHTRACE_MACHINE_SPEED`` sets it (e.g. ``1`` for the reference
    machine's numbers).

    Returns:
        The factor, from ``FLASHTRACE_MACHINE_SPEED`` when set, else measured and kept within `SPEED_BOUNDS`.
    """
    pinned = os.environ.get("FLASHTRACE_MACHINE_SPEED")
    if pinned:
        return float(pinned)
    low, high = SPEED_BOUNDS
    return min(max(matmul_flops_per_s("float32") / REFERENCE_FLOPS_PER_S, low), high)


def matmul_speedup(dtype: str) -> float:
    """How many times faster a matrix product runs in `dtype` than in float32 on this machine (below 1 where
    the precision is emulated, as bfloat16 is without AMX).

    Args:
        dtype: The precision's name in torch, such as ``bfloat16``.

    Returns:
        The factor (1 for float32).
    """
    if dtype == "float32":
        return 1.0
    return matmul_flops_per_s(dtype) / matmul_flops_per_s("float32")


PROBE_ROWS = 1024  # rows of the product the thread probe times: a scoring batch's scale
PROBE_REPEATS = 4
DECIDE_S = 10.0  # how long a thread decision stands before it is probed again
_DECIDED: dict[tuple[int, str], tuple[int, float]] = {}  # (threads, dtype) -> (threads to use, when decided)


def threads_that_pay(threads: int, dtype: str = "float32") -> int:
    """`threads`, or 1 when `threads` torch threads multiply a scoring-sized product (`PROBE_ROWS` rows, in
    `dtype`) slower than one thread does right now. On a 2-core machine where another process holds a core,
    even at the lowest priority, the threads wait on each other at every product: under two niced mutation
    runs, 1,176 rows took 7.9 ms on 2 threads and 1.6 ms on one, and Compare → Methods took 59.7 s on
    2 threads, 36.2 s with this choice and 30.3 s on one (9.4 s idle on 2). Probed (~20-80 ms) at most every
    `DECIDE_S`.

    Args:
        threads: The torch threads the caller would use.
        dtype: The precision's name in torch of the products.

    Returns:
        `threads`, or 1 when one thread is faster now (`threads` itself when it is 1 or less).
    """
    if threads <= 1:
        return threads
    key, now = (threads, dtype), time.monotonic()
    with _LOCK:
        chosen, when = _DECIDED.get(key, (threads, -float("inf")))
        if now - when >= DECIDE_S:
            one = _best_seconds(dtype, PROBE_ROWS, 1, PROBE_REPEATS)
            many = _best_seconds(dtype, PROBE_ROWS, threads, PROBE_REPEATS)
            chosen = threads if many < one else 1
            _DECIDED[key] = chosen, now
    return chosen


@contextmanager
def paying_threads(dtype: str = "float32") -> Iterator[None]:
    """Run the block on one torch thread when more would be slower right now (`threads_that_pay`), else as set.

    Args:
        dtype: The precision's name in torch of the block's products.

    Yields:
        Nothing: the block runs on the threads that pay.
    """
    import torch

    with torch_threads(threads_that_pay(torch.get_num_threads(), dtype)):
        yield


__all__ = ["torch_threads", "threads_that_pay", "paying_threads", "matmul_flops_per_s", "machine_speed",
           "matmul_speedup", "REFERENCE_FLOPS_PER_S", "SHAPE"]
