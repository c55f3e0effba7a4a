"""The softmax log-sum-exp kept by the recording, and the attribution path that reuses it."""

import dataclasses
from types import SimpleNamespace

import numba
import numpy as np
import pytest
import torch

import flashtrace.engine.models.attention as attention_module
from flashtrace.engine.attribution import span_aggregate
from flashtrace.engine.models import record_forward
from flashtrace.engine.kernels import softmax
from flashtrace.engine.models.attention import aggregate_attention, attention_rows
from flashtrace.engine.kernels.softmax import fast_exp
from tests.attribution.reference import explicit_attention
from tests.fake_cuda import fake_cuda
from tests.conftest import random_ids

N = 40  # longer than the tiny models' sliding window (8), so the window masks real columns


def _explicit_lse(layer) -> torch.Tensor:
    """``[H, N]`` float64 log-sum-exp of every row, one head and row at a time."""
    q, k = layer.q.double(), layer.k.double()
    n_heads, n, _ = q.shape
    rep = n_heads // k.shape[0]
    out = torch.empty(n_heads, n, dtype=torch.float64)
    for h in range(n_heads):
        for i in range(n):
            logits = (k[h // rep, : i + 1] @ q[h, i]) * layer.scaling
            if layer.softcap is not None:
                logits = torch.tanh(logits / layer.softcap) * layer.softcap
            if layer.sliding_window is not None:
                logits = logits[max(0, i - layer.sliding_window + 1):]
            out[h, i] = torch.logsumexp(logits, 0)
    return out


def test_every_family_records_the_log_sum_exp_of_its_rows(tiny):
    rec = record_forward(tiny, random_ids(N, seed=5))
    for layer in rec.layers:
        assert layer.lse is not None and layer.lse.shape == (layer.n_heads, N) and layer.lse.dtype == torch.float32
        assert torch.allclose(layer.lse.double(), _explicit_lse(layer), atol=1e-5)


def test_recording_size_counts_the_log_sum_exp(tiny_llama):
    rec = record_forward(tiny_llama, random_ids(N))
    without = dataclasses.replace(rec, layers=[dataclasses.replace(layer, lse=None) for layer in rec.layers])
    lse_bytes = sum(layer.lse.numel() * 4 for layer in rec.layers)
    assert rec.nbytes() - without.nbytes() == lse_bytes > 0
    layer = rec.layers[0]  # float32: x_prev [N, D], q [H, N, d], k and v [KVH, N, d], lse [H, N]
    per_layer = 4 * (N * layer.x_prev.shape[1] + layer.q.numel() + 2 * layer.k.numel() + layer.n_heads * N)
    assert rec.nbytes() == len(rec.layers) * per_layer


@pytest.mark.parametrize("fused", [True, False], ids=["one-pass CPU kernel", "four-pass torch (other devices)"])
def test_aggregation_with_the_log_sum_exp_equals_the_max_sum_path_and_the_float64_rows(tiny, fused, monkeypatch):
    """GQA, sliding windows and soft-capped logits: both paths give the explicit float64 sums."""
    monkeypatch.setattr(attention_module, "FUSED_CPU", fused)
    rec = record_forward(tiny, random_ids(N, seed=7))
    rows = torch.arange(9, N)
    coef = torch.rand(2, rows.numel(), generator=torch.Generator().manual_seed(0))
    for layer in rec.layers:
        reference = torch.einsum("br,hrj->bhj", coef.double(), explicit_attention(layer)[:, rows])
        fast = aggregate_attention(layer, rows, coef, block=7)
        exact = aggregate_attention(dataclasses.replace(layer, lse=None), rows, coef, block=7)
        assert torch.allclose(fast.double(), reference, atol=1e-6)
        assert torch.allclose(exact.double(), reference, atol=1e-6)


@pytest.mark.parametrize("fused", [True, False])
def test_rows_with_gaps_and_blocks_wider_than_the_window(tiny, fused, monkeypatch):
    """Target rows need not be consecutive (stop tokens have weight 0): a block can then span more
    columns than block + window, and rows the block skips must not leak in."""
    monkeypatch.setattr(attention_module, "FUSED_CPU", fused)
    rec = record_forward(tiny, random_ids(N, seed=9))
    rows = torch.tensor([0, 3, 4, 15, 30, 31, 39])
    coef = torch.rand(2, rows.numel(), generator=torch.Generator().manual_seed(1))
    for layer in rec.layers:
        reference = torch.einsum("br,hrj->bhj", coef.double(), explicit_attention(layer)[:, rows])
        assert torch.allclose(aggregate_attention(layer, rows, coef, block=3).double(), reference, atol=1e-6)
        exact = aggregate_attention(dataclasses.replace(layer, lse=None), rows, coef, block=3)  # from row 0
        assert torch.allclose(exact.double(), reference, atol=1e-6)


def test_rows_whose_logits_lie_far_apart_each_normalise_on_their_own():
    """A layer recorded without the log-sum-exp (no ``lse`` at all): every row is normalised by its own
    maximum, so a row whose logits sit 300 below another row's still sums to 1. Equal keys make every row
    uniform over the sources it sees: ᾱ[b, h, j] = Σ_{i: rows[i] ≥ j} coef[b, i] / (rows[i] + 1).
    Coefficients may come in float64."""
    q = torch.zeros(2, 6, 4)
    q[:, 1::2] = 150.0  # odd rows: logits +150; even rows: -150
    q[:, 0::2] = -150.0
    layer = SimpleNamespace(q=q, k=torch.ones(1, 6, 4) / 4, n_heads=2, n_kv_heads=1, scaling=1.0, softcap=None,
                            sliding_window=None)
    rows = torch.tensor([0, 1, 2, 4, 5])
    coef = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0]], dtype=torch.float64)
    want = torch.zeros(1, 2, 6, dtype=torch.float64)
    for c, row in zip(coef[0].tolist(), rows.tolist()):
        want[0, :, : row + 1] += c / (row + 1)
    got = aggregate_attention(layer, rows, coef, block=2)
    assert got.dtype == torch.float32 and torch.allclose(got.double(), want, atol=1e-6)


