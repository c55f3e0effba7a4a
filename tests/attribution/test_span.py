"""Span aggregation against the explicit float64 reference, and its relation to token-wise IFR."""

import pytest
import torch

from flashtrace.engine.attribution import proximity, span_aggregate, tokenwise_aggregate, tokenwise_rows
from flashtrace.engine.kernels.proximity import _proximity_torch, head_proximities, value_proximities
from flashtrace.engine.models import record_forward
from flashtrace.engine.models.recording import LayerRecord, Recording
from tests.attribution.reference import reference_span_scores
from tests.conftest import random_ids


def random_recording(n=24, n_layers=2, n_heads=4, n_kv=2, d=8, d_model=16, seed=0, softcap=None, window=None,
                     post_norm=False, bias=False, residual=1.0, sharpness=1.0):
    """Random layer tensors. `residual` scales x_prev inside x_mid (negative: the residual part points
    away from the whole, so its proximity is negative before clamping); `sharpness` scales the queries
    (large: peaked attention, many tiny but non-zero weights)."""
    g = torch.Generator().manual_seed(seed)
    layers = []
    for _ in range(n_layers):
        x_prev = torch.randn(n, d_model, generator=g)
        layers.append(LayerRecord(
            x_prev=x_prev, x_mid=residual * x_prev + torch.randn(n, d_model, generator=g),
            q=sharpness * torch.randn(n_heads, n, d, generator=g), k=torch.randn(n_kv, n, d, generator=g),
            v=torch.randn(n_kv, n, d, generator=g), w_o=torch.randn(n_heads, d, d_model, generator=g) / 3,
            b_o=torch.randn(d_model, generator=g) if bias else None, scaling=d ** -0.5, softcap=softcap,
            sliding_window=window, post_scale=torch.rand(n, generator=g) + 0.5 if post_norm else None))
    return Recording(input_ids=torch.arange(n), layers=layers, forward_seconds=0.0)


CASES = [dict(), dict(softcap=2.0), dict(window=5), dict(post_norm=True, bias=True), dict(n_kv=4), dict(n_kv=1)]


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_span_aggregate_matches_reference_on_random_tensors(case):
    rec = random_recording(**case)
    g = torch.Generator().manual_seed(7)
    w = torch.zeros(rec.n_tokens)
    w[10:20] = torch.rand(10, generator=g)
    got = span_aggregate(rec, w).scores[0]
    assert torch.allclose(got.double(), reference_span_scores(rec, w), atol=1e-5)


def test_negative_residual_proximity_is_clamped_to_zero():
    """Where ‖Y‖₁ − ‖Y − R‖₁ < 0 the residual part counts 0 in the denominator, never a negative amount."""
    rec = random_recording(residual=-0.6, seed=13)
    w = torch.zeros(rec.n_tokens)
    w[10:20] = 1.0
    for layer in rec.layers:
        y, res = w[10:20] @ layer.x_mid[10:20] / 10, w[10:20] @ layer.x_prev[10:20] / 10
        assert y.abs().sum() - (y - res).abs().sum() < -1.0  # the case under test really occurs
    assert proximity(res, y) == 0
    got = span_aggregate(rec, w).scores[0]
    assert torch.allclose(got.double(), reference_span_scores(rec, w), atol=1e-5)


def test_matches_reference_at_300_tokens_with_peaked_attention():
    """At N = 300 with sharp attention most ᾱ are tiny but non-zero; every one of them counts."""
    rec = random_recording(n=300, seed=21, sharpness=3.0)
    w = torch.zeros(rec.n_tokens)
    w[250:] = 1.0
    got = span_aggregate(rec, w).scores[0].double()
    ref = reference_span_scores(rec, w)
    assert ((got - ref).abs().max() / ref.max()).item() < 1e-4


def test_torch_proximity_kernel_matches_the_cpu_kernel_and_the_formula():
    """The head-value path (GPUs) and the CPU path from values give the plain formula, negative
    proximities clamped to 0."""
    g = torch.Generator().manual_seed(3)
    v = torch.randn(1, 40, 6, generator=g)  # [KVH, c, d_v]
    w_o = torch.randn(3, 6, 16, generator=g)  # [H, d_v, D]
    f = torch.bmm(v.expand(3, -1, -1), w_o)  # [H, c, D]
    abar = torch.rand(2, 3, 40, generator=g) * 2  # [B, H, c]
    abar[0, 0, :5] = 0.0
    y = torch.randn(2, 16, generator=g)  # [B, D]
    parts = abar[..., None] * f[None]  # [B, H, c, D]
    raw = y.abs().sum(-1)[:, None, None] - (y[:, None, None, :] - parts).abs().sum(-1)
    assert (raw < 0).float().mean() > 0.2  # many negative before the clamp
    expected = proximity(parts, y[:, None, None, :])
    assert torch.allclose(_proximity_torch(f, abar, y), expected, atol=1e-5)
    assert torch.allclose(head_proximities(f, abar, y), expected, atol=1e-5)
    assert torch.allclose(value_proximities(v, w_o, abar, y), expected, atol=1e-5)


