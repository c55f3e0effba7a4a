"""Span-wise aggregation (METHOD.md §3): attribution of a weighted target span in one sweep.

For each layer, with normalised target weights ``w``:
``Y = Σ_i w_i x_mid[i]``, ``R = Σ_i w_i x_prev[i]``, ``ᾱ[h, j] = Σ_i w_i α[h, i, j]``,
``p[h, j] = prox(ᾱ[h, j] F[h, j], Y)``, ``e(j) = Σ_h p[h, j] / (Σ p + prox(R, Y))``; score ``= Σ_l e``.
``Y`` is ``R + Σ_h Σ_j ᾱ[h, j] F[h, j]`` (+ bias) unless the recording kept x_mid (`record_forward`).
Many weight vectors (``[B, N]``) share one sweep: attention rows are rebuilt once per layer for the
union of their target rows. Memory stays linear in N: rows and sources are processed in blocks
sized from ``budget_bytes``.
"""

from __future__ import annotations

import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Callable, Iterator

import torch

from ..models.attention import LSE_BLOCK, aggregate_attention
from ..models.recording import Recording
from ..kernels.softmax import serial_kernels
from ..kernels.proximity import head_proximities, proximity, value_proximities
from ...base.errors import InputError

DEFAULT_BUDGET = 256 * 2**20
_THREADS_SECTION = threading.Lock()  # one CPU sweep at a time (`_each_layer`)
CACHE_BYTES = 8 * 2**20  # GPU path: head values per source chunk (written by the bmm, read back while still cached)


@dataclass
class SpanAttribution:
    """Span attribution over a batch of target weight vectors: the score of each source position (summed
    over layers) and, when asked, the per-head importance."""
    scores: torch.Tensor  # [B, N] Σ over layers of the normalised importance of each source
    heads: torch.Tensor | None = None  # [B, L, H] per-head importance (same denominator), if asked


def normalise_weights(weights: torch.Tensor | list, n_tokens: int) -> torch.Tensor:
    """Validate and normalise weight vectors to ``[B, N]`` float32 rows summing to 1.

    Args:
        weights: ``[B, N]`` or ``[N]`` non-negative weights, a tensor or nested lists.
        n_tokens: ``N``, the tokens of the sequence.

    Returns:
        ``[B, N]`` float32 rows on the CPU, each summing to 1.

    Raises:
        InputError: When the shape is not ``[B, N]`` (or ``[N]``), a weight is negative or not finite, or a
            vector has no positive weight (the target span is empty).
    """
    w = torch.as_tensor(weights, dtype=torch.float32, device="cpu")  # not torch's default device: scores live here
    if w.ndim == 1:
        w = w[None]
    if w.ndim != 2 or w.shape[1] != n_tokens:
        raise InputError(f"weights must have shape [B, {n_tokens}], got {tuple(w.shape)}")
    if not torch.isfinite(w).all() or (w < 0).any():
        raise InputError("weights must be finite and non-negative")
    total = w.sum(1, keepdim=True)
    if (total <= 0).any():
        raise InputError("every weight vector needs at least one positive weight (the target span is empty)")
    return w / total


def span_aggregate(
    recording: Recording,
    weights: torch.Tensor | list,
    *,
    threshold: float | None = None,
    per_head: bool = False,
    budget_bytes: int = DEFAULT_BUDGET,
    on_layer: Callable[[int], None] | None = None,
    layer_threads: bool = True,
    value_kernel: bool = True,
) -> SpanAttribution:
    """Attribution scores ``[B, N]`` for the weight vectors ``[B, N]`` (or ``[N]``) over target positions.

    Two CPU choices, per call: `layer_threads` and `value_kernel`. Either way the scores agree (~1e-6
    relative); neither matters on other devices.

    Args:
        recording: The forward pass's recording.
        weights: ``[B, N]`` or ``[N]`` non-negative target weights (normalised to sum 1 per vector).
        threshold: τ, off by default: zeroes a (head, source) proximity whose share of its layer's total is below
            τ, then renormalises over what is left.
        per_head: Whether the per-head importance is returned too.
        budget_bytes: The memory the blocks of rows and sources are sized from.
        on_layer: Called as `on_layer(l)` after each layer `l`.
        layer_threads: Runs layers side by side on as many Python threads as torch has threads (`_each_layer`;
            measured 1.5× faster on 2 cores, where torch's OpenMP workers and numba's pool took turns on every
            block); False one layer at a time with each op on all torch threads.
        value_kernel: Computes proximities from the values on CPU tensors; False forms the per-head value vectors
            as on GPUs (and as IFR and the authors' code do: benchmarks/paper_protocol.py times row-wise IFR both
            ways).

    Returns:
        The scores ``[B, N]`` (summed over layers) and, with `per_head`, the per-head importance ``[B, L, H]``.

    Raises:
        InputError: When `weights` are not valid weight vectors (`normalise_weights`).
    """
    n = recording.n_tokens
    w = normalise_weights(weights, n)
    n_spans = w.shape[0]
    rows = torch.nonzero(w.sum(0) > 0).flatten()
    n_src = int(rows.max()) + 1
    w_rows = w[:, rows]  # [B, r]
    scores = torch.zeros(n_spans, n, device="cpu")
    heads = torch.zeros(n_spans, len(recording.layers), recording.layers[0].n_heads, device="cpu") if per_head else None
    each_layer = _each_layer(recording, rows, w_rows, n_src, budget_bytes, layer_threads, value_kernel)
    try:
        for l, (p, r) in enumerate(each_layer):  # [B, H, n_src], [B]
            if threshold:
                share = p / (p.sum((1, 2)) + r).clamp_min(1e-30)[:, None, None]
                p = torch.where(share < threshold, torch.zeros_like(p), p)
            denom = (p.sum((1, 2)) + r).clamp_min(1e-30)  # [B]
            scores[:, :n_src] += p.sum(1) / denom[:, None]
            if heads is not None:
                heads[:, l] = p.sum(2) / denom[:, None]
            if on_layer:
                on_layer(l)
    finally:
        each_layer.close()  # an `on_layer` that raises (a cancelled run): no new layer starts, the threads end
    return SpanAttribution(scores=scores, heads=heads)


