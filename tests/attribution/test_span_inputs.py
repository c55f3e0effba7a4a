"""What a caller passes to span aggregation: the weights (their dtypes and refusals), the threshold τ, the
device of the recording and of torch's default, and the memory budget each block of work must fit."""

import dataclasses

import pytest
import torch

from flashtrace.engine.attribution import span_aggregate
from flashtrace.engine.models.recording import LayerRecord, Recording
from tests.attribution.reference import reference_span_scores
from tests.attribution.test_span import random_recording
from tests.fake_cuda import fake_cuda


def test_threshold_prunes_small_parts_and_renormalises():
    rec = random_recording(seed=10)
    w = torch.ones(rec.n_tokens)
    plain = span_aggregate(rec, w).scores
    assert torch.equal(span_aggregate(rec, w, threshold=0.0).scores, plain)
    pruned = span_aggregate(rec, w, threshold=0.02).scores
    assert (pruned == 0).sum() > (plain == 0).sum()
    assert torch.all(pruned >= 0)
    assert torch.allclose(pruned[0].double(), reference_span_scores(rec, w, threshold=0.02), atol=1e-5)
    # renormalised over what is left: the strongest source's share grows
    assert pruned.max() > plain.max()


@pytest.mark.parametrize("scale", [1.0, 1 / 16], ids=["activations of size 1", "activations 16 times smaller"])
def test_a_share_of_exactly_tau_is_kept_at_any_activation_scale(scale):
    """τ prunes shares *below* it, and a share does not depend on the activations' scale. One head, target
    row 1 attending evenly to sources 0 and 1 (values 2 and 4), residual 1, whole 4: proximities 1 and 2,
    residual 1, so shares ¼, ½ and ¼ exactly (with every activation scaled, the same shares)."""
    ones = torch.ones(1, 1, 1)
    layer = LayerRecord(x_prev=scale * torch.tensor([[0.0], [1.0]]), x_mid=scale * torch.tensor([[0.0], [4.0]]),
                        q=torch.zeros(1, 2, 1), k=torch.zeros(1, 2, 1), v=scale * torch.tensor([[[2.0], [4.0]]]),
                        w_o=ones, b_o=None, scaling=1.0)
    rec = Recording(input_ids=torch.arange(2), layers=[layer], forward_seconds=0.0)
    w = torch.tensor([0.0, 1.0])
    assert span_aggregate(rec, w).scores.tolist() == [[0.25, 0.5]]
    assert span_aggregate(rec, w, threshold=0.25).scores.tolist() == [[0.25, 0.5]]  # ¼ is not below ¼
    pruned = span_aggregate(rec, w, threshold=0.26).scores  # the first source pruned, the rest renormalised
    assert torch.equal(pruned, torch.tensor([[0.0, 2 / 3]]))


def test_a_threshold_applies_to_each_span_on_its_own():
    rec = random_recording(seed=10)
    a, b = torch.zeros(rec.n_tokens), torch.zeros(rec.n_tokens)
    a[20:], b[10:14] = 1.0, 1.0
    together = span_aggregate(rec, torch.stack([a, b]), threshold=0.03).scores
    assert torch.allclose(together[0], span_aggregate(rec, a, threshold=0.03).scores[0], atol=1e-6)
    assert torch.allclose(together[1], span_aggregate(rec, b, threshold=0.03).scores[0], atol=1e-6)


def test_weights_in_float64_or_integers_give_the_float32_weights_scores():
    """numpy's and Python's defaults (float64 arrays, integer lists) are weights like any other."""
    import numpy as np

    rec = random_recording(seed=4)
    w = torch.zeros(24)
    w[12:20] = 2.0
    want = span_aggregate(rec, w).scores
    assert torch.equal(span_aggregate(rec, w.double()).scores, want)
    assert torch.equal(span_aggregate(rec, np.asarray(w.tolist())).scores, want)
    assert torch.equal(span_aggregate(rec, [int(x) for x in w.tolist()]).scores, want)


@pytest.mark.parametrize("bad", [torch.zeros(24), -torch.ones(24), torch.full((24,), float("nan")), torch.ones(23)])
def test_bad_weights_are_refused(bad):
    with pytest.raises(ValueError):
        span_aggregate(random_recording(), bad)


@pytest.mark.parametrize("bad, words", [
    (torch.zeros(24), "every weight vector needs at least one positive weight (the target span is empty)"),
    (-torch.ones(24), "weights must be finite and non-negative"),
    (torch.full((24,), float("nan")), "weights must be finite and non-negative"),
    (torch.ones(23), "weights must have shape [B, 24], got (1, 23)"),
    (torch.ones(2, 2, 24), "weights must have shape [B, 24], got (2, 2, 24)")])
def test_bad_weights_are_refused_saying_what_is_wrong(bad, words):
    with pytest.raises(ValueError) as refused:
        span_aggregate(random_recording(), bad)
    assert str(refused.value) == words