@pytest.mark.parametrize("seed", range(4))
def test_proximities_from_values_equal_the_formula_where_parts_overshoot(seed):
    """The CPU kernel computes only the dimensions Cauchy-Schwarz cannot rule out; where a part overshoots
    the whole (``|ᾱ f_d| > |y_d|``: tiny and zero ``y_d``, large ᾱ, grouped heads, a zero column of
    ``W_O``) it must still give the float64 formula."""
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(2, 300, 8, generator=g) * torch.rand(2, 300, 1, generator=g) * 4  # [KVH, c, d_v]
    w_o = torch.randn(6, 8, 48, generator=g) * 0.3  # [H, d_v, D], heads 0-2 read value head 0
    w_o[:, :, 7] = 0.0
    y = torch.randn(3, 48, generator=g)
    y[:, :6] *= 1e-4
    y[:, 6] = 0.0
    abar = torch.rand(3, 6, 300, generator=g) ** 6  # mostly small, some near 1
    abar[1, 2, :20] = 0.0
    f = torch.bmm(v.repeat_interleave(3, 0), w_o).double()
    parts = abar.double()[..., None] * f[None]
    overshoot = parts.abs() > y.double().abs()[:, None, None, :]
    assert overshoot.any(-1).float().mean() > 0.3  # the correction matters for many (span, head, source)
    expected = proximity(parts, y.double()[:, None, None, :])
    got = value_proximities(v, w_o, abar, y).double()
    assert ((got - expected).abs().max() / expected.abs().max()).item() < 1e-5
    if seed == 0:  # many spans go through the kernel in chunks: one span at a time gives the same
        import flashtrace.engine.kernels.proximity as kernels

        chunk, kernels.SPAN_CHUNK_ELEMENTS = kernels.SPAN_CHUNK_ELEMENTS, 1
        try:
            assert torch.equal(value_proximities(v, w_o, abar, y).double(), got)
        finally:
            kernels.SPAN_CHUNK_ELEMENTS = chunk


def test_span_aggregate_through_the_gpu_kernels_matches_reference(monkeypatch):
    """The paths other devices take (head values + torch proximity, four-pass softmax), run here."""
    import flashtrace.engine.models.attention as attention_module

    monkeypatch.setattr(attention_module, "FUSED_CPU", False)
    rec = random_recording(residual=-0.3, seed=14, window=6)
    w = torch.zeros(rec.n_tokens)
    w[8:] = torch.linspace(0.1, 1.0, rec.n_tokens - 8)
    got = span_aggregate(rec, w, value_kernel=False).scores[0]
    assert torch.allclose(got.double(), reference_span_scores(rec, w), atol=1e-5)


def test_tiny_blocks_give_the_same_answer():
    """Row blocks and source chunks of size 1 (tiny memory budget) change nothing."""
    rec = random_recording(window=6, post_norm=True)
    w = torch.zeros(rec.n_tokens)
    w[5:] = 1.0
    big = span_aggregate(rec, w).scores
    small = span_aggregate(rec, w, budget_bytes=1).scores
    assert torch.allclose(big, small, atol=1e-6)


def test_span_aggregate_matches_reference_on_family_models(tiny):
    """The reference takes Y from the model's own x_mid; the sweep matches it both when the recording
    kept x_mid and when it rebuilds Y from ᾱ (the default recording)."""
    n = 20
    ids = random_ids(n, seed=11)
    rec = record_forward(tiny, ids, keep_mid=True)
    w = torch.zeros(n)
    w[12:] = torch.linspace(0.2, 1.0, n - 12)
    expected = reference_span_scores(rec, w)
    kept = span_aggregate(rec, w).scores[0]
    rebuilt = span_aggregate(record_forward(tiny, ids), w).scores[0]
    assert torch.allclose(kept.double(), expected, atol=1e-5)
    assert torch.allclose(rebuilt.double(), expected, atol=1e-5)


def test_default_recording_rebuilds_y_within_rounding(tiny):
    """Without x_mid (a quarter less memory), scores and per-head shares stay within 1e-5 of those
    computed from the model's own x_mid, for several spans in one sweep."""
    n = 40
    ids = random_ids(n, seed=12)
    kept, rebuilt = record_forward(tiny, ids, keep_mid=True), record_forward(tiny, ids)
    assert all(layer.x_mid is None for layer in rebuilt.layers)
    assert rebuilt.nbytes() < kept.nbytes()
    weights = torch.zeros(3, n)
    weights[0, 30:] = 1.0
    weights[1, 10:25] = torch.rand(15, generator=torch.Generator().manual_seed(0))
    weights[2, 39] = 1.0
    a = span_aggregate(kept, weights, per_head=True)
    b = span_aggregate(rebuilt, weights, per_head=True)
    assert (a.scores - b.scores).abs().max() <= 1e-5 * a.scores.abs().max()
    assert (a.heads - b.heads).abs().max() <= 1e-5 * a.heads.abs().max()


