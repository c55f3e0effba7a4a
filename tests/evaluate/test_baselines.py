"""Baselines against dense references computed with eager attention maps and full logits."""

import pytest
import torch

from flashtrace.engine.attribution.baselines import (attention_rollout, integrated_gradients, raw_attention,
                                              segment_ablation, target_logprob)
from flashtrace.engine.models import load_model, record_forward
from flashtrace.engine.models.tiny import build_tiny_model
from tests.fake_cuda import fake_cuda

N = 24


@pytest.fixture(scope="module")
def llama():
    return load_model("tiny-llama")


@pytest.fixture(scope="module")
def ids():
    return torch.randint(3, 2000, (N,), generator=torch.Generator().manual_seed(5))


@pytest.fixture(scope="module")
def eager_maps(llama, ids):
    """``[L, H, N, N]`` attention probabilities from an eager copy of the same weights."""
    eager = build_tiny_model("llama", llama.tokenizer, attn_implementation="eager")
    eager.load_state_dict(llama.model.state_dict())
    with torch.no_grad():
        out = eager(input_ids=ids[None], output_attentions=True, use_cache=False)
    return torch.stack([a[0] for a in out.attentions]).float()


def _weights(lo=N - 4, hi=N):
    w = torch.zeros(N)
    w[lo:hi] = torch.tensor([1.0, 2.0, 0.0, 1.0])
    return w


def test_raw_attention_matches_eager(llama, ids, eager_maps):
    w = _weights()
    got = raw_attention(record_forward(llama, ids), w, block=3)
    want = torch.einsum("i,lhij->j", w / w.sum(), eager_maps) / (eager_maps.shape[0] * eager_maps.shape[1])
    assert torch.allclose(got, want, atol=1e-5)
    assert got.sum() == pytest.approx(1.0, abs=1e-4)


def test_rollout_matches_dense_product(llama, ids, eager_maps):
    w = _weights()
    got = attention_rollout(record_forward(llama, ids), w, block=5)
    v = (w / w.sum()).double()
    eye = torch.eye(N, dtype=torch.double)
    for layer in reversed(range(eager_maps.shape[0])):
        v = v @ (0.5 * eye + 0.5 * eager_maps[layer].mean(0).double())
    assert torch.allclose(got.double(), v, atol=1e-5)
    assert got.sum() == pytest.approx(1.0, abs=1e-4) and got[N:].numel() == 0


def test_target_logprob_matches_full_logits(llama, ids):
    batch = torch.stack([ids, ids.flip(0)])
    with torch.no_grad():
        logp = torch.log_softmax(llama.model(input_ids=batch).logits.float(), -1)
    lo, hi = 15, 20
    want = torch.stack([sum(logp[b, t - 1, batch[b, t]] for t in range(lo, hi)) for b in range(2)])
    got = target_logprob(llama.model, batch, (lo, hi), batch_size=1)
    assert torch.allclose(got.float(), want, atol=1e-4)
    with pytest.raises(ValueError):
        target_logprob(llama.model, batch, (0, 3))


def test_segment_ablation_is_the_logprob_drop(llama, ids):
    segs = [[2, 3, 4], [7], [9, 10]]
    target = (N - 4, N)
    got = segment_ablation(llama.model, ids, segs, target, replace_id=0, batch_size=2)
    base = target_logprob(llama.model, ids[None], target)[0]
    for seg in segs:
        pert = ids.clone()
        pert[seg] = 0
        drop = float(base - target_logprob(llama.model, pert[None], target)[0])
        assert got[seg].tolist() == pytest.approx([drop / len(seg)] * len(seg), abs=1e-5)
    untouched = [i for i in range(N) if not any(i in s for s in segs)]
    assert (got[untouched] == 0).all()