def _every_sum(layer, rows, coef) -> list[torch.Tensor]:
    """What each rebuilding path gives for `rows`: the log-sum-exp sums, the max/exp/sum sums, the rows."""
    return [aggregate_attention(layer, rows, coef, block=2),
            aggregate_attention(dataclasses.replace(layer, lse=None), rows, coef, block=2),
            torch.cat([p for _, p in attention_rows(layer, rows, block=2)], dim=1)]


@pytest.mark.parametrize("fused", [True, False], ids=["one-pass CPU kernel", "four-pass torch (other devices)"])
def test_results_land_on_the_layers_device_whatever_torchs_default_device(tiny, fused, monkeypatch):
    """A user who set another default device (``torch.set_default_device``) still gets every attention sum
    and row on the device the layer was recorded on, equal to the sums without that default (sliding windows,
    whose blocks grow the logits buffer, included)."""
    monkeypatch.setattr(attention_module, "FUSED_CPU", fused)
    layer = record_forward(tiny, random_ids(N, seed=4)).layers[0]
    rows = torch.tensor([0, 2, 3, 20, 39])
    coef = torch.rand(2, rows.numel(), generator=torch.Generator().manual_seed(2))
    plain = _every_sum(layer, rows, coef)
    with torch.device("meta"):
        elsewhere = _every_sum(layer, rows, coef)
    for got, want in zip(elsewhere, plain):
        assert got.device == layer.q.device and torch.equal(got, want)


