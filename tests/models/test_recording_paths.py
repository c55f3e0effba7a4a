"""The recording's own computations, each against an independent one: the attention sum it rebuilds instead of
keeping x_mid, the sandwich norm's scale with the norm's own epsilon, the causal mask of the shortest sequence,
soft-capped attention in half precision and on the query's device, its refusals in words, and the callers it
meets: attention left to SDPA's default scale or dropout, layers given hidden_states by keyword."""

import dataclasses

import pytest
import torch

from flashtrace.engine.models import load_model, record_forward
from flashtrace.engine.models.recording import _flash_attention_with_lse, _recording, flashtrace_attention
from tests.attribution.reference import explicit_attention
from tests.fake_cuda import fake_cuda
from tests.conftest import random_ids
from tests.models.test_recording import _eager_attentions

N = 40


def _identity_error(layer, w: torch.Tensor, attention_sum: torch.Tensor) -> float:
    want = w @ layer.attention_output().double()
    return ((attention_sum.double() - want).norm() / want.norm()).item()


def test_the_attention_sum_rebuilds_what_the_block_added_for_several_weighted_spans(tiny):
    """Decomposition identity (METHOD.md §5.2) for two spans at once, weights that do not sum to 1 and come in
    float64: ``attention_sum(ᾱ, Σ_i coef) = Σ_i w[b, i]·(x_mid[i] − x_prev[i])`` in float32, with ᾱ from the
    explicit float64 attention (grouped-query heads, output biases and sandwich norms included)."""
    rec = record_forward(tiny, random_ids(N, seed=8), keep_mid=True)
    w = 3 * torch.rand(2, N, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    for layer in rec.layers:
        coef = w * layer.post_scale.double() if layer.post_scale is not None else w
        got = layer.attention_sum(torch.einsum("bi,hij->bhj", coef, explicit_attention(layer)), coef.sum(1))
        assert got.dtype == torch.float32 and got.shape == (2, layer.x_prev.shape[1])
        assert _identity_error(layer, w, got) < 1e-4


def test_the_attention_sum_of_a_recording_on_a_gpu_takes_cpu_inputs(tiny_llama):
    """On a (stand-in) GPU, ᾱ and the coefficient totals a caller has on the CPU are moved to the recording's
    device: the same sum as on the CPU, there."""
    layer = record_forward(tiny_llama, random_ids(N, seed=8)).layers[0]
    assert layer.b_o is not None  # the bias term is moved too
    w = torch.rand(2, N, generator=torch.Generator().manual_seed(4))
    abar = torch.einsum("bi,hij->bhj", w.double(), explicit_attention(layer)).float()
    want = layer.attention_sum(abar, w.sum(1))
    with fake_cuda():
        on_gpu = dataclasses.replace(layer, v=layer.v.cuda(), w_o=layer.w_o.cuda(), b_o=layer.b_o.cuda())
        got = on_gpu.attention_sum(abar, w.sum(1))
        assert got.device.type == "cuda"
        got = got.cpu()
    assert torch.allclose(got, want, atol=1e-6)


def test_the_sandwich_norms_scale_uses_the_norms_own_epsilon(monkeypatch):
    """Gemma's post-attention norm divides by ``sqrt(mean(u²) + eps)``; with an epsilon far from the usual 1e-6
    (one that dominates these small activations) the recorded scale still rebuilds x_mid − x_prev."""
    loaded = load_model("tiny-gemma2")
    norms = [layer.post_attention_layernorm for layer in loaded.spec.decoder_layers(loaded.model)]
    for norm in norms:
        monkeypatch.setattr(norm, "eps", 0.5)
    rec = record_forward(loaded, random_ids(N, seed=9), keep_mid=True)
    w = torch.ones(1, N, dtype=torch.float64)
    for layer in rec.layers:
        assert layer.post_scale.max() <= 0.5 ** -0.5  # the epsilon of 0.5 is in it
        coef = w * layer.post_scale.double()
        got = layer.attention_sum(torch.einsum("bi,hij->bhj", coef, explicit_attention(layer)), coef.sum(1))
        assert _identity_error(layer, w, got) < 1e-4


def test_a_two_token_sequence_is_recorded_causally(tiny):
    """The shortest sequence with something to mask: the first token must not see the second."""
    ids = random_ids(2, seed=4)
    rec = record_forward(tiny, ids, keep_logits=True)
    eager = _eager_attentions(tiny, ids).logits[0].float()
    assert torch.allclose(rec.meta["logits"], eager, atol=1e-4)
    assert torch.equal(rec.last_logits, rec.meta["logits"][-1])


def test_soft_capped_attention_records_in_bfloat16():
    """Gemma 2 in bfloat16: the soft-capped attention keeps the model's dtype (its output and probabilities),
    and the recorded pass gives the model's own eager logits."""
    loaded = load_model("tiny-gemma2", dtype=torch.bfloat16)
    ids = random_ids(N, seed=10)
    rec = record_forward(loaded, ids, keep_logits=True)
    eager = _eager_attentions(loaded, ids).logits[0].float()
    assert rec.layers[0].q.dtype == torch.bfloat16 and rec.layers[0].lse.dtype == torch.float32
    assert torch.allclose(rec.meta["logits"], eager, atol=0.05)


def test_soft_capped_attention_stays_on_the_querys_device_whatever_torchs_default_device():
    """Outside a recording the registered attention function is plain attention; with torch's default device
    set elsewhere its output is still where the query is, and the same."""
    gen = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(1, h, 6, 4, generator=gen) for h in (4, 2, 2))

    def attend():
        out, probs = flashtrace_attention(torch.nn.Module(), q, k, v, None, scaling=0.5, softcap=2.0)
        assert probs is None
        return out

    plain = attend()
    with torch.device("meta"):
        elsewhere = attend()
    assert elsewhere.device == q.device and torch.equal(elsewhere, plain)


