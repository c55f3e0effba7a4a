"""Issue 13 item 12 (library side): the time estimate covers the whole run (load, warm-up, forward, hops,
step sweep, bookkeeping, the machine's load) and is given as a range the run falls in."""

import time

import pytest
import torch

from flashtrace.estimate import cpu_slowdown, estimate, thread_wait_s
from flashtrace.tracing import attribute, prepare
from tests.conftest import _load

PROMPT = "Ann has 3 apples and buys 4 more. How many apples does she have? " * 4
RESPONSE = "She has 3 + 4 = 7 apples.\nAnswer: 7"


def test_the_estimate_adds_load_warm_up_steps_and_bookkeeping(tiny_llama):
    base = estimate(tiny_llama, 300, 1, warm=True, slowdown=1.0)
    assert base.load_s == base.warmup_s == base.steps_s == 0 and base.overhead_s > 0
    full = estimate(tiny_llama, 300, 1, load=True, warm=False, steps=True, slowdown=1.0)
    assert full.load_s > 0 and full.warmup_s > 0 and full.steps_s > 0
    assert full.seconds == pytest.approx(base.seconds + full.load_s + full.warmup_s + full.steps_s)
    assert full.range() == pytest.approx((full.seconds / 2, full.seconds * 2))
    busy = estimate(tiny_llama, 300, 1, warm=True, slowdown=3.0)
    assert busy.seconds == pytest.approx(3 * base.seconds)
    assert "to" in full.describe() and "load" in full.describe() and "warm-up" in full.describe()


def test_machine_load_scales_the_estimate():
    assert cpu_slowdown(load=1.0, cores=2) == 1.0
    assert cpu_slowdown(load=8.0, cores=2) == pytest.approx(4 ** 0.75)
    assert thread_wait_s(30, threads=1, load=15, cores=2) == 0
    assert thread_wait_s(30, threads=2, load=1.5, cores=2) == 0
    assert thread_wait_s(30, threads=2, load=15, cores=2) > 20  # measured ~30 s on 2 busy cores


def _timed_run(loaded, steps=True):
    start = time.perf_counter()
    prepared = prepare(loaded, PROMPT, RESPONSE)
    attribute(prepared, hops=1, steps=steps)
    return time.perf_counter() - start, prepared.sequence


def _within_range(loaded) -> list:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _timed_run(loaded)  # warm
        tries = []
        for _ in range(2):  # a timing on a shared machine: one retry
            seq = prepare(loaded, PROMPT, RESPONSE).sequence
            est = estimate(loaded, len(seq), 1, n_target=len(seq.positions("answer")),
                           n_recursive=len(seq.positions("reasoning", "answer")), steps=True, warm=True)
            seconds, _ = _timed_run(loaded)
            lo, hi = est.range()
            tries.append((lo, seconds, hi))
            if lo <= seconds <= hi:
                break
        return tries
    finally:
        torch.set_num_threads(threads)


def test_a_tiny_run_falls_in_its_range(tiny_llama):
    tries = _within_range(tiny_llama)
    assert any(lo <= s <= hi for lo, s, hi in tries), tries


@pytest.mark.slow
def test_a_short_smollm2_run_falls_in_its_range(smollm):
    """The issue's case: '~0.4 s' predicted, 2.8 s taken. Now the run lies within the range (÷/× 2)."""
    tries = _within_range(smollm)
    assert any(lo <= s <= hi for lo, s, hi in tries), tries
