"""The recording and its decomposition identity, on every supported family."""

import dataclasses

import pytest
import torch

from flashtrace.engine.models import load_model, record_forward
from flashtrace.engine.models.attention import attention_logits, attention_rows
from tests.attribution.reference import explicit_attention
from tests.conftest import random_ids

N = 48


def _eager_attentions(loaded, ids):
    model = loaded.model
    model.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            out = model(ids[None], output_attentions=True, use_cache=False)
    finally:
        model.set_attn_implementation("ft_record")
    return out


def test_decomposition_reproduces_attention_output(tiny):
    """Σ_h Σ_j α[h,i,j]·F[h,j] (+ bias), times the sandwich-norm scale, equals x_mid - x_prev."""
    rec = record_forward(tiny, random_ids(N), keep_mid=True)
    for layer in rec.layers:
        (_, probs), = list(attention_rows(layer, torch.arange(N), block=N))
        recon = torch.einsum("hij,hjd->id", probs.double(), layer.head_values(slice(0, N)).double())
        if layer.b_o is not None:
            recon = recon + layer.b_o.double()
        if layer.post_scale is not None:
            recon = recon * layer.post_scale.double()[:, None]
        actual = layer.attention_output().double()
        assert ((recon - actual).norm() / actual.norm()).item() < 1e-4


def test_tiny_models_exercise_biases(tiny):
    """Families with biases have non-zero ones, so the identity test covers them."""
    biases = [p for n, p in tiny.model.named_parameters() if n.endswith("bias") and "attn" in n]
    assert bool(biases) == (tiny.spec.name in ("qwen2", "llama", "gpt2"))  # the others have none to test
    assert all(b.abs().sum() > 0 for b in biases)


def test_recomputed_rows_equal_eager_attention(tiny):
    ids = random_ids(N, seed=1)
    rec = record_forward(tiny, ids)
    eager = _eager_attentions(tiny, ids).attentions
    rows = torch.tensor([0, 3, 17, 30, 47])
    for layer, att in zip(rec.layers, eager):
        for blk, probs in attention_rows(layer, rows, block=2):
            assert probs.shape == (layer.n_heads, blk.numel(), 48)  # the sources up to the last row asked for
            expected = att[0][:, blk, : probs.shape[-1]].float()
            assert torch.allclose(probs, expected, atol=1e-5)
            assert torch.all(att[0][:, blk, probs.shape[-1]:] == 0)


def test_recomputed_rows_apply_the_soft_cap_where_it_bites(tiny):
    """Queries scaled up so the logits reach the soft cap (Gemma 2): rows rebuilt by `attention_rows` still
    equal the explicit float64 attention, which caps every logit, and cover the sources up to the last row."""
    rec = record_forward(tiny, random_ids(N, seed=2))
    rows = torch.tensor([1, 6, 20])
    for layer in rec.layers:
        loud = dataclasses.replace(layer, q=layer.q * 40)
        reference = explicit_attention(loud)[:, rows, :21]
        got = list(attention_rows(loud, rows, block=2))
        assert [blk.tolist() for blk, _ in got] == [[1, 6], [20]]
        probs = torch.cat([p for _, p in got], dim=1)
        assert probs.shape == (layer.n_heads, 3, 21)
        assert torch.allclose(probs.double(), reference, atol=1e-5)