def test_a_recording_refuses_a_batch_in_words(tiny_llama):
    ids = random_ids(8, seed=1)[None].repeat(2, 1)
    with _recording(tiny_llama.spec, tiny_llama.model), pytest.raises(ValueError) as refused, torch.no_grad():
        tiny_llama.model(input_ids=ids, use_cache=False)
    assert str(refused.value) == "recording supports one sequence at a time (batch size 1)"


def test_a_pass_that_bypasses_flashtraces_attention_is_refused_as_incomplete(tiny_llama):
    """A forward pass through another attention function captures no queries, keys or values: the recording
    says what is missing and how to load the model instead of returning layers without them."""
    model = tiny_llama.model
    before = model.config._attn_implementation
    model.set_attn_implementation("sdpa")
    try:
        with _recording(tiny_llama.spec, model) as recorder, torch.no_grad():
            model(input_ids=random_ids(8, seed=2)[None], use_cache=False)
        with pytest.raises(RuntimeError) as refused:
            recorder.layer_records()
    finally:
        model.set_attn_implementation(before)
    assert str(refused.value) == ("recording incomplete: ['k', 'q', 'v'] not captured; is the model loaded with "
                                  "attn_implementation='ft_record'?")


def test_the_cpu_flash_kernel_is_used_only_where_it_applies():
    """The recording calls SDPA's own CPU flash kernel (for its log-sum-exp) only for CPU queries in float32/16
    without dropout, position bias or a longer key cache; elsewhere it declines (None) and SDPA runs. Where it
    applies it gives SDPA's causal output and the log-sum-exp of each row."""
    gen = torch.Generator().manual_seed(6)
    q, k, v = (torch.randn(1, 2, 5, 4, generator=gen) for _ in range(3))
    module = torch.nn.Module()
    out, lse = _flash_attention_with_lse(module, q, k, v, None, 0.5, 0.0, {})
    logits = (q @ k.transpose(-1, -2) * 0.5).masked_fill(torch.ones(5, 5).triu(1).bool(), float("-inf"))
    assert torch.allclose(out, (logits.softmax(-1) @ v).transpose(1, 2), atol=1e-6)
    assert torch.allclose(lse, logits.logsumexp(-1), atol=1e-5)
    assert _flash_attention_with_lse(module, q, k, v, None, 0.5, 0.1, {}) is None  # dropout
    assert _flash_attention_with_lse(module, q, k, v, None, 0.5, 0.0, {"position_bias": torch.zeros(1)}) is None
    assert _flash_attention_with_lse(module, q[:, :, -1:], k, v, None, 0.5, 0.0, {}) is None  # a key cache
    assert _flash_attention_with_lse(module, q.double(), k.double(), v.double(), None, 0.5, 0.0, {}) is None
    with fake_cuda():
        assert _flash_attention_with_lse(module, q.cuda(), k.cuda(), v.cuda(), None, 0.5, 0.0, {}) is None


