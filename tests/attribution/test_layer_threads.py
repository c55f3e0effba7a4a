"""Layers side by side on Python threads (CPU, `span_aggregate(layer_threads=True)`, the default): the same scores as one torch
thread, bit for bit; torch's thread count and the worker threads are back to normal after every sweep,
including one a caller cancels."""

import threading
import time

import pytest
import torch

import flashtrace.engine.attribution.span as span_module
from flashtrace.engine.attribution import span_aggregate
from flashtrace.engine.models import record_forward
from tests.conftest import _load, random_ids


@pytest.fixture(scope="module")
def recording():
    return record_forward(_load("tiny-gemma2"), random_ids(260, seed=3))  # sliding window and soft-capping


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def weights(n, n_spans=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    w = torch.zeros(n_spans, n)
    for b in range(n_spans):
        w[b, 40 + 30 * b : n - 5 * b] = torch.rand(n - 5 * b - 40 - 30 * b, generator=g)
    return w


def layer_thread_names(monkeypatch):
    names = []
    original = span_module._layer_proximities

    def spy(*args):
        names.append(threading.current_thread().name)
        return original(*args)

    monkeypatch.setattr(span_module, "_layer_proximities", spy)
    return names


@pytest.mark.parametrize("options", [dict(), dict(threshold=0.01, per_head=True)], ids=["plain", "threshold+heads"])
def test_layer_threads_give_the_scores_of_one_torch_thread_bit_for_bit(recording, two_threads, monkeypatch, options):
    w = weights(recording.n_tokens)
    torch.set_num_threads(1)
    one = span_aggregate(recording, w, **options)
    torch.set_num_threads(2)
    names = layer_thread_names(monkeypatch)
    seen = []
    threaded = span_aggregate(recording, w, on_layer=seen.append, **options)
    assert len(names) == len(recording.layers) and all(n.startswith("flashtrace-layer") for n in names)
    assert seen == list(range(len(recording.layers)))  # progress in layer order, on the caller's thread
    assert torch.equal(threaded.scores, one.scores)
    if options.get("per_head"):
        assert torch.equal(threaded.heads, one.heads)
    assert torch.get_num_threads() == 2


def test_one_torch_thread_or_the_switch_off_keeps_layers_on_the_callers_thread(recording, two_threads, monkeypatch):
    w = weights(recording.n_tokens)
    names = layer_thread_names(monkeypatch)
    off = span_aggregate(recording, w, layer_threads=False).scores
    torch.set_num_threads(1)
    one = span_aggregate(recording, w, layer_threads=True).scores
    assert set(names) == {threading.current_thread().name}
    torch.testing.assert_close(off, one, rtol=1e-5, atol=1e-7)  # two threads inside ops: another order of sums


def test_a_cancelled_sweep_restores_torch_threads_and_leaves_no_worker(recording, two_threads):
    w = weights(recording.n_tokens)

    def cancel(layer):
        if layer == 1:
            raise KeyboardInterrupt("cancelled")

    with pytest.raises(KeyboardInterrupt):
        span_aggregate(recording, w, on_layer=cancel)
    assert torch.get_num_threads() == 2
    assert not [t for t in threading.enumerate() if t.name.startswith("flashtrace-layer")]
    assert span_module._THREADS_SECTION.acquire(blocking=False)  # the next sweep is not locked out
    span_module._THREADS_SECTION.release()


def test_a_sweep_cancelled_while_a_layer_computes_returns_only_after_that_layer_ends(recording, two_threads,
                                                                                  monkeypatch):
    """Stop pressed while another layer is still computing: the caller gets control back only once that worker
    has finished, so no thread goes on using the CPU behind it (here the last layer is still at work when the
    first one's progress call cancels, and takes a further 0.3 s after it)."""
    assert len(recording.layers) == 2  # two workers: both layers are handed out at once, the last one runs
    w = weights(recording.n_tokens)
    started, cancelled, finished = threading.Event(), threading.Event(), threading.Event()
    original = span_module._layer_proximities

    def last_layer_still_working(layer, *args):
        if layer is recording.layers[-1]:
            started.set()
        out = original(layer, *args)
        if layer is recording.layers[-1]:
            assert cancelled.wait(timeout=30)
            time.sleep(0.3)
            finished.set()
        return out

    def cancel(layer):
        # the stop comes while the last layer computes: on a busy machine its worker may not have picked it up
        # yet when the first layer reports (a layer still queued is cancelled, never run: nothing to wait for)
        assert started.wait(timeout=30)
        cancelled.set()
        raise KeyboardInterrupt("cancelled")

    monkeypatch.setattr(span_module, "_layer_proximities", last_layer_still_working)
    with pytest.raises(KeyboardInterrupt):
        span_aggregate(recording, w, on_layer=cancel)
    assert finished.is_set()
    assert not [t for t in threading.enumerate() if t.name.startswith("flashtrace-layer")]
    assert torch.get_num_threads() == 2


def test_the_memory_budget_caps_the_layers_in_flight(recording):
    layer = recording.layers[0]
    per_layer = span_module.layer_bytes(layer.n_heads, 2, 250)
    assert span_module._layer_workers(layer, 2, 250, 100 * per_layer, 26) == torch.get_num_threads()
    assert span_module._layer_workers(layer, 2, 250, per_layer, 26) == 1
    assert span_module._layer_workers(layer, 2, 250, 10**12, 1) == 1


@pytest.mark.slow  # loads SmolLM2
def test_the_memory_estimate_counts_the_layers_in_flight_within_the_sweeps_budget():
    from flashtrace.engine.estimate import estimate

    model = _load("smollm2-135m")
    one, many = (estimate(model, 2048, threads=t, slowdown=1.0, warm=True).peak_bytes for t in (1, 16))
    assert span_module.layer_workers(9, 1, 2048, span_module.DEFAULT_BUDGET, 30, 16) == 16
    assert one < many <= one + span_module.DEFAULT_BUDGET  # 16 threads: more layers at once, never over budget
