"""One forward pass that records, per layer, what the attention decomposition needs.

Kept per layer (all linear in N): the residual stream entering the layer ``x_prev [N, D]`` and
after attention ``x_mid [N, D]``, post-rotary/post-norm queries ``q [H, N, d]``, keys and values
``k, v [KVH, N, d]``, the attention's scaling / soft-cap / window, and for families with a norm on
the attention output, its per-position scale ``post_scale [N]``. No ``[H, N, N]`` map is ever kept.

The capture works through an attention function registered with transformers
(``attn_implementation="ft_record"``), switched on for the recording and off after it (`borrow.in_use`); a
forward pass of another thread meanwhile is not captured. Recording is safe per
call: each recording belongs to the thread that runs it, and its hooks ignore forward passes of other
threads (two threads may record the same model at once).
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from .attention import attention_logits, row_blocks
from .borrow import in_use
from .families import FamilySpec
from ...base.errors import InputError

if TYPE_CHECKING:
    from typing import Any

ATTN_IMPLEMENTATION = "ft_record"


@dataclass
class LayerRecord:
    """What one decoder layer contributed, enough to rebuild any attention row and its parts."""

    x_prev: torch.Tensor  # [N, D] residual stream entering the layer
    x_mid: torch.Tensor | None  # [N, D] residual stream after the attention block is added (`keep_mid`), else None
    q: torch.Tensor  # [H, N, d] post-rotary (post q-norm) queries
    k: torch.Tensor  # [KVH, N, d] post-rotary keys
    v: torch.Tensor  # [KVH, N, dv] values (bias included)
    w_o: torch.Tensor  # [H, dv, D] per-head output projection (post-norm gain folded in)
    b_o: torch.Tensor | None  # [D] output bias (gain folded in) or None
    scaling: float
    softcap: float | None = None
    sliding_window: int | None = None
    post_scale: torch.Tensor | None = None  # [N] 1/rms of the attention output (sandwich norm)
    lse: torch.Tensor | None = None  # [H, N] float32 log-sum-exp of each softmax row, where the forward gave it

    @property
    def n_heads(self) -> int:
        """The number of query heads recorded."""
        return self.q.shape[0]

    @property
    def n_kv_heads(self) -> int:
        """The number of key/value heads recorded."""
        return self.k.shape[0]

    def kv_index(self) -> torch.Tensor:
        """``[H]`` the key/value head each query head reads (grouped-query attention).

        Returns:
            ``[H]`` integer tensor on the queries' device: entry ``h`` is ``h // (H / KVH)``.
        """
        rep = self.n_heads // self.n_kv_heads
        return torch.arange(self.n_heads, device=self.q.device) // rep

    def head_values(self, src: slice) -> torch.Tensor:
        """``F[h, j] = v[kv(h), j] · W_O[h]`` for sources in `src`: ``[H, n_src, D]`` float32.

        Args:
            src: The source positions ``j`` to take.

        Returns:
            ``[H, n_src, D]`` float32: each query head's value of each source, projected to the residual stream.
        """
        v = self.v[:, src].float()[self.kv_index()]  # [H, n, dv]
        return torch.bmm(v, self.w_o.float())

    def attention_output(self) -> torch.Tensor:
        """The attention block's contribution ``x_mid - x_prev`` as the model computed it: ``[N, D]``
        (recordings made with ``keep_mid=True``).

        Returns:
            ``[N, D]`` float32 ``x_mid - x_prev``.

        Raises:
            InputError: When the recording did not keep ``x_mid`` (made without ``keep_mid=True``).
        """
        if self.x_mid is None:
            raise InputError("this recording did not keep x_mid: record with keep_mid=True")
        return self.x_mid.float() - self.x_prev.float()

    def attention_sum(self, abar: torch.Tensor, coef_total: torch.Tensor) -> torch.Tensor:
        """What the attention block added to weighted rows, from their aggregated attention: ``[B, D]``
        float32 ``Σ_h Σ_j ᾱ[b, h, j] F[h, j] + coef_total[b] · b_o`` for ``abar [B, H, n_src]`` (rows
        weighted by ``coef``, sandwich-norm scale included) and ``coef_total [B] = Σ_i coef[b, i]``.
        Equals ``Σ_i w_i (x_mid[i] − x_prev[i])`` up to rounding (the decomposition identity, METHOD.md
        §5.2), so a recording need not keep x_mid. Cost ``B·H·n_src·dv``: no head value is formed.

        Args:
            abar: ``[B, H, n_src]`` the aggregated attention ``ᾱ`` of each weighted row set to the first ``n_src``
                sources (rows weighted by ``coef``, sandwich-norm scale included).
            coef_total: ``[B]`` the total weight ``Σ_i coef[b, i]`` of each row set (it scales the output bias).

        Returns:
            ``[B, D]`` float32: what the attention block added to each weighted row set.
        """
        n_spans, _, n_src = abar.shape
        n_kv = self.n_kv_heads
        v = self.v[:, :n_src].float()  # [KVH, n_src, dv]; query head h reads kv head h // rep
        grouped = abar.to(v.device, torch.float32).reshape(n_spans, n_kv, -1, n_src).transpose(0, 1)
        mixed = torch.bmm(grouped.reshape(n_kv, -1, n_src), v)  # [KVH, B·rep, dv]
        mixed = mixed.reshape(n_kv, n_spans, -1, v.shape[-1]).transpose(0, 1).reshape(n_spans, -1)  # [B, H·dv]
        w_o = self.w_o.float()
        out = mixed @ w_o.reshape(-1, w_o.shape[-1])  # [B, D]; a view of the projection where it is one
        if self.b_o is not None:
            out = out + coef_total.to(out.device, torch.float32)[:, None] * self.b_o.float()
        return out


@dataclass
class Recording:
    """One forward pass over a token sequence, reusable by every attribution."""

    input_ids: torch.Tensor  # [N]
    layers: list[LayerRecord]
    forward_seconds: float
    last_logits: torch.Tensor | None = None  # [V] logits at the last position
    meta: dict = field(default_factory=dict)

    @property
    def n_tokens(self) -> int:
        """The number of tokens in the recorded forward pass."""
        return int(self.input_ids.numel())

    def nbytes(self) -> int:
        """The bytes the recorded tensors take, over all layers.

        Returns:
            The bytes of every layer's ``x_prev``, ``x_mid``, ``q``, ``k``, ``v``, ``post_scale`` and ``lse`` (those
            kept); the output projections ``w_o`` and ``b_o`` are not counted.
        """
        total = 0
        for layer in self.layers:
            for t in (layer.x_prev, layer.x_mid, layer.q, layer.k, layer.v, layer.post_scale, layer.lse):
                if t is not None:
                    total += t.numel() * t.element_size()
        return total


class _Recorder:
    def __init__(self, spec: FamilySpec, model: torch.nn.Module, keep_mid: bool = False):
        self.spec = spec
        self.keep_mid = keep_mid
        self.layers = spec.decoder_layers(model)
        self.attn_index = {id(getattr(layer, spec.attention)): i for i, layer in enumerate(self.layers)}
        self.slots: list[dict] = [{} for _ in self.layers]
        self.blocks: dict[str, torch.Tensor] = {}  # kind -> [L, ...] storage of every layer's tensor (CPU)
        self.handles = []

    def keep(self, i: int, key: str, tensor: torch.Tensor) -> None:
        """Keep layer `i`'s `key`. On the CPU it is copied into one block per kind for all layers,
        allocated at the first layer: the forward's own buffers are then all transient, so the heap
        reuses them layer after layer. Kept in place, they sit between freed activations, whose holes
        the larger ones do not fit (glibc malloc): 0.1-0.2 GB of resident set lost at 2,048 tokens on
        SmolLM2, against one copy of what is kept. Layers whose tensor differs in shape keep their own."""
        tensor = tensor.detach()
        if tensor.device.type != "cpu":
            self.slots[i][key] = tensor
            return
        block = self.blocks.get(key)
        if block is None:
            block = self.blocks[key] = torch.empty((len(self.layers), *tensor.shape), dtype=tensor.dtype)
        if block.shape[1:] == tensor.shape and block.dtype == tensor.dtype:
            self.slots[i][key] = block[i].copy_(tensor)
        else:
            self.slots[i][key] = tensor.clone()

    def install(self) -> None:
        for i, layer in enumerate(self.layers):
            self.handles.append(layer.register_forward_pre_hook(self._store_input(i, "x_prev"), with_kwargs=True))
            if self.keep_mid:
                mid = getattr(layer, self.spec.mid_norm)
                self.handles.append(mid.register_forward_pre_hook(self._store_input(i, "x_mid"), with_kwargs=True))
            if self.spec.post_attn_norm:
                post = getattr(layer, self.spec.post_attn_norm)
                self.handles.append(post.register_forward_pre_hook(self._store_post_scale(i, post), with_kwargs=True))

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()

    # The hooks take `kwargs` optionally: torch registers a with-kwargs hook in two steps (the hook, then its
    # with-kwargs flag), so another thread's forward pass through the same model can call it in between
    # without kwargs. Such a call is never this recording's (`_active()` differs) and returns at once.
    def _store_input(self, i: int, key: str):
        def hook(module, args, kwargs=None):
            if _active() is not self:  # another thread's forward pass through the same model
                return
            hidden = args[0] if args else kwargs["hidden_states"]
            self.keep(i, key, hidden[0])

        return hook

    def _store_post_scale(self, i: int, norm: torch.nn.Module):
        eps = getattr(norm, "eps", getattr(norm, "variance_epsilon", 1e-6))

        def hook(module, args, kwargs=None):
            if _active() is not self:
                return
            u = (args[0] if args else kwargs["hidden_states"])[0].float()
            self.slots[i]["post_scale"] = torch.rsqrt(u.pow(2).mean(-1) + eps)

        return hook

    def capture_attention(self, module, query, key, value, scaling, softcap, sliding_window) -> bool:
        """Keep q, k, v of a recorded layer; False for attention modules outside the recorded model."""
        i = self.attn_index.get(id(module))
        if i is None:
            return False
        if query.shape[0] != 1:
            raise InputError("recording supports one sequence at a time (batch size 1)")
        for name, tensor in (("q", query[0]), ("k", key[0]), ("v", value[0])):
            self.keep(i, name, tensor)
        self.slots[i].update(
            scaling=float(scaling if scaling is not None else query.shape[-1] ** -0.5),
            softcap=softcap, sliding_window=sliding_window,
        )
        return True

    def capture_lse(self, module, lse: torch.Tensor) -> None:
        self.slots[self.attn_index[id(module)]]["lse"] = lse[0].detach().float()

    def layer_records(self) -> list[LayerRecord]:
        records = []
        for layer, slot in zip(self.layers, self.slots):
            missing = {"x_prev", "q", "k", "v", *(["x_mid"] if self.keep_mid else [])} - slot.keys()
            if missing:
                raise RuntimeError(f"recording incomplete: {sorted(missing)} not captured; is the model loaded with "
                                   f"attn_implementation='{ATTN_IMPLEMENTATION}'?")
            w_o, b_o = output_projection(self.spec, layer, slot["q"].shape[0])
            records.append(LayerRecord(w_o=w_o, b_o=b_o, **{"x_mid": None, **slot}))
        return records


def output_projection(spec: FamilySpec, layer: torch.nn.Module, n_heads: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-head output projection ``[H, dv, D]`` and bias ``[D]``, with any post-attention norm gain folded in.

    Args:
        spec: The model's family spec (where the projection and the post-attention norm are).
        layer: The decoder layer.
        n_heads: The number of query heads.

    Returns:
        ``(w_o, b_o)``: the projection ``[H, dv, D]`` and the bias ``[D]`` (None when the projection has none),
            detached, the gain folded in (then float32).
    """
    proj = getattr(getattr(layer, spec.attention), spec.out_proj)
    w_o = spec.heads_of(proj, n_heads).detach()
    b_o = proj.bias.detach() if getattr(proj, "bias", None) is not None else None
    if spec.post_attn_norm:
        gain = spec.post_norm_gain(getattr(layer, spec.post_attn_norm)).detach().float()
        w_o = w_o.float() * gain
        b_o = b_o.float() * gain if b_o is not None else None
    return w_o, b_o


