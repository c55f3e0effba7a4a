"""Issue 13 item 12 (library side): the time estimate covers the whole run (load, warm-up, forward, hops,
step sweep, bookkeeping, the machine's load) and is given as a range. Whether runs fall in their range is a
timing, measured by benchmarks/estimate_accuracy.py on an idle machine, not asserted here."""

import pytest

from flashtrace.engine.estimate import cpu_slowdown, estimate, thread_wait_s



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
