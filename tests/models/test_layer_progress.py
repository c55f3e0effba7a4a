"""Progress inside a forward pass (`each_layer`): every layer is heard as it starts, in order, only for passes
this thread runs through the model named, a raising callback stops the pass, and nothing stays installed."""

import threading

import pytest
import torch

from flashtrace.engine.models.progress import each_layer


def _forward(model, n=5):
    with torch.no_grad():
        model(torch.arange(1, n + 1)[None])


def _hooks(model):
    return sum(len(m._forward_pre_hooks) for m in model.modules())


def test_each_layer_is_reported_in_order_with_the_layer_count(tiny_llama):
    heard = []
    with each_layer(tiny_llama, lambda i, n: heard.append((i, n))):
        _forward(tiny_llama.model)
        _forward(tiny_llama.model)
    assert heard == [(0, 2), (1, 2)] * 2
    assert _hooks(tiny_llama.model) == 0  # nothing left installed after the block


def test_without_a_callback_nothing_is_installed(tiny_llama):
    before = _hooks(tiny_llama.model)
    with each_layer(tiny_llama, None):
        assert _hooks(tiny_llama.model) == before
        _forward(tiny_llama.model)


def test_passes_run_by_another_thread_are_not_reported(tiny_llama):
    heard = []
    with each_layer(tiny_llama, lambda i, n: heard.append(i)):
        other = threading.Thread(target=_forward, args=(tiny_llama.model,))
        other.start()
        other.join()
        assert heard == []
        _forward(tiny_llama.model)
    assert heard == [0, 1]


def test_a_callback_that_raises_stops_the_pass_and_leaves_no_hook(tiny_llama):
    heard = []

    def cancel(i, n):
        heard.append(i)
        if i == 0:
            raise KeyboardInterrupt("cancelled")

    with pytest.raises(KeyboardInterrupt, match="cancelled"):
        with each_layer(tiny_llama, cancel):
            _forward(tiny_llama.model)
    assert heard == [0]  # layer 1 never started
    assert _hooks(tiny_llama.model) == 0


def test_a_copy_of_the_model_is_reported_instead_of_the_loaded_one(tiny_llama):
    import copy

    twin = copy.deepcopy(tiny_llama.model)
    heard = []
    with each_layer(tiny_llama, lambda i, n: heard.append(i), model=twin):
        _forward(tiny_llama.model)
        assert heard == []
        _forward(twin)
    assert heard == [0, 1] and _hooks(twin) == 0