_LOCAL = threading.local()  # per thread: the stack of recordings in progress
_PASSES = [0]  # forward passes recorded by this process (the cost estimate's warm-up term)


def forward_passes() -> int:
    """How many forward passes this process has recorded (0: the next one pays the warm-up).

    Returns:
        The count of recorded forward passes.
    """
    return _PASSES[0]


def _stack() -> list[_Recorder]:
    if not hasattr(_LOCAL, "stack"):
        _LOCAL.stack = []
    return _LOCAL.stack


def _active() -> _Recorder | None:
    stack = _stack()
    return stack[-1] if stack else None


def _blocked_eager_attention(query, key, value, attention_mask, scaling, softcap, sliding_window, block=512):
    """Exact eager-style attention computed a block of query rows at a time (for soft-capped logits,
    which SDPA cannot do). Batch size 1 or an explicit boolean/additive mask. Returns the output
    ``[B, L, H, dv]`` and the softmax log-sum-exp ``[B, H, L]`` float32."""
    bsz, n_heads, q_len, _ = query.shape
    kv_len = key.shape[2]
    out = torch.empty(bsz, q_len, n_heads, value.shape[-1], dtype=query.dtype, device=query.device)
    lse = torch.empty(bsz, n_heads, q_len, dtype=torch.float32, device=query.device)
    rep = n_heads // key.shape[1]
    for b in range(bsz):
        positions = torch.arange(kv_len - q_len, kv_len, device=query.device)
        for blk in row_blocks(torch.arange(q_len, device=query.device), block):
            logits = attention_logits(query[b][:, blk], key[b], positions[blk], scaling, softcap,
                                      None if attention_mask is not None else sliding_window)
            if attention_mask is not None:
                mask = attention_mask[b, :, blk, :kv_len]
                logits = logits.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else logits + mask
            lse[b, :, blk] = torch.logsumexp(logits, dim=-1)
            probs = torch.softmax(logits, dim=-1).to(value.dtype)  # [H, r, kv]
            out[b, blk] = torch.einsum("hrk,hkd->rhd", probs, value[b].repeat_interleave(rep, dim=0))
    return out, lse


