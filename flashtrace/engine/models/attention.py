"""Attention probabilities recomputed from recorded queries and keys, a block of target rows at a time.

The forward pass runs with SDPA and never materialises ``[H, N, N]`` maps; whatever rows an
attribution needs are rebuilt here exactly as the model's eager attention would compute them
(scaling, soft-capping, causal mask, sliding window, grouped-query heads).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import torch

from ..kernels.softmax import TILE, exp_accumulate, run_kernel

if TYPE_CHECKING:
    from typing import Any


def attention_logits(
    q: torch.Tensor,  # [H, r, d] queries of the target rows
    k: torch.Tensor,  # [KVH, n, d] keys of the sources 0..n-1
    rows: torch.Tensor,  # [r] absolute positions of the target rows
    scaling: float,
    softcap: float | None = None,
    sliding_window: int | None = None,
    key_offset: int = 0,
) -> torch.Tensor:
    """Masked, scaled (and soft-capped) logits ``[H, r, n]`` in float32 for keys at positions
    ``key_offset..key_offset+n-1``; masked entries are -inf.

    Args:
        q: The queries of the target rows, ``[H, r, d]``.
        k: The keys of the sources ``0..n-1``, ``[KVH, n, d]`` (query head ``h`` reads key head ``h // (H // KVH)``).
        rows: The absolute positions of the target rows, ``[r]``.
        scaling: The factor the queries are multiplied by.
        softcap: The soft-cap of the logits (``softcap · tanh(logit / softcap)``), or None for none.
        sliding_window: The attention's sliding window (a row sees the last `sliding_window` positions up to its
            own), or None for none.
        key_offset: The absolute position of the first key.

    Returns:
        The logits ``[H, r, n]``, float32, with -inf where the causal mask or the window hides a key.
    """
    n_heads, r, d = q.shape
    n_kv, n, _ = k.shape
    rep = n_heads // n_kv
    grouped = (q.float() * scaling).reshape(n_kv, rep * r, d)  # heads h = kv*rep + i share key kv
    logits = torch.bmm(grouped, k.float().transpose(1, 2)).reshape(n_heads, r, n)
    if softcap is not None:
        logits.div_(softcap).tanh_().mul_(softcap)
    cols = torch.arange(key_offset, key_offset + n, device=q.device)
    if sliding_window is not None:
        masked = (cols[None, :] > rows[:, None]) | (cols[None, :] <= rows[:, None] - sliding_window)
        return logits.masked_fill_(masked[None], float("-inf"))
    first = min(max(int(rows.min()) - key_offset, 0), n)  # every row sees all columns before its own
    tail = logits[:, :, first:]
    tail.masked_fill_((cols[None, first:] > rows[:, None])[None], float("-inf"))
    return logits


def attention_probs(q: torch.Tensor, k: torch.Tensor, rows: torch.Tensor, scaling: float, softcap: float | None = None,
                    sliding_window: int | None = None) -> torch.Tensor:
    """Softmax over the logits of `attention_logits`: ``[H, r, n]`` float32.

    Args:
        q: The queries of the target rows, ``[H, r, d]``.
        k: The keys of the sources ``0..n-1``, ``[KVH, n, d]``.
        rows: The absolute positions of the target rows, ``[r]``.
        scaling: The factor the queries are multiplied by.
        softcap: The soft-cap of the logits, or None for none.
        sliding_window: The attention's sliding window, or None for none.

    Returns:
        The attention probabilities ``[H, r, n]``, float32 (0 where masked).
    """
    return torch.softmax(attention_logits(q, k, rows, scaling, softcap, sliding_window), dim=-1)


def row_blocks(rows: torch.Tensor, block: int) -> Iterator[torch.Tensor]:
    """Split `rows` into consecutive blocks of at most `block` elements.

    Args:
        rows: The tensor to split (1-D).
        block: The most elements a block holds.

    Yields:
        The blocks, views of `rows`, in order.
    """
    for start in range(0, rows.numel(), block):
        yield rows[start : start + block]


def attention_rows(layer: Any, rows: torch.Tensor, block: int = 256) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Yield ``(row_block, probs)`` for a recorded layer: ``probs[h, i, j]`` = attention of target
    row ``row_block[i]`` on source ``j`` for ``j < max(rows)+1`` (later sources are masked anyway).

    Args:
        layer: The recorded layer, a `recording.LayerRecord` (its queries, keys, scaling, soft-cap and window).
        rows: The absolute positions of the target rows, ``[r]``.
        block: The most rows per block.

    Yields:
        ``(row_block, probs)``: the positions of a block of rows and their attention probabilities, ``probs``
            ``[H, len(row_block), max(rows)+1]`` float32.
    """
    rows = rows.to(layer.q.device)
    n_src = int(rows.max()) + 1
    k = layer.k[:, :n_src]
    for blk in row_blocks(rows, block):
        yield blk, attention_probs(layer.q[:, blk], k, blk, layer.scaling, layer.softcap, layer.sliding_window)