def test_logits_for_keys_from_an_offset_are_masked_causally():
    """`attention_logits` for keys at positions ``key_offset..``: a row sees the keys up to its own position,
    every later key (and every key of a row that precedes them all) is -inf; the visible ones are scaled q·k."""
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(4, 3, 8, generator=gen), torch.randn(2, 5, 8, generator=gen)  # 4 heads share 2 keys
    rows = torch.tensor([1, 5, 7])
    logits = attention_logits(q, k, rows, 0.5, key_offset=3)  # keys at positions 3..7
    positions = torch.arange(3, 8)
    for h in range(4):
        for i, row in enumerate(rows.tolist()):
            want = (k[h // 2] @ q[h, i]) * 0.5
            visible = positions <= row
            assert torch.allclose(logits[h, i, visible], want[visible], atol=1e-5)
            assert torch.all(logits[h, i, ~visible] == float("-inf"))
    assert torch.all(logits[:, 0] == float("-inf"))  # row 1 comes before every key


def test_recording_is_deterministic_and_leaves_logits_unchanged(tiny):
    ids = random_ids(N, seed=2)
    a = record_forward(tiny, ids, keep_logits=True, keep_mid=True)
    b = record_forward(tiny, ids, keep_mid=True)
    for la, lb in zip(a.layers, b.layers):
        for name in ("x_prev", "x_mid", "q", "k", "v"):
            assert torch.equal(getattr(la, name), getattr(lb, name))
    tiny.model.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            plain = tiny.model(ids[None], use_cache=False).logits[0]
    finally:
        tiny.model.set_attn_implementation("ft_record")
    assert torch.allclose(a.meta["logits"], plain, atol=1e-5)


def test_recording_keeps_no_quadratic_tensor(tiny_llama):
    n = 256
    rec = record_forward(tiny_llama, random_ids(n, seed=3), keep_mid=True)
    for layer in rec.layers:
        for name in ("x_prev", "x_mid", "q", "k", "v"):
            t = getattr(layer, name)
            assert t.numel() < n * n, f"{name} {tuple(t.shape)} is quadratic in N"


def test_sliding_window_is_applied(tiny):
    """Where a layer has a window, rows far from the start do not see the first tokens."""
    rec = record_forward(tiny, random_ids(N, seed=4))
    windowed = [layer for layer in rec.layers if layer.sliding_window]
    for layer in windowed:
        (_, probs), = list(attention_rows(layer, torch.tensor([N - 1])))
        assert torch.all(probs[:, 0, : N - layer.sliding_window] == 0)
    assert bool(windowed) == (tiny.spec.name in ("mistral", "gemma2", "gemma3"))


def test_x_mid_is_kept_only_when_asked(tiny_llama):
    """The default recording leaves out x_mid (the attribution rebuilds it); asking for it elsewhere
    says how to get it."""
    ids = random_ids(N, seed=5)
    plain, kept = record_forward(tiny_llama, ids), record_forward(tiny_llama, ids, keep_mid=True)
    assert all(layer.x_mid is None for layer in plain.layers)
    assert all(layer.x_mid.shape == layer.x_prev.shape for layer in kept.layers)
    d_model = kept.layers[0].x_prev.shape[1]
    assert kept.nbytes() - plain.nbytes() == len(kept.layers) * N * d_model * 4
    with pytest.raises(ValueError) as refused:
        plain.layers[0].attention_output()
    assert str(refused.value) == "this recording did not keep x_mid: record with keep_mid=True"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_cpu_recording_keeps_each_kind_in_one_block(dtype):
    """Every layer's q, k, v and x_prev are views of one [L, ...] block per kind (not the forward's own
    buffers, which would stay scattered over the heap), in the model's dtype, with the same values as the
    forward's."""
    loaded = load_model("tiny-llama", dtype=dtype)
    ids = random_ids(N, seed=6)
    rec = record_forward(loaded, ids)
    for name in ("x_prev", "q", "k", "v"):
        tensors = [getattr(layer, name) for layer in rec.layers]
        assert len({t.untyped_storage().data_ptr() for t in tensors}) == 1, name
        assert len({t.data_ptr() for t in tensors}) == len(tensors), name
        assert {t.dtype for t in tensors} == {dtype}, name
    again = record_forward(loaded, ids)
    assert all(torch.equal(a.q, b.q) and torch.equal(a.x_prev, b.x_prev) for a, b in zip(rec.layers, again.layers))


def test_a_layer_of_another_shape_keeps_its_own_tensor(tiny_llama):
    from flashtrace.engine.models.recording import _Recorder

    recorder = _Recorder(tiny_llama.spec, tiny_llama.model)
    first, other = torch.randn(4, 8), torch.randn(4, 6)
    recorder.keep(0, "x_prev", first)
    recorder.keep(1, "x_prev", other)
    assert torch.equal(recorder.slots[0]["x_prev"], first) and torch.equal(recorder.slots[1]["x_prev"], other)
    assert recorder.slots[1]["x_prev"].data_ptr() != other.data_ptr()  # a copy: the forward's buffer is freed


def test_a_tensor_on_a_gpu_is_kept_where_it_is(tiny_llama):
    """A GPU pass's tensors stay on the GPU as the forward made them (detached): no CPU block is allocated for
    them, and the attribution reads them there."""
    from flashtrace.engine.models.recording import _Recorder
    from tests.fake_cuda import fake_cuda

    recorder = _Recorder(tiny_llama.spec, tiny_llama.model)
    with fake_cuda():
        q = torch.randn(4, 8, requires_grad=True).cuda()
        recorder.keep(0, "q", q)
        kept = recorder.slots[0]["q"]
        assert kept.device.type == "cuda" and not kept.requires_grad
        assert kept.data_ptr() == q.data_ptr() and torch.equal(kept.cpu(), q.detach().cpu())
    assert recorder.blocks == {}