def _flash_attention_with_lse(module, query, key, value, attention_mask, scaling, dropout, kwargs):
    """The CPU flash-attention kernel that SDPA itself dispatches to, called directly so that it also
    returns the softmax log-sum-exp ``[B, H, L]``. None where that kernel does not apply (not CPU,
    dropout, position bias, a key cache longer than the queries): the caller then runs SDPA."""
    q_len, kv_len = query.shape[2], key.shape[2]
    if (query.device.type != "cpu" or dropout or kwargs.get("position_bias") is not None or q_len != kv_len
            or query.dtype not in (torch.float32, torch.bfloat16, torch.float16)):
        return None
    mask = attention_mask
    if mask is not None:
        if mask.dtype == torch.bool:
            mask = torch.zeros(mask.shape, dtype=query.dtype, device=mask.device).masked_fill_(~mask, float("-inf"))
        mask = mask[..., :kv_len].to(query.dtype)
    is_causal = bool(mask is None and q_len > 1 and kwargs.get("is_causal", getattr(module, "is_causal", True)))
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        query, key, value, 0.0, is_causal, attn_mask=mask, scale=scaling)
    return out.transpose(1, 2).contiguous(), lse


def flashtrace_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                         attention_mask: torch.Tensor | None, scaling: float | None = None, dropout: float = 0.0,
                         **kwargs: Any) -> tuple[torch.Tensor, None]:
    """Attention function registered as ``"ft_record"``: SDPA, plus capture while recording.

    Args:
        module: The attention module calling it (captured when it belongs to the model this thread records).
        query: The queries ``[B, H, L, d]``.
        key: The keys ``[B, KVH, S, d]``.
        value: The values ``[B, KVH, S, dv]``.
        attention_mask: The mask transformers built (boolean or additive), or None.
        scaling: The factor of the logits; None for ``d ** -0.5``.
        dropout: The attention's dropout probability.
        **kwargs: transformers' other attention arguments, passed on to SDPA; ``softcap`` and ``sliding_window``
            are read too (soft-capped logits are computed here exactly, a block of rows at a time: SDPA cannot).

    Returns:
        ``(output, None)``: the attention output ``[B, L, H, dv]`` and no attention weights.

    Raises:
        InputError: When a recording's forward pass holds more than one sequence (batch size 1 only).
    """
    softcap = kwargs.get("softcap")
    sliding_window = kwargs.get("sliding_window")
    recorder = _active()
    captured = recorder is not None and recorder.capture_attention(module, query, key, value, scaling, softcap,
                                                                     sliding_window)
    if softcap is not None:
        scale = scaling if scaling is not None else query.shape[-1] ** -0.5
        out, lse = _blocked_eager_attention(query, key, value, attention_mask, scale, softcap, sliding_window)
        if captured:
            recorder.capture_lse(module, lse)
        return out, None
    if captured:  # the same kernel as SDPA on the CPU, plus the log-sum-exp the attribution reuses
        result = _flash_attention_with_lse(module, query, key, value, attention_mask, scaling, dropout, kwargs)
        if result is not None:
            recorder.capture_lse(module, result[1])
            return result[0], None
    return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs)


