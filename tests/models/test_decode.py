"""Generation steps through the multi-core single-row kernel: the same products as torch's (to float32 rounding),
the same greedy text, only single float32 rows take the kernel, and the model is left exactly as found."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from flashtrace.engine.kernels.gemv import gemv
from flashtrace.engine.kernels.softmax import serial_kernels
from flashtrace.engine.models import decode, load_model
from flashtrace.engine.models.decode import single_row_kernel
from flashtrace.engine.models.generation import generate


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 70), columns=st.integers(1, 90), threads=st.sampled_from([1, 2, 3]),
       seed=st.integers(0, 2**16))
def test_the_kernel_gives_each_rows_dot_product(rows, columns, threads, seed):
    """Every row count (four at a time and the rest), any width, one thread or several: ``W @ x``."""
    rng = np.random.default_rng(seed)
    w, x = rng.standard_normal((rows, columns), dtype=np.float32), rng.standard_normal(columns, dtype=np.float32)
    out = np.full(rows, np.nan, np.float32)
    assert gemv(w, x, out, threads) is out
    np.testing.assert_allclose(out, w.astype(np.float64) @ x.astype(np.float64), rtol=1e-4, atol=1e-4 * columns)


def test_inside_serial_kernels_the_kernel_runs_on_the_calling_thread():
    w, x = np.ones((9, 5), np.float32), np.arange(5, dtype=np.float32)
    out = np.empty(9, np.float32)
    with serial_kernels():
        gemv(w, x, out, threads=2)
    assert out.tolist() == [10.0] * 9


@pytest.fixture(scope="module")
def qwen():
    return load_model("tiny-qwen2")


def test_a_single_row_through_a_linear_layer_matches_torch_and_batches_are_left_to_torch(monkeypatch):
    layer = torch.nn.Linear(48, 37)
    calls = []
    real = decode.gemv
    monkeypatch.setattr(decode, "gemv", lambda *a: calls.append(a[0].shape) or real(*a))
    row, batch = torch.randn(1, 1, 48), torch.randn(3, 48)
    with torch.no_grad():
        expected_row, expected_batch = layer(row), layer(batch)
        with single_row_kernel(layer, threads=2):
            got_row, got_batch = layer(row), layer(batch)
            assert torch.get_num_threads() == 1  # the rest of a step on one thread (the module docstring)
            doubled = layer.double()(row.double())  # float64 weights: torch's product
    assert calls == [(37, 48)]
    assert got_row.shape == (1, 1, 37) and torch.allclose(got_row, expected_row, rtol=1e-5, atol=1e-6)
    assert torch.equal(got_batch, expected_batch) and doubled.dtype == torch.float64


def test_a_row_that_needs_gradients_goes_through_torch(monkeypatch):
    layer = torch.nn.Linear(8, 4)
    monkeypatch.setattr(decode, "gemv", lambda *a: pytest.fail("the kernel has no backward"))
    with single_row_kernel(layer):
        out = layer(torch.randn(1, 8))
    out.sum().backward()
    assert layer.weight.grad is not None


def test_the_model_is_left_as_found_also_when_uses_overlap(qwen):
    before = {name: vars(m).get("forward") for name, m in qwen.model.named_modules()}
    threads = torch.get_num_threads()
    with single_row_kernel(qwen.model):
        with single_row_kernel(qwen.model):
            patched = [name for name, m in qwen.model.named_modules() if "forward" in vars(m)]
        assert patched == [name for name, m in qwen.model.named_modules() if "forward" in vars(m)]  # still in use
    assert {name: vars(m).get("forward") for name, m in qwen.model.named_modules()} == before
    assert torch.get_num_threads() == threads
    assert patched and all(type(dict(qwen.model.named_modules())[n]) is torch.nn.Linear for n in patched)


def test_a_forward_something_else_replaced_is_not_touched():
    layer = torch.nn.Linear(4, 4)
    own = layer.forward = lambda x: x * 0  # e.g. accelerate's offloading hook
    with single_row_kernel(layer):
        assert layer.forward is own
    assert layer.forward is own


def test_greedy_generation_writes_the_same_text_as_torchs_products(qwen, monkeypatch):
    with_kernel = generate(qwen, "Count to ten.", max_new_tokens=24).response
    calls = []
    monkeypatch.setattr(decode, "single_row_kernel", lambda model, threads=None: calls.append(1) or
                        torch.no_grad())
    from flashtrace.engine.models import generation

    monkeypatch.setattr(generation, "single_row_kernel", decode.single_row_kernel)
    without = generate(qwen, "Count to ten.", max_new_tokens=24).response
    assert calls == [1] and with_kernel == without and len(with_kernel) > 10
