"""Baseline attributions for comparisons (METHOD.md §6): raw attention, attention rollout,
integrated gradients on input embeddings (captum), segment-ablation perturbation.

Attention and rollout use the recording (rows recomputed in blocks, memory linear in N); IG and
perturbation run the model. All return one score per position ``[N]`` (float32).
"""

from __future__ import annotations

from typing import Sequence

import torch

from ..models.attention import attention_rows
from ..models.recording import Recording
from ...base.errors import InputError

TokenRange = tuple[int, int]


def _target_weights(weights: torch.Tensor, n: int) -> torch.Tensor:
    w = torch.as_tensor(weights, dtype=torch.float32).reshape(-1)
    if w.numel() != n or (w < 0).any() or w.sum() <= 0:
        raise InputError(f"target weights must be {n} non-negative numbers with a positive sum")
    return w / w.sum()


def raw_attention(recording: Recording, weights: torch.Tensor, block: int = 256) -> torch.Tensor:
    """Mean over layers and heads of the target rows' attention, weighted by `weights` ``[N]``: ``[N]``.

    Args:
        recording: The forward pass's recording (the attention rows are recomputed from it).
        weights: ``[N]`` non-negative target weights with a positive sum (normalised to sum 1).
        block: The rows recomputed at a time.

    Returns:
        ``[N]`` float32 scores, one per position.

    Raises:
        InputError: When `weights` are not `N` non-negative numbers with a positive sum.
    """
    n = recording.n_tokens
    w = _target_weights(weights, n)
    rows = torch.nonzero(w).reshape(-1)
    out = torch.zeros(n)
    for layer in recording.layers:
        for blk, probs in attention_rows(layer, rows, block):  # probs [H, r, n_src]
            out[: probs.shape[-1]] += (w[blk][None, :, None] * probs.cpu()).sum((0, 1)) / probs.shape[0]
    return out / len(recording.layers)