def test_a_recording_on_a_gpu_takes_its_rows_and_coefficients_from_the_cpu(tiny):
    """On a (stand-in) GPU the rows and coefficients a caller builds on the CPU are moved to the recording's
    device; every path gives the CPU's sums there (the log-sum-exp path by torch passes, not the CPU kernel)."""
    layer = record_forward(tiny, random_ids(N, seed=4)).layers[0]
    rows = torch.tensor([0, 2, 3, 20, 39])
    coef = torch.rand(2, rows.numel(), generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    on_cpu = _every_sum(layer, rows, coef)
    with fake_cuda():
        on_gpu = _every_sum(dataclasses.replace(layer, q=layer.q.cuda(), k=layer.k.cuda(), lse=layer.lse.cuda()),
                            rows, coef)
        assert all(s.device.type == "cuda" for s in on_gpu)
        on_gpu = [s.cpu() for s in on_gpu]
    for got, want in zip(on_gpu, on_cpu):
        assert torch.allclose(got, want, atol=1e-6)


@pytest.mark.parametrize("fused", [True, False])
def test_the_cpu_runs_the_one_pass_kernel_unless_switched_off(tiny_llama, fused, monkeypatch):
    """On CPU tensors the log-sum-exp path runs the fused kernel (the fast path); with FUSED_CPU off it
    runs the other devices' torch passes instead, to the same sums."""
    monkeypatch.setattr(attention_module, "FUSED_CPU", fused)
    calls = []
    real = attention_module.run_kernel
    monkeypatch.setattr(attention_module, "run_kernel", lambda *args: calls.append(args[0]) or real(*args))
    layer = record_forward(tiny_llama, random_ids(N, seed=6)).layers[0]
    rows, coef = torch.arange(5, N), torch.ones(1, N - 5)
    got = aggregate_attention(layer, rows, coef, block=16)
    assert calls == ([softmax.exp_accumulate] * 3 if fused else [])
    reference = torch.einsum("br,hrj->bhj", coef.double(), explicit_attention(layer)[:, rows])
    assert torch.allclose(got.double(), reference, atol=1e-6)


def test_span_scores_with_and_without_the_log_sum_exp_agree_within_1e_3_relative(tiny):
    rec = record_forward(tiny, random_ids(N, seed=3))
    without = dataclasses.replace(rec, layers=[dataclasses.replace(layer, lse=None) for layer in rec.layers])
    w = torch.zeros(N)
    w[25:] = 1.0
    fast, exact = span_aggregate(rec, w).scores, span_aggregate(without, w).scores
    assert ((fast - exact).abs().max() / exact.abs().max()).item() < 1e-3


def test_a_wrong_log_sum_exp_changes_the_attention(tiny_llama):
    """The fast path really reads the recorded values (a shifted lse rescales every row)."""
    rec = record_forward(tiny_llama, random_ids(N))
    layer = rec.layers[0]
    rows, coef = torch.arange(N), torch.ones(1, N)
    shifted = dataclasses.replace(layer, lse=layer.lse + 1.0)
    ratio = aggregate_attention(shifted, rows, coef).sum() / aggregate_attention(layer, rows, coef).sum()
    assert abs(ratio.item() - torch.exp(torch.tensor(-1.0)).item()) < 1e-5


@numba.njit
def _fast_exp_all(x):
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = fast_exp(x[i])
    return out


def test_the_kernels_exponential_is_float32_exact():
    """The one-pass kernel's polynomial exp against float64 exp over the range a softmax row uses."""
    x = np.linspace(-80.0, 0.5, 400_001, dtype=np.float32)
    got, want = _fast_exp_all(x).astype(np.float64), np.exp(x.astype(np.float64))
    assert np.max(np.abs(got - want) / want) < 5e-7
    assert 0.0 <= _fast_exp_all(np.array([-1e4, -200.0], dtype=np.float32)).max() < 1e-37  # far under: ~0


def test_kernels_run_their_serial_twin_only_inside_serial_kernels_and_use_torchs_threads():
    calls = []

    def parallel(x):
        calls.append(("parallel", x, numba.get_num_threads()))

    softmax.SERIAL[parallel] = lambda x: calls.append(("serial", x))
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        softmax.run_kernel(parallel, 1)
        with softmax.serial_kernels():
            softmax.run_kernel(parallel, 2)
        softmax.run_kernel(parallel, 3)
    finally:
        torch.set_num_threads(before)
        del softmax.SERIAL[parallel]
    assert calls == [("parallel", 1, 1), ("serial", 2), ("parallel", 3, 1)]  # one torch thread: one numba thread
