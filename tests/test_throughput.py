"""The estimate follows the machine it runs on (issue 28 item 2): a measured matrix-product throughput scales
the calibrated one, and a precision's speedup is measured, not assumed. Whether runs then fall in their range is
timed by benchmarks/estimate_accuracy.py on an idle machine, not asserted here."""

import pytest

from flashtrace.engine import throughput
from flashtrace.engine.estimate import estimate, scoring_seconds, speed_of


@pytest.fixture
def two_threads():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield torch
    torch.set_num_threads(before)


def test_the_measurement_is_a_positive_throughput_remembered_per_precision_on_one_thread(two_threads):
    torch = two_threads
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    throughput._BEST.clear()
    first = throughput.matmul_flops_per_s("float32")
    assert torch.equal(torch.rand(3), expected)  # a seeded run draws the same numbers with or without an estimate
    assert first > 1e8  # any CPU in use multiplies faster than 0.1 GFLOP/s
    assert throughput.matmul_flops_per_s("float32") == first  # not measured again within the minute
    assert torch.get_num_threads() == 2  # measured on one thread, the process's setting put back
    assert throughput.matmul_speedup("float32") == 1.0
    assert throughput.matmul_speedup("bfloat16") > 0


def test_a_machine_twice_the_reference_halves_the_compute_not_the_fixed_costs(tiny_llama, monkeypatch):
    monkeypatch.setenv("FLASHTRACE_MACHINE_SPEED", "1")
    ref = estimate(tiny_llama, 300, 1, warm=False, load=True, steps=True, slowdown=1.0, threads=1)
    monkeypatch.setenv("FLASHTRACE_MACHINE_SPEED", "2")
    fast = estimate(tiny_llama, 300, 1, warm=False, load=True, steps=True, slowdown=1.0, threads=1)
    assert fast.forward_s == pytest.approx(ref.forward_s / 2)
    assert fast.attribution_s == pytest.approx(ref.attribution_s / 2)
    assert fast.steps_s == pytest.approx(ref.steps_s / 2)
    assert (fast.load_s, fast.warmup_s, fast.overhead_s) == (ref.load_s, ref.warmup_s, ref.overhead_s)
    assert speed_of(threads=1, slowdown=1.0).forward == 2.0


def test_the_machine_speed_is_the_measured_rate_against_the_reference(monkeypatch):
    monkeypatch.delenv("FLASHTRACE_MACHINE_SPEED", raising=False)
    monkeypatch.setattr(throughput, "matmul_flops_per_s", lambda dtype="float32": 3 * throughput.REFERENCE_FLOPS_PER_S)
    assert throughput.machine_speed() == pytest.approx(3.0)
    monkeypatch.setattr(throughput, "matmul_flops_per_s", lambda dtype="float32": 0.0)  # a broken timer
    assert throughput.machine_speed() == throughput.SPEED_BOUNDS[0]


def test_faster_products_shorten_only_the_body_of_a_scoring_pass(tiny_llama, monkeypatch):
    monkeypatch.setenv("FLASHTRACE_MACHINE_SPEED", "1")
    speed = speed_of(threads=1, slowdown=1.0)
    plain = scoring_seconds(tiny_llama, 200, 10, speed)
    faster = scoring_seconds(tiny_llama, 200, 10, speed, matmul_speedup=4.0)
    emulated = scoring_seconds(tiny_llama, 200, 10, speed, matmul_speedup=0.5)
    assert emulated > plain > faster > plain / 4  # the attention and the non-product share stay float32


def test_a_busy_first_measurement_gives_way_to_a_faster_later_one(monkeypatch):
    readings = iter([1e10, 4e10, 2e10])  # busy, idle, busy again
    clock = iter([1000.0, 1030.0, 1070.0, 1140.0])
    monkeypatch.setattr(throughput, "_measure", lambda dtype: next(readings))
    monkeypatch.setattr(throughput.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(throughput, "_BEST", {})
    assert throughput.matmul_flops_per_s("float32") == 1e10
    assert throughput.matmul_flops_per_s("float32") == 1e10  # 30 s later: remembered, not measured
    assert throughput.matmul_flops_per_s("float32") == 4e10  # 70 s after the first: measured again, faster
    assert throughput.matmul_flops_per_s("float32") == 4e10  # a slower reading never lowers the best


def test_the_measurement_is_the_products_flops_over_the_fastest_repeat_in_the_named_precision(monkeypatch):
    """A fake clock: each product takes 4 ms except one of 2 ms; the rate is that product's FLOPs over 2 ms, and
    the products run on one thread in the precision asked for (a bfloat16 rate measured in float32 is wrong)."""
    import torch

    ticks = iter([0.0, 0.004, 1.0, 1.002] + [2.0 + k for k in range(2 * throughput.REPEATS)])
    monkeypatch.setattr(throughput.time, "perf_counter", lambda: next(ticks))
    real_linear, seen = torch.nn.functional.linear, []
    monkeypatch.setattr(torch.nn.functional, "linear",
                        lambda x, w: seen.append((x.dtype, w.dtype, torch.get_num_threads())) or real_linear(x, w))
    rows, inputs, outputs = throughput.SHAPE
    assert throughput._measure("bfloat16") == pytest.approx(2 * rows * inputs * outputs / 0.002)
    assert len(seen) == throughput.REPEATS + 1 and set(seen) == {(torch.bfloat16, torch.bfloat16, 1)}


def test_the_default_precision_is_float32_and_its_speedup_needs_no_measurement(monkeypatch):
    measured = []
    monkeypatch.setattr(throughput, "_measure", lambda dtype: measured.append(dtype) or 0.0)
    monkeypatch.setattr(throughput, "_BEST", {})
    assert throughput.matmul_flops_per_s() == 0.0  # a broken timer's reading is reported as it is, not raised
    assert measured == ["float32"]
    monkeypatch.setattr(throughput, "_BEST", {})
    assert throughput.matmul_speedup("float32") == 1.0 and measured == ["float32"]  # float32 against itself: 1


def test_a_measurement_a_minute_old_is_taken_again(monkeypatch):
    readings, clock = iter([1e10, 3e10]), iter([500.0, 500.0 + throughput.REMEASURE_S])
    monkeypatch.setattr(throughput, "_measure", lambda dtype: next(readings))
    monkeypatch.setattr(throughput.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(throughput, "_BEST", {})
    assert throughput.matmul_flops_per_s("float32") == 1e10
    assert throughput.matmul_flops_per_s("float32") == 3e10