def aggregate_attention(layer: Any, rows: torch.Tensor, coef: torch.Tensor, block: int = 128) -> torch.Tensor:
    """Weighted column sums of attention rows, ``ᾱ[b, h, j] = Σ_i coef[b, i] α[h, rows[i], j]``.

    Each block of rows only touches the columns it can see (causal mask, sliding window), the softmax is done in
    place, and no ``[H, N, N]`` tensor ever exists.

    Args:
        layer: The recorded layer, a `recording.LayerRecord`. When the recording kept the softmax's log-sum-exp
            (``layer.lse``), rows are normalised with it in one pass (``exp(logit - lse)``) instead of max, exp
            and sum passes.
        rows: The target rows' positions ``[r]``, ascending.
        coef: Each span's weight of each row, ``[B, r]``.
        block: The most rows per block (at most `LSE_BLOCK` on the log-sum-exp path).

    Returns:
        ``ᾱ`` ``[B, H, n_src]``, float32, with ``n_src = max(rows) + 1``.
    """
    dev = layer.q.device
    rows = rows.to(dev)
    coef = coef.to(dev, torch.float32)
    lse = getattr(layer, "lse", None)
    if lse is not None:
        return _aggregate_with_lse(layer, rows, coef, lse.to(dev), min(block, LSE_BLOCK))
    n_heads = layer.n_heads
    n_src = int(rows[-1]) + 1
    window = layer.sliding_window
    out = torch.zeros(n_heads, coef.shape[0], n_src, device=dev)  # [H, B, n_src]
    for start in range(0, rows.numel(), block):
        blk = rows[start : start + block]
        lo_row, hi = int(blk[0]), int(blk[-1]) + 1
        c0 = max(0, lo_row - window + 1) if window else 0
        r = blk.numel()
        logits = attention_logits(layer.q[:, blk], layer.k[:, c0:hi], blk, layer.scaling, layer.softcap, window,
                                  key_offset=c0)  # [H, r, hi - c0]
        logits.sub_(logits.amax(-1, keepdim=True)).exp_()  # unnormalised probabilities
        scale = coef[None, :, start : start + r] / logits.sum(-1)[:, None, :]  # [H, B, r]
        out[:, :, c0:hi] += torch.bmm(scale, logits)
    return out.transpose(0, 1)


FUSED_CPU = True  # the one-pass kernel on CPU tensors (tests turn it off to run the other devices' path here)
LSE_BLOCK = 64  # rows per block on the log-sum-exp path: smaller blocks stay in cache (measured: 64 beats 128)


def _aggregate_with_lse(layer, rows, coef, lse, block):
    """`aggregate_attention` with the recorded log-sum-exp ``lse [H, N]``: per block one bmm for the
    logits into a reused buffer, then ``Σ_i coef[b, i] · exp(logit − lse)`` over the visible columns:
    on the CPU in one fused pass (`kernels.softmax`), elsewhere as in-place exp, masking and a bmm."""
    n_heads, n_kv = layer.n_heads, layer.n_kv_heads
    rep = n_heads // n_kv
    n_src = int(rows[-1]) + 1
    window, softcap = layer.sliding_window, layer.softcap
    dev = rows.device
    out = torch.zeros(n_heads, coef.shape[0], n_src, device=dev)  # [H, B, n_src]
    k_all = layer.k.float()
    widest = 0 if window else min(block, rows.numel()) * n_src  # without a window the last block is the widest
    buffer = torch.empty(n_heads * widest, device=dev)  # the logits of one block, reused (grown if one needs more)
    cpu = dev.type == "cpu" and FUSED_CPU
    if cpu:  # per-row arrays for the kernel, gathered once; a block reads them from offset `start`
        lse_rows, coef_rows, out_np = lse[:, rows].contiguous().numpy(), coef.contiguous().numpy(), out.numpy()
        starts = ((rows - window + 1).clamp_min(0) if window else torch.zeros_like(rows)).numpy()
        stops = (rows + 1).numpy()
    for start in range(0, rows.numel(), block):
        blk = rows[start : start + block]
        lo_row, hi = int(blk[0]), int(blk[-1]) + 1
        c0 = max(0, lo_row - window + 1) if window else 0
        r, width = blk.numel(), hi - c0
        grouped = (layer.q[:, blk].float() * layer.scaling).reshape(n_kv, rep * r, -1)
        if buffer.numel() < n_heads * r * width:
            buffer = torch.empty(n_heads * r * width, device=dev)
        logits = buffer[: n_heads * r * width].view(n_kv, rep * r, width)
        torch.bmm(grouped, k_all[:, c0:hi].transpose(1, 2), out=logits)
        logits = logits.view(n_heads, r, width)
        if softcap is not None:
            logits.div_(softcap).tanh_().mul_(softcap)
        if cpu:
            run_kernel(exp_accumulate, logits.numpy(), lse_rows, coef_rows, starts, stops, start, out_np, c0, TILE)
            continue
        logits.sub_(lse[:, blk, None]).exp_()
        cols = torch.arange(c0, hi, device=dev)
        if window:
            hidden = (cols[None, :] > blk[:, None]) | (cols[None, :] <= blk[:, None] - window)
            logits.masked_fill_(hidden[None], 0.0)
        else:
            first = lo_row - c0  # every row of the block sees all columns before its first row
            logits[:, :, first:].masked_fill_((cols[None, first:] > blk[:, None])[None], 0.0)
        out[:, :, c0:hi] += torch.bmm(coef[None, :, start : start + r].expand(n_heads, -1, -1), logits)
    return out.transpose(0, 1)