AttentionInterface.register(ATTN_IMPLEMENTATION, flashtrace_attention)
AttentionMaskInterface.register(ATTN_IMPLEMENTATION, sdpa_mask)


@contextmanager
def _recording(spec: FamilySpec, model: torch.nn.Module, keep_mid: bool = False):
    recorder = _Recorder(spec, model, keep_mid)
    recorder.install()
    _stack().append(recorder)
    try:
        yield recorder
    finally:
        _stack().remove(recorder)
        recorder.remove()


@torch.no_grad()
def record_forward(loaded: Any, input_ids: torch.Tensor | list[int], keep_logits: bool = False,
                   keep_mid: bool = False) -> Recording:
    """Run the model once over `input_ids` (one sequence) and keep every layer's `LayerRecord`.

    Args:
        loaded: A `LoadedModel` (model + spec).
        input_ids: The token ids of one sequence.
        keep_logits: Keep the logits of every position; only the last position's logits are computed otherwise
            (full logits cost ``N × vocab`` floats).
        keep_mid: Keep the residual stream after attention (``x_mid``; the load-time check compares it with the
            decomposition). Without it the attribution rebuilds what it needs of it from the attention it
            computes anyway (`LayerRecord.attention_sum`), which saves ``N × D`` per layer, about a quarter of
            the recording.

    Returns:
        The `Recording`: the ids, every layer's `LayerRecord`, the pass's seconds and the last position's logits
            (all of them in ``meta["logits"]`` with `keep_logits`).

    Raises:
        InputError: When `input_ids` is empty.
        RuntimeError: When a layer's tensors were not captured (the model does not run FlashTrace's attention).
    """
    model, spec = loaded.model, loaded.spec
    ids = torch.as_tensor(input_ids, dtype=torch.long).reshape(1, -1).to(loaded.device)
    if ids.shape[1] == 0:
        raise InputError("cannot record an empty sequence")
    start = time.perf_counter()
    # FlashTrace's attention function and eval mode for this pass only: a model object passed in is left as found
    with in_use(model, ATTN_IMPLEMENTATION), _recording(spec, model, keep_mid) as recorder:
        kwargs = {} if keep_logits else {"logits_to_keep": 1}
        out = model(input_ids=ids, use_cache=False, **kwargs)
    seconds = time.perf_counter() - start
    _PASSES[0] += 1
    logits = out.logits[0]
    return Recording(
        input_ids=ids[0].cpu(),
        layers=recorder.layer_records(),
        forward_seconds=seconds,
        last_logits=logits[-1].float().cpu(),
        meta={"logits": logits.float() if keep_logits else None},
    )