def test_outside_a_recording_flashtraces_attention_gives_the_models_own_logits(tiny):
    """A model FlashTrace loaded keeps its attention function (generation runs through it with no recording):
    windows, soft caps and Gemma's own query scaling included, its logits are the eager ones."""
    ids = random_ids(N, seed=11)
    assert tiny.model.config._attn_implementation == "ft_record"
    with torch.no_grad():
        ours = tiny.model(input_ids=ids[None], use_cache=False).logits[0]
    assert torch.allclose(ours, _eager_attentions(tiny, ids).logits[0], atol=1e-4)


def test_attention_left_to_its_default_scale_uses_sdpas_one_over_root_d(tiny_llama, monkeypatch):
    """An attention module that passes no scale (``scaling=None``, SDPA's default ``1/√d``) is recorded with that
    scale: Llama's own scale is ``1/√d``, so the recording and the model's logits are those of a plain pass."""
    ids = random_ids(N, seed=12)
    plain = record_forward(tiny_llama, ids, keep_logits=True)
    for layer in tiny_llama.spec.decoder_layers(tiny_llama.model):
        monkeypatch.setattr(layer.self_attn, "scaling", None)
    unscaled = record_forward(tiny_llama, ids, keep_logits=True)
    head_dim = plain.layers[0].q.shape[-1]
    assert [layer.scaling for layer in unscaled.layers] == [head_dim ** -0.5] * len(plain.layers)
    assert [layer.scaling for layer in plain.layers] == [head_dim ** -0.5] * len(plain.layers)
    assert torch.allclose(unscaled.meta["logits"], plain.meta["logits"], atol=1e-5)


def test_soft_capped_attention_without_a_scale_uses_one_over_root_d():
    """Soft-capped attention (Gemma 2's path) called without a scale: ``softcap·tanh(q·k/(√d·softcap))``,
    masked causally, against an explicit computation."""
    gen = torch.Generator().manual_seed(13)
    q, k, v = (torch.randn(1, 2, 5, 9, generator=gen) for _ in range(3))
    out, probs = flashtrace_attention(torch.nn.Module(), q, k, v, None, softcap=3.0)
    logits = 3.0 * torch.tanh(q[0] @ k[0].transpose(-1, -2) / (9 ** 0.5 * 3.0))
    logits = logits.masked_fill(torch.ones(5, 5).triu(1).bool(), float("-inf"))
    want = (logits.softmax(-1) @ v[0]).transpose(0, 1)  # [L, H, dv]
    assert probs is None and torch.allclose(out[0], want, atol=1e-5)


def test_layers_called_with_hidden_states_by_keyword_are_recorded_the_same(tiny_llama):
    """A caller (a wrapper, a custom loop) that passes ``hidden_states`` to the decoder layers and to the norm
    before the MLP by keyword gets the recording of a positional call: the same x_prev, x_mid, q, k and v."""
    ids = random_ids(N, seed=14)
    plain = record_forward(tiny_llama, ids, keep_mid=True)

    def by_keyword(module, args, kwargs):
        return ((), {"hidden_states": args[0], **kwargs}) if args else None

    handles = []
    for layer in tiny_llama.spec.decoder_layers(tiny_llama.model):
        for module in (layer, getattr(layer, tiny_llama.spec.mid_norm)):
            handles.append(module.register_forward_pre_hook(by_keyword, with_kwargs=True, prepend=True))
    try:
        keyword = record_forward(tiny_llama, ids, keep_mid=True)
    finally:
        for handle in handles:
            handle.remove()
    for a, b in zip(plain.layers, keyword.layers):
        for name in ("x_prev", "x_mid", "q", "k", "v"):
            assert torch.equal(getattr(a, name), getattr(b, name)), name


def test_attention_called_without_a_dropout_argument_drops_nothing():
    """The registered attention function's dropout defaults to none, as SDPA's does: called with only the
    tensors and a mask of None it is plain causal attention."""
    gen = torch.Generator().manual_seed(15)
    q, k, v = (torch.randn(1, 2, 6, 4, generator=gen) for _ in range(3))
    out, probs = flashtrace_attention(torch.nn.Module(), q, k, v, None)
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2)
    assert probs is None and torch.allclose(out, want, atol=1e-6)