def attention_rollout(recording: Recording, weights: torch.Tensor, block: int = 256, residual: float = 0.5
                      ) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema 2020) of the target rows: ``v ← v·(r·I + (1-r)·Ā_l)`` from the
    last layer down, with ``Ā_l`` the head-mean attention. Only rows where ``v`` is non-zero are
    rebuilt, a block at a time: ``[N]``.

    Args:
        recording: The forward pass's recording (the attention rows are recomputed from it).
        weights: ``[N]`` non-negative target weights with a positive sum (normalised to sum 1).
        block: The rows rebuilt at a time.
        residual: ``r``, the share of the identity (the residual connection) in each layer's step.

    Returns:
        ``[N]`` float32 scores, one per position.

    Raises:
        InputError: When `weights` are not `N` non-negative numbers with a positive sum.
    """
    n = recording.n_tokens
    v = _target_weights(weights, n).double()
    for layer in reversed(recording.layers):
        rows = torch.nonzero(v).reshape(-1)
        new = residual * v
        for blk, probs in attention_rows(layer, rows, block):
            mean = probs.mean(0).double().cpu()  # [r, n_src]
            new[: mean.shape[1]] += (1 - residual) * (v[blk][:, None] * mean).sum(0)
        v = new
    return v.float()


@torch.no_grad()
def target_logprob(model: torch.nn.Module, ids: torch.Tensor, target: TokenRange, batch_size: int = 16
                   ) -> torch.Tensor:
    """Summed log-probability of the tokens ``ids[:, lo:hi]`` given what precedes them, for a batch of
    sequences ``[B, N]``: ``[B]``. Only the logits predicting the target are computed, and the tokens after
    the target (which a causal model's target does not see) are not run.

    Args:
        model: The causal language model (a transformers model).
        ids: ``[B, N]`` token ids, one sequence a row.
        target: ``(lo, hi)``, the target's token positions (end excluded).
        batch_size: The sequences run at a time.

    Returns:
        ``[B]`` float64 summed log-probabilities, one per sequence.

    Raises:
        InputError: When the target starts at the first token (nothing precedes it).
    """
    lo, hi = target
    if lo < 1:
        raise InputError("the target must start after the first token")
    ids = ids[:, :hi]
    n = ids.shape[1]
    device = next(model.parameters()).device
    out = []
    for start in range(0, ids.shape[0], batch_size):
        batch = ids[start : start + batch_size].to(device)
        logits = model(input_ids=batch, use_cache=False, logits_to_keep=n - lo + 1).logits  # [b, n-lo+1, V]
        logp = torch.log_softmax(logits[:, : hi - lo].float(), dim=-1)  # predictions of lo..hi-1
        out.append(logp.gather(-1, batch[:, lo:hi, None]).squeeze(-1).sum(-1).cpu())
    return torch.cat(out).double()


def segment_ablation(model: torch.nn.Module, ids: torch.Tensor, segments: Sequence[Sequence[int]], target: TokenRange,
                     replace_id: int, batch_size: int = 16) -> torch.Tensor:
    """Perturbation baseline: replace each segment's tokens (e.g. a prompt sentence) by `replace_id`;
    the drop of the target's log-probability is shared evenly by the segment's tokens: ``[N]``.

    Args:
        model: The causal language model (a transformers model).
        ids: ``[N]`` token ids of the sequence.
        segments: The positions of each segment's tokens (empty segments are skipped).
        target: ``(lo, hi)``, the target's token positions (end excluded).
        replace_id: The token id that replaces a segment's tokens.
        batch_size: The sequences run at a time.

    Returns:
        ``[N]`` float32 scores, one per position (0 outside the segments).

    Raises:
        InputError: When the target starts at the first token (`target_logprob`).
    """
    ids = torch.as_tensor(ids).reshape(-1)
    segments = [list(s) for s in segments if len(s)]
    batch = ids.repeat(len(segments) + 1, 1)  # row 0: unperturbed
    for i, seg in enumerate(segments, start=1):
        batch[i, seg] = replace_id
    s = target_logprob(model, batch, target, batch_size)
    out = torch.zeros(ids.numel())
    for i, seg in enumerate(segments, start=1):
        out[seg] = float(s[0] - s[i]) / len(seg)
    return out


def integrated_gradients(model: torch.nn.Module, ids: torch.Tensor, target: TokenRange, positions: Sequence[int],
                         baseline_id: int, steps: int = 16, internal_batch_size: int | None = None,
                         max_batch_tokens: int = 2048) -> torch.Tensor:
    """Integrated gradients (captum) of the target's summed log-probability w.r.t. the input embeddings.

    The path runs from a baseline where `positions` (the explained tokens) hold `baseline_id`'s
    embedding to the real input; other positions are identical on the whole path. Token score = sum
    of the attribution over the embedding dimension (signed): ``[N]``.

    The backward pass keeps every layer's activations (about 1 MB per token for SmolLM2-135M), so the
    steps run in chunks of at most `max_batch_tokens` tokens (at least one sequence) unless
    `internal_batch_size` sets the chunk; the result does not depend on the chunking.

    Args:
        model: The causal language model (a transformers model).
        ids: ``[N]`` token ids of the sequence.
        target: ``(lo, hi)``, the target's token positions (end excluded).
        positions: The explained tokens' positions, which hold `baseline_id`'s embedding at the path's start.
        baseline_id: The token id whose embedding the baseline puts at `positions`.
        steps: The points of the path (Gauss-Legendre).
        internal_batch_size: The path's points run at a time (default: as `max_batch_tokens` allows).
        max_batch_tokens: The most tokens a chunk of the path holds, when `internal_batch_size` is not given.

    Returns:
        ``[N]`` float32 signed scores, one per position.
    """
    from captum.attr import IntegratedGradients

    ids = torch.as_tensor(ids).reshape(1, -1).to(next(model.parameters()).device)
    lo, hi = target
    n = ids.shape[1]
    embed = model.get_input_embeddings()
    with torch.no_grad():
        inputs = embed(ids)  # [1, N, D]
        base_ids = ids.clone()
        base_ids[0, list(positions)] = baseline_id
        baseline = embed(base_ids)

    def forward(x: torch.Tensor) -> torch.Tensor:  # [b, N, D] -> [b]
        logits = model(inputs_embeds=x, use_cache=False, logits_to_keep=n - lo + 1).logits
        logp = torch.log_softmax(logits[:, : hi - lo].float(), dim=-1)
        return logp.gather(-1, ids[:, lo:hi, None].expand(x.shape[0], -1, 1)).squeeze(-1).sum(-1)

    ig = IntegratedGradients(forward)
    chunk = internal_batch_size or max(1, min(steps, max_batch_tokens // n))
    attr = ig.attribute(inputs, baselines=baseline, n_steps=steps, method="gausslegendre", internal_batch_size=chunk)
    return attr[0].float().sum(-1).detach().cpu()


__all__ = ["raw_attention", "attention_rollout", "target_logprob", "segment_ablation", "integrated_gradients"]
