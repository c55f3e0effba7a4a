"""Issue 30, memory checks: what is already resident (the process, the loaded weights) is counted once
(defect 5), and a config declaring absurdly many layers is sized without building them (defect 10)."""

import tracemalloc

import pytest

from flashtrace.engine import estimate as estimate_module
from flashtrace.engine.models import memory
from flashtrace.engine.models.memory import ResourceError
from flashtrace.run.tracing import prepare
from tests.conftest import _load

PROMPT, RESPONSE = "Tom has 2 pens and buys 3 more. How many pens?", "2 + 3 = 5.\nAnswer: 5"


def weights_bytes(loaded) -> int:
    return sum(p.numel() * p.element_size() for p in loaded.model.parameters())


def test_a_loaded_model_is_not_counted_again(monkeypatch):
    """The issue's case: the memory left after the process and the weights are resident is less than they
    take, but far more than the run itself needs. The run's check used to add them to its need."""
    loaded = _load("tiny-llama")
    resident = estimate_module.BASE_PROCESS_BYTES + weights_bytes(loaded)
    monkeypatch.setattr(estimate_module, "available_bytes", lambda *a, **k: int(resident * 0.5))
    prepared = prepare(loaded, PROMPT, RESPONSE, hops=1)
    assert len(prepared.sequence) > 10


def test_a_run_that_does_not_fit_is_still_refused_with_what_would(monkeypatch):
    loaded = _load("tiny-llama")
    monkeypatch.setattr(estimate_module, "available_bytes", lambda *a, **k: 2 * 2**20)
    with pytest.raises(ResourceError, match=r"at most ~\d+ tokens would fit"):
        estimate_module.check_fits(loaded, 50_000, hops=1)
    fits = estimate_module.max_tokens_fitting(loaded, int(2 * 2**20 * 0.9), hops=1)
    assert fits > 0
    assert estimate_module.estimate(loaded, fits, 1, threads=1, warm=True, slowdown=1.0).run_bytes <= 2 * 2**20


def many_layers(n: int):
    from transformers import AutoConfig

    return AutoConfig.for_model("llama", hidden_size=64, intermediate_size=128, num_attention_heads=4,
                                num_key_value_heads=2, vocab_size=1000, num_hidden_layers=n)


def test_parameters_of_20000_layers_are_counted_without_building_them():
    small = memory.count_parameters(many_layers(3))
    tracemalloc.start()
    try:
        big = memory.count_parameters(many_layers(20_000))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    per_layer = memory.count_parameters(many_layers(4)) - small
    assert big == small + (20_000 - 3) * per_layer
    assert peak < 64 * 2**20, f"{peak / 2**20:.0f} MiB to count the parameters"


def test_a_million_layers_are_refused_before_loading():
    with pytest.raises(ResourceError, match="refused before loading"):
        memory.check_weights_fit("m", many_layers(1_000_000), __import__("torch").float32)