def _each_layer(recording, rows, w_rows, n_src, budget_bytes, layer_threads: bool = True,
                value_kernel: bool = True) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """`_layer_proximities` of every layer, in order. On the CPU with several torch threads, layers run
    side by side on that many Python threads, each op single-threaded; results are consumed in layer
    order and at most one layer per thread waits in memory. Their scores equal those of one torch thread
    bit for bit (several threads inside one op add in another order: ~1e-8 relative)."""
    layers = list(recording.layers)
    cpu = bool(layers) and layer_threads and layers[0].q.device.type == "cpu"
    with _THREADS_SECTION if cpu else nullcontext():  # CPU sweeps take turns: each sets torch's thread count
        workers = _layer_workers(layers[0], w_rows.shape[0], n_src, budget_bytes, len(layers)) if cpu else 1
        if workers <= 1:
            for layer in layers:
                yield _layer_proximities(layer, rows, w_rows, n_src, budget_bytes, value_kernel)
            return
        threads = torch.get_num_threads()
        share = max(1, budget_bytes // workers)

        def work(layer):
            with serial_kernels():
                return _layer_proximities(layer, rows, w_rows, n_src, share, value_kernel)

        pool = ThreadPoolExecutor(workers, thread_name_prefix="flashtrace-layer")
        try:
            torch.set_num_threads(1)
            pending = deque(pool.submit(work, layer) for layer in layers[:workers])
            for nxt in layers[workers:]:
                result = pending.popleft().result()
                pending.append(pool.submit(work, nxt))
                yield result
            while pending:
                yield pending.popleft().result()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)  # a caller that stops early (cancel) leaves no thread behind
            torch.set_num_threads(threads)


def _layer_workers(layer, n_spans: int, n_src: int, budget_bytes: int, n_layers: int) -> int:
    return layer_workers(layer.n_heads, n_spans, n_src, budget_bytes, n_layers, torch.get_num_threads())


def layer_workers(n_heads: int, n_spans: int, n_src: int, budget_bytes: int, n_layers: int, threads: int) -> int:
    """How many layers run at once on the CPU: one per torch thread, as many as the memory budget holds
    (`layer_bytes` each), at most the layers.

    Args:
        n_heads: The attention heads of a layer.
        n_spans: The weight vectors swept together.
        n_src: The source positions attributed.
        budget_bytes: The sweep's memory budget.
        n_layers: The model's layers.
        threads: The torch threads.

    Returns:
        The number of layers run side by side, at least 1.
    """
    return int(max(1, min(threads, n_layers, budget_bytes // layer_bytes(n_heads, n_spans, n_src))))


def layer_bytes(n_heads: int, n_spans: int, n_src: int) -> int:
    """A layer's transient memory on the CPU: its block of logits, ᾱ and proximities (float32).

    Args:
        n_heads: The attention heads of a layer.
        n_spans: The weight vectors swept together.
        n_src: The source positions attributed.

    Returns:
        The bytes.
    """
    return 4 * n_heads * n_src * (LSE_BLOCK + 3 * n_spans)


def _layer_proximities(layer, rows, w_rows, n_src, budget_bytes, value_kernel: bool = True):
    """Per-(span, head, source) proximities ``p [B, H, n_src]`` and residual proximity ``r [B]``."""
    n_spans, n_heads = w_rows.shape[0], layer.n_heads
    dev = layer.q.device
    w_rows = w_rows.to(dev)
    residual = w_rows @ layer.x_prev[rows].float()  # [B, D]
    coef = w_rows * layer.post_scale[rows] if layer.post_scale is not None else w_rows
    row_block = int(min(128, max(1, budget_bytes // (4 * n_heads * n_src))))
    abar = aggregate_attention(layer, rows, coef, block=row_block)  # [B, H, n_src]
    if layer.x_mid is not None:  # kept by the recording (`keep_mid`): as the model computed it
        y = w_rows @ layer.x_mid[rows].float()
    else:  # rebuilt from ᾱ: the same sum up to rounding (decomposition identity)
        y = residual + layer.attention_sum(abar, coef.sum(1))
    r = proximity(residual, y)  # [B]
    if dev.type == "cpu" and value_kernel:  # no head values formed (kernels.py)
        return value_proximities(layer.v[:, :n_src], layer.w_o, abar, y), r
    d_model = y.shape[1]
    per_source = 4 * n_heads * d_model
    chunk = int(max(1, min(1024, max(16, CACHE_BYTES // per_source), budget_bytes // (2 * per_source))))
    p = torch.empty(n_spans, n_heads, n_src, device=dev)
    for s in range(0, n_src, chunk):
        src = slice(s, min(s + chunk, n_src))
        p[:, :, src] = head_proximities(layer.head_values(src), abar[:, :, src], y)  # [B, H, c]
    return p.cpu(), r.cpu()