def test_integrated_gradients_completeness(llama, ids):
    """Attributions sum to f(input) - f(baseline) (up to quadrature error); unexplained positions get 0."""
    positions, target = list(range(2, 14)), (N - 4, N)
    attr = integrated_gradients(llama.model, ids, target, positions, baseline_id=0, steps=32)
    base = ids.clone()
    base[positions] = 0
    delta = target_logprob(llama.model, torch.stack([ids, base]), target)
    assert float(attr.sum()) == pytest.approx(float(delta[0] - delta[1]), rel=0.05, abs=1e-3)
    outside = [i for i in range(N) if i not in positions]
    assert attr[outside].abs().max() == 0
    assert attr[positions].abs().sum() > 0


def test_integrated_gradients_chunking_does_not_change_the_result(llama, ids):
    """Long inputs run the steps in token-bounded chunks (memory); the attribution is the same."""
    positions, target = list(range(2, 14)), (N - 4, N)
    batches: list[int] = []
    hook = llama.model.register_forward_pre_hook(
        lambda module, args, kwargs: batches.append(kwargs["inputs_embeds"].shape[0]), with_kwargs=True)
    try:
        whole = integrated_gradients(llama.model, ids, target, positions, baseline_id=0, steps=8)
        chunked = integrated_gradients(llama.model, ids, target, positions, baseline_id=0, steps=8,
                                       max_batch_tokens=3 * N)  # 3 sequences per chunk
    finally:
        hook.remove()
    assert batches == [8, 3, 3, 2]
    assert torch.allclose(whole, chunked, rtol=1e-4, atol=1e-6)


def test_integrated_gradients_runs_16_steps_by_default_and_one_long_sequence_per_chunk(llama, ids):
    """The default path has 16 steps, run in one chunk when they fit the token bound; a sequence longer than the
    bound still runs, one step at a time (the chunk is at least one sequence), to the same attribution."""
    positions, target = list(range(2, 14)), (N - 4, N)
    batches: list[int] = []
    hook = llama.model.register_forward_pre_hook(
        lambda module, args, kwargs: batches.append(kwargs["inputs_embeds"].shape[0]), with_kwargs=True)
    try:
        default = integrated_gradients(llama.model, ids, target, positions, baseline_id=0)
        assert batches == [16]
        batches.clear()
        one_by_one = integrated_gradients(llama.model, ids, target, positions, baseline_id=0, steps=4,
                                          max_batch_tokens=N // 2)
        assert batches == [1, 1, 1, 1]
    finally:
        hook.remove()
    assert torch.allclose(default, integrated_gradients(llama.model, ids, target, positions, baseline_id=0, steps=16))
    assert torch.allclose(one_by_one, integrated_gradients(llama.model, ids, target, positions, baseline_id=0, steps=4),
                          rtol=1e-4, atol=1e-6)


def test_integrated_gradients_moves_ids_to_the_models_device(llama, ids):
    """Ids that arrive on another device than the model (here on the stand-in GPU, the model on the CPU) are moved
    to the model's device; the attribution is the one for CPU ids and comes back on the CPU."""
    positions, target = list(range(2, 14)), (N - 4, N)
    on_cpu = integrated_gradients(llama.model, ids, target, positions, baseline_id=0, steps=4)
    with fake_cuda():
        gpu_ids = ids.cuda()
        assert gpu_ids.device.type == "cuda"
        moved = integrated_gradients(llama.model, gpu_ids, target, positions, baseline_id=0, steps=4)
    assert type(moved) is torch.Tensor and moved.device.type == "cpu"
    assert torch.allclose(moved, on_cpu, rtol=1e-5, atol=1e-8)  # the stand-in's dispatch can change the last bit


@pytest.mark.parametrize("weights", [torch.ones(N - 1), -_weights(), torch.zeros(N),
                                     _weights().index_fill(0, torch.tensor([0]), -.5)],
                         ids=["too short", "negative", "all zero", "one negative, a positive sum"])
def test_attention_baselines_refuse_target_weights_that_are_not_a_target(llama, ids, weights):
    rec = record_forward(llama, ids)
    for baseline in (raw_attention, attention_rollout):
        with pytest.raises(ValueError, match=f"^target weights must be {N} non-negative numbers with a positive sum$"):
            baseline(rec, weights)
