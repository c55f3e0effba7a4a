"""Slow, obviously-correct float64 references for the attribution math (test use only)."""

import torch


def explicit_attention(layer) -> torch.Tensor:
    """``[H, N, N]`` float64 attention probabilities, one head and one row at a time."""
    q, k = layer.q.double(), layer.k.double()
    n_heads, n, _ = q.shape
    rep = n_heads // k.shape[0]
    alpha = torch.zeros(n_heads, n, n, dtype=torch.float64)
    for h in range(n_heads):
        for i in range(n):
            logits = (k[h // rep, : i + 1] @ q[h, i]) * layer.scaling
            if layer.softcap is not None:
                logits = torch.tanh(logits / layer.softcap) * layer.softcap
            visible = torch.arange(i + 1)
            if layer.sliding_window is not None:
                logits = logits.masked_fill(visible <= i - layer.sliding_window, float("-inf"))
            alpha[h, i, : i + 1] = torch.softmax(logits, dim=0)
    return alpha


def reference_layer_proximities(recording, weights: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per layer, from explicit per-target contribution vectors: the (head, source) proximities
    ``[H, N]`` and the residual proximity (scalar), float64."""
    w = weights.double() / weights.double().sum()
    n = w.numel()
    out = []
    for layer in recording.layers:
        alpha = explicit_attention(layer)
        n_heads = alpha.shape[0]
        rep = n_heads // layer.k.shape[0]
        values = torch.stack([layer.v.double()[h // rep] @ layer.w_o.double()[h] for h in range(n_heads)])  # [H,N,D]
        scale = layer.post_scale.double() if layer.post_scale is not None else torch.ones(n, dtype=torch.float64)
        d_model = values.shape[-1]
        span_parts = torch.zeros(n_heads, n, d_model, dtype=torch.float64)
        for i in torch.nonzero(w).flatten().tolist():
            per_target = alpha[:, i, :, None] * scale[i] * values  # contribution of (h, j) to target i
            span_parts += w[i] * per_target
        y = (w[:, None] * layer.x_mid.double()).sum(0)
        res = (w[:, None] * layer.x_prev.double()).sum(0)
        prox = (y.abs().sum() - (y - span_parts).abs().sum(-1)).clamp_min(0)  # [H, N]
        r = (y.abs().sum() - (y - res).abs().sum()).clamp_min(0)
        out.append((prox, r))
    return out


def reference_span_scores(recording, weights: torch.Tensor, threshold: float = 0.0) -> torch.Tensor:
    """Span aggregate of METHOD §3: ``[N]`` float64. `threshold` τ drops (head, source) proximities whose
    share of the layer total is below τ; the rest are normalised over what is left plus the residual."""
    total = torch.zeros(weights.numel(), dtype=torch.float64)
    for prox, r in reference_layer_proximities(recording, weights):
        if threshold:
            prox = torch.where(prox / (prox.sum() + r) < threshold, torch.zeros_like(prox), prox)
        total += prox.sum(0) / (prox.sum() + r)
    return total
