"""Attention probabilities recomputed from recorded queries and keys, a block of target rows at a time.

The forward pass runs with SDPA and never materialises ``[H, N, N]`` maps; whatever rows an
attribution needs are rebuilt here exactly as the model's eager attention would compute them
(scaling, soft-capping, causal mask, sliding window, grouped-query heads).
"""

from __future__ import annotations

from typing import Iterator

import torch


def attention_logits(
    q: torch.Tensor,  # [H, r, d] queries of the target rows
    k: torch.Tensor,  # [KVH, n, d] keys of the sources 0..n-1
    rows: torch.Tensor,  # [r] absolute positions of the target rows
    scaling: float,
    softcap: float | None = None,
    sliding_window: int | None = None,
    key_offset: int = 0,
) -> torch.Tensor:
    """Masked, scaled (and soft-capped) logits ``[H, r, n]`` in float32; masked entries are -inf."""
    n_heads, r, d = q.shape
    n_kv, n, _ = k.shape
    rep = n_heads // n_kv
    grouped = q.float().reshape(n_kv, rep * r, d)  # heads h = kv*rep + i share key kv
    logits = torch.bmm(grouped, k.float().transpose(1, 2)).reshape(n_heads, r, n)
    logits.mul_(scaling)
    if softcap is not None:
        logits.div_(softcap).tanh_().mul_(softcap)
    cols = torch.arange(key_offset, key_offset + n, device=q.device)
    masked = cols[None, :] > rows[:, None]  # [r, n] causal
    if sliding_window is not None:
        masked |= cols[None, :] <= rows[:, None] - sliding_window
    return logits.masked_fill_(masked[None], float("-inf"))


def attention_probs(q, k, rows, scaling, softcap=None, sliding_window=None) -> torch.Tensor:
    """Softmax over the logits of `attention_logits`: ``[H, r, n]`` float32."""
    return torch.softmax(attention_logits(q, k, rows, scaling, softcap, sliding_window), dim=-1)


def row_blocks(rows: torch.Tensor, block: int) -> Iterator[torch.Tensor]:
    for start in range(0, rows.numel(), block):
        yield rows[start : start + block]


def attention_rows(layer, rows: torch.Tensor, block: int = 256) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Yield ``(row_block, probs)`` for a recorded layer: ``probs[h, i, j]`` = attention of target
    row ``row_block[i]`` on source ``j`` for ``j < max(rows)+1`` (later sources are masked anyway).
    """
    rows = rows.to(layer.q.device)
    n_src = int(rows.max()) + 1
    k = layer.k[:, :n_src]
    for blk in row_blocks(rows, block):
        yield blk, attention_probs(layer.q[:, blk], k, blk, layer.scaling, layer.softcap, layer.sliding_window)
