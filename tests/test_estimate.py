"""The cost estimate: memory within a factor of 2 of a measured run, and refusal before running."""

import json
import subprocess
import sys

import pytest

from flashtrace.engine import estimate as est_mod
from flashtrace.engine.estimate import ResourceError, check_fits, estimate, max_tokens_fitting
from flashtrace.run.tracing import prepare
from tests.conftest import _load


@pytest.mark.slow
@pytest.mark.parametrize("name, n", [("tiny-llama", 2048), ("tiny-gemma3", 1024)])
def test_memory_estimate_within_factor_two_of_measured(name, n):
    tiny = _load(name)
    spec = {"model": name, "n_prompt": n // 4, "n_response": n - n // 4, "mode": "flashtrace", "threads": 1}
    out = subprocess.run([sys.executable, "-m", "flashtrace.run.bench.cell", json.dumps(spec)], capture_output=True,
                         text=True, check=True, timeout=600)
    measured = json.loads(out.stdout.strip().splitlines()[-1])["peak_rss_bytes"]
    predicted = estimate(tiny, n, hops=1, n_target=n - n // 4).peak_bytes
    assert 0.5 <= predicted / measured <= 2.0, (predicted, measured)


def test_estimate_grows_with_length_and_hops(tiny_llama):
    short, long = estimate(tiny_llama, 512), estimate(tiny_llama, 4096)
    assert long.peak_bytes > short.peak_bytes and long.seconds > short.seconds
    assert estimate(tiny_llama, 1024, hops=3).attribution_s > estimate(tiny_llama, 1024, hops=0).attribution_s
    assert estimate(tiny_llama, 1024).recording_bytes == 2 * 1024 * (64 + 64 + 2 * 32) * 4  # x_prev, q, k, v


def test_too_long_is_refused_with_what_would_fit(tiny_llama):
    budget = estimate(tiny_llama, 1000).run_bytes  # what a 1000-token run adds to the loaded model
    with pytest.raises(ResourceError, match=r"at most ~\d+ tokens would fit"):
        check_fits(tiny_llama, 200_000, budget_bytes=budget)
    assert 900 <= max_tokens_fitting(tiny_llama, budget) <= 1100


def test_prepare_refuses_before_running_the_model(tiny_llama, monkeypatch):
    monkeypatch.setattr(est_mod, "available_bytes", lambda: 64 * 2**10)  # less than even a short run adds
    calls = []
    handle = tiny_llama.model.register_forward_hook(lambda *a: calls.append(1))
    try:
        with pytest.raises(ResourceError):
            prepare(tiny_llama, "Some prompt here.", "Some answer.")
    finally:
        handle.remove()
    assert calls == []