def test_batched_spans_equal_separate_spans():
    rec = random_recording(seed=3)
    weights = torch.zeros(3, rec.n_tokens)
    weights[0, 5:9] = 1
    weights[1, 12:20] = torch.rand(8)
    weights[2, 23] = 1
    batched = span_aggregate(rec, weights).scores
    for b in range(3):
        assert torch.allclose(batched[b], span_aggregate(rec, weights[b]).scores[0], atol=1e-6)


def test_one_token_span_equals_tokenwise_ifr_exactly():
    rec = random_recording(seed=4, post_norm=True)
    for i in (0, 7, 23):
        onehot = torch.zeros(rec.n_tokens)
        onehot[i] = 1
        assert torch.equal(span_aggregate(rec, onehot).scores[0], tokenwise_rows(rec, [i], batched=False)[0])


def test_batched_and_rowwise_ifr_agree():
    rec = random_recording(seed=5)
    targets = list(range(8, 24))
    assert torch.allclose(tokenwise_rows(rec, targets, batched=True), tokenwise_rows(rec, targets, batched=False),
                          atol=1e-6)


def test_tokenwise_aggregate_is_the_weighted_mean_of_normalised_rows():
    """Token-wise IFR of a span: ``Σ_i w_i · row_i / Σ_j row_i[j]`` (so each result sums to 1)."""
    rec = random_recording(seed=15)
    w = torch.zeros(2, rec.n_tokens)
    w[0, 10:20] = torch.linspace(0.1, 1.0, 10)
    w[1, 3] = 1.0
    got = tokenwise_aggregate(rec, w)
    for b in range(2):
        targets = torch.nonzero(w[b]).flatten().tolist()
        rows = tokenwise_rows(rec, targets, batched=False)  # each row: the one-token span aggregate
        expected = sum(w[b, t] / w[b].sum() * rows[i] / rows[i].sum() for i, t in enumerate(targets))
        assert torch.allclose(got[b], expected, atol=1e-6) and got[b].sum() == pytest.approx(1.0, abs=1e-5)