@pytest.mark.parametrize("value_kernel", [True, False], ids=["CPU value kernel", "head values (other devices)"])
def test_scores_are_on_the_cpu_and_the_same_whatever_torchs_default_device(value_kernel, monkeypatch):
    """A notebook that set ``torch.set_default_device`` elsewhere still gets its scores and per-head shares on
    the CPU, equal to those without that default (the weights may be a plain list)."""
    rec = random_recording(seed=1, window=5, post_norm=True, bias=True)
    plain = span_aggregate(rec, torch.ones(24), per_head=True, value_kernel=value_kernel)
    with torch.device("meta"):
        elsewhere = span_aggregate(rec, [1.0] * 24, per_head=True, value_kernel=value_kernel)
    assert elsewhere.scores.device.type == "cpu" and elsewhere.heads.device.type == "cpu"
    assert torch.equal(elsewhere.scores, plain.scores) and torch.equal(elsewhere.heads, plain.heads)


@pytest.mark.parametrize("value_kernel", [True, False], ids=["CPU value kernel set", "head values"])
def test_a_recording_on_a_gpu_gives_the_cpus_scores_on_the_cpu(value_kernel, monkeypatch):
    """A recording on a (stand-in) GPU: the weights are moved to it, the head-value path runs there whatever
    `value_kernel` says (the value kernel is for CPU tensors), and the scores come back to the CPU."""
    rec = random_recording(seed=1, window=5, post_norm=True, bias=True)
    w = torch.ones(24)
    want = span_aggregate(rec, w, per_head=True)
    fields = ("x_prev", "x_mid", "q", "k", "v", "w_o", "b_o", "post_scale")
    with fake_cuda():
        on_gpu = [dataclasses.replace(layer, **{f: getattr(layer, f).cuda() for f in fields
                                                if getattr(layer, f) is not None}) for layer in rec.layers]
        got = span_aggregate(dataclasses.replace(rec, layers=on_gpu), w, per_head=True, value_kernel=value_kernel)
    assert got.scores.device.type == "cpu" and got.heads.device.type == "cpu"
    assert torch.allclose(got.scores, want.scores, atol=1e-6) and torch.allclose(got.heads, want.heads, atol=1e-6)


def _target_weights(n=24, first=10):
    w = torch.zeros(n)
    w[first:] = 1.0
    return w


@pytest.mark.parametrize("rows_held", [0, 1, 3], ids=["below one row", "one row", "three rows"])
def test_the_memory_budget_bounds_each_block_of_attention_logits(rows_held, monkeypatch):
    """`budget_bytes` bounds the attention rows rebuilt at once: each block of logits (float32, heads × rows ×
    sources) fits the budget and holds as many target rows as fit (below one row's worth: one row at a time).
    The blocks cover every target row once per layer, and the scores do not depend on the budget."""
    import flashtrace.engine.models.attention as attention_module

    monkeypatch.setattr(attention_module, "FUSED_CPU", False)  # the blocked path every device shares
    rec, w = random_recording(seed=5), _target_weights()
    plain = span_aggregate(rec, w).scores
    one_row = 4 * 4 * rec.n_tokens  # 4 heads, sources 0..23, float32
    budget = max(1, rows_held * one_row)
    blocks = []
    logits_of = attention_module.attention_logits

    def spy(q, k, rows, *args, **kwargs):
        out = logits_of(q, k, rows, *args, **kwargs)
        blocks.append((rows.tolist(), out.nbytes))
        return out

    monkeypatch.setattr(attention_module, "attention_logits", spy)
    scores = span_aggregate(rec, w, budget_bytes=budget).scores
    per_block = max(1, rows_held)
    targets = list(range(10, rec.n_tokens))
    want = [targets[s:s + per_block] for s in range(0, len(targets), per_block)]
    assert [rows for rows, _ in blocks] == want * len(rec.layers)
    assert all(nbytes <= max(budget, one_row) for _, nbytes in blocks)
    assert torch.allclose(scores, plain, atol=1e-6)


@pytest.mark.parametrize("sources_held", [0, 1, 3, 7], ids=["below one source", "one", "three", "seven"])
def test_the_memory_budget_bounds_each_chunk_of_head_values(sources_held, monkeypatch):
    """Where head values are formed (other devices than the CPU), they are formed a chunk of sources at a
    time: each chunk (float32, heads × sources × model width) fits half the budget and holds as many sources as
    fit (below one source's worth: one at a time); the chunks cover every source once, in order, per layer."""
    rec, w = random_recording(seed=6), _target_weights()
    plain = span_aggregate(rec, w, value_kernel=False).scores
    per_source = 4 * 4 * 16  # 4 heads × model width 16, float32
    budget = max(1, 2 * per_source * sources_held)
    chunks = []
    values_of = LayerRecord.head_values

    def spy(layer, src):
        out = values_of(layer, src)
        chunks.append((src.start, src.stop, out.nbytes))
        return out

    monkeypatch.setattr(LayerRecord, "head_values", spy)
    scores = span_aggregate(rec, w, budget_bytes=budget, value_kernel=False).scores
    size, n = max(1, sources_held), rec.n_tokens
    want = [(s, min(s + size, n)) for s in range(0, n, size)]
    assert [(start, stop) for start, stop, _ in chunks] == want * len(rec.layers)
    assert all(nbytes <= max(budget // 2, per_source) for *_, nbytes in chunks)
    assert torch.allclose(scores, plain, atol=1e-6)