def test_tokenwise_ifr_groups_rows_within_its_memory_budget_and_reports_each_group(monkeypatch):
    """Token-wise IFR's sweeps: batched by default (as many rows per sweep as the budget holds, at least one, each
    sweep under that budget), one row per sweep when not batched (the paper's timing protocol); the progress
    callback hears every row once, in groups."""
    from flashtrace.engine.attribution import tokenwise as tw

    rec = random_recording(seed=6)
    per_row = 4 * rec.n_tokens * (4 * 3 + 16)  # a target row's buffers: 3 per head and the hidden state
    sweeps = []
    real = tw.span_aggregate

    def counted(recording, weights, **kwargs):
        sweeps.append((weights.shape[0], kwargs.get("budget_bytes")))
        return real(recording, weights, **kwargs)

    monkeypatch.setattr(tw, "span_aggregate", counted)
    targets, heard = list(range(4, 24)), []
    expected = tokenwise_rows(rec, targets, batched=False)
    for kwargs, groups in ((dict(), [20]), (dict(budget_bytes=6 * per_row), [6, 6, 6, 2]),
                           (dict(budget_bytes=per_row // 2), [1] * 20), (dict(batched=False), [1] * 20)):
        sweeps.clear()
        got = tokenwise_rows(rec, targets, on_rows=heard.append, **kwargs)
        budget = kwargs.get("budget_bytes", tw.DEFAULT_BUDGET)
        assert sweeps == [(g, budget) for g in groups] and heard[-len(groups):] == groups, kwargs
        assert torch.allclose(got, expected, atol=1e-6)
    w = torch.zeros(rec.n_tokens)
    w[10:15] = 1.0
    for kwargs, groups in ((dict(), [5]), (dict(batched=False), [1] * 5)):
        sweeps.clear()
        heard.clear()
        tokenwise_aggregate(rec, w, on_rows=heard.append, **kwargs)
        assert [g for g, _ in sweeps] == groups and heard == groups, kwargs
    one_layer = random_recording(n_layers=1, seed=6)  # a one-layer model's rows size their groups as well
    assert tokenwise_rows(one_layer, [3, 9]).shape == (2, one_layer.n_tokens)


def test_span_aggregate_is_not_the_sum_of_token_scores():
    """Proximity is non-additive: aggregating first differs from summing normalised per-token rows."""
    rec = random_recording(seed=6)
    w = torch.zeros(rec.n_tokens)
    w[10:20] = 1
    span = span_aggregate(rec, w).scores[0]
    tokenwise = tokenwise_aggregate(rec, w)[0]
    span_n, tok_n = span / span.sum(), tokenwise / tokenwise.sum()
    assert (span_n - tok_n).abs().max() > 1e-3


def test_scores_are_non_negative_and_causal():
    rec = random_recording(seed=8)
    w = torch.zeros(rec.n_tokens)
    w[4:9] = 1
    scores = span_aggregate(rec, w).scores[0]
    assert torch.all(scores >= 0)
    assert torch.all(scores[9:] == 0)
    assert scores[:9].sum() > 0


def test_per_head_importance_sums_to_the_token_scores():
    rec = random_recording(seed=9)
    w = torch.ones(rec.n_tokens)
    out = span_aggregate(rec, w, per_head=True)
    assert out.heads.shape == (1, 2, 4)
    assert torch.allclose(out.heads.sum((1, 2)), out.scores.sum(1), atol=1e-5)


def test_attribution_leaves_the_torch_thread_count_alone():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        span_aggregate(random_recording(seed=12), torch.ones(24))
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_more_spans_than_model_dimensions_and_tensors_off_the_cpu(monkeypatch):
    """The value kernel goes over the spans (not the model dimensions) in chunks: ten spans of a 4-wide model
    each get the formula's proximities; tensors on another device (here PyTorch's shape-only `meta`) take the
    torch formula, which needs no numba."""
    g = torch.Generator().manual_seed(3)
    v, w_o = torch.randn(2, 5, 3, generator=g), torch.randn(2, 3, 4, generator=g)
    abar, y = torch.rand(10, 2, 5, generator=g), torch.randn(10, 4, generator=g)
    f = torch.einsum("hcd,hdm->hcm", v, w_o)  # the head values, formed
    monkeypatch.setattr("flashtrace.engine.kernels.proximity.SPAN_CHUNK_ELEMENTS", 3 * 2 * 4)  # 3 spans a call: 4 calls
    assert torch.allclose(value_proximities(v, w_o, abar, y), _proximity_torch(f, abar, y), atol=1e-5)
    off = head_proximities(f.to("meta"), abar.to("meta"), y.to("meta"))
    assert off.device.type == "meta" and off.shape == (10, 2, 5)


def test_a_layers_memory_and_how_many_layers_run_at_once():
    from flashtrace.engine.attribution.span import layer_bytes, layer_workers
    from flashtrace.engine.models.attention import LSE_BLOCK

    one = layer_bytes(4, 2, 100)
    assert one == 4 * 4 * 100 * (LSE_BLOCK + 3 * 2)  # float32 logits block, and ᾱ, proximities, scores per span
    assert layer_workers(4, 2, 100, 3 * one, n_layers=8, threads=8) == 3  # the budget holds three
    assert layer_workers(4, 2, 100, 10 * one, n_layers=8, threads=2) == 2  # one per thread
    assert layer_workers(4, 2, 100, one // 2, n_layers=8, threads=8) == 1  # at least one


def test_per_head_scores_are_kept_only_when_asked_and_work_for_one_layer():
    rec = random_recording(n_layers=1, seed=2)
    w = torch.zeros(rec.n_tokens)
    w[20:] = 1.0
    assert span_aggregate(rec, w).heads is None
    heads = span_aggregate(rec, w, per_head=True).heads
    assert heads.shape == (1, 1, 4) and torch.allclose(heads.sum((1, 2)), span_aggregate(rec, w).scores.sum(1))


def test_the_head_value_path_in_small_source_chunks_matches_the_reference(monkeypatch):
    """Other devices form head values a chunk of sources at a time, as many as the budget holds: with room for
    three sources per chunk the scores are the reference's."""
    rec = random_recording(seed=21)
    w = torch.zeros(rec.n_tokens)
    w[15:] = 1.0
    per_source = 4 * 4 * 16  # heads x model width, float32
    got = span_aggregate(rec, w, budget_bytes=2 * per_source * 3, value_kernel=False).scores[0]
    assert torch.allclose(got.double(), reference_span_scores(rec, w), atol=1e-5)


def test_more_layers_than_threads_run_in_a_pipeline_to_the_same_scores(monkeypatch):
    """Four layers on two threads: two run at a time, each next layer starts when one is consumed; the scores
    equal one layer at a time, bit for bit."""
    rec = random_recording(n_layers=4, seed=8)
    w = torch.zeros(rec.n_tokens)
    w[18:] = 1.0
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        seen = []
        piped = span_aggregate(rec, w, on_layer=seen.append).scores
    finally:
        torch.set_num_threads(before)
    assert seen == [0, 1, 2, 3] and torch.equal(piped, span_aggregate(rec, w, layer_threads=False).scores)
