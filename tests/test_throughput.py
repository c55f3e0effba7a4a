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


def test_the_measurement_runs_on_one_thread_leaves_the_rng_and_threads_and_is_remembered_per_precision(two_threads):
    torch = two_threads
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    throughput._BEST.clear()
    first = throughput.matmul_flops_per_s("float32")
    assert torch.equal(torch.rand(3), expected)  # a seeded run draws the same numbers with or without an estimate
    assert throughput.matmul_flops_per_s("float32") == first  # not measured again within the minute
    assert torch.get_num_threads() == 2  # measured on one thread, the process's setting put back


def test_the_speed_is_flops_over_the_best_time_and_a_precisions_speedup_is_its_ratio_to_float32(monkeypatch):
    """Fixed product times stand in for the clock: 2 x rows x inputs x outputs FLOP over the best time, the
    best kept across measurements, bfloat16's speedup its throughput over float32's."""
    rows, inputs, outputs = throughput.SHAPE
    flop = 2 * rows * inputs * outputs
    times = {"float32": [0.004, 0.002], "bfloat16": [0.001]}
    calls = []

    def best_seconds(dtype, n_rows, threads, repeats=throughput.REPEATS):
        calls.append((dtype, n_rows, threads))
        return times[dtype].pop(0)

    monkeypatch.setattr(throughput, "_best_seconds", best_seconds)
    monkeypatch.setattr(throughput, "_BEST", {})
    assert throughput.matmul_flops_per_s("float32") == pytest.approx(flop / 0.004)
    assert throughput.matmul_speedup("float32") == 1.0 and len(calls) == 1  # float32 against itself: no product
    assert throughput.matmul_speedup("bfloat16") == pytest.approx((flop / 0.001) / (flop / 0.004))
    assert calls == [("float32", rows, 1), ("bfloat16", rows, 1)]  # one thread, the SmolLM2-sized rows
    monkeypatch.setattr(throughput, "REMEASURE_S", 0.0)
    assert throughput.matmul_flops_per_s("float32") == pytest.approx(flop / 0.002)  # a faster measurement wins
    times["float32"].append(0.008)
    assert throughput.matmul_flops_per_s("float32") == pytest.approx(flop / 0.002)  # a slower one does not


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


@pytest.fixture
def probe(monkeypatch):
    """Fake probe times: ``probe["one"]`` and ``probe["many"]`` seconds for one thread and for more."""
    times = {"one": 1.0, "many": 0.5, "probes": 0}

    def best_seconds(dtype, rows, threads, repeats=throughput.REPEATS):
        times["probes"] += 1
        return times["one"] if threads == 1 else times["many"]

    monkeypatch.setattr(throughput, "_best_seconds", best_seconds)
    monkeypatch.setattr(throughput, "_DECIDED", {})
    return times


def test_more_threads_are_kept_while_they_pay_and_dropped_when_another_process_holds_a_core(probe, two_threads,
                                                                                          monkeypatch):
    torch = two_threads
    clock = iter([0.0, 5.0, 20.0])
    monkeypatch.setattr(throughput.time, "monotonic", lambda: next(clock))
    with throughput.paying_threads():
        assert torch.get_num_threads() == 2  # idle: two threads are faster
    probe.update(one=1.0, many=4.0)  # busy: two threads wait on each other
    with throughput.paying_threads():
        assert torch.get_num_threads() == 2  # 5 s later: the decision stands, not probed again
    with throughput.paying_threads():
        assert torch.get_num_threads() == 1  # 20 s later: probed again, one thread
    assert torch.get_num_threads() == 2  # the process's setting back after the block
    assert probe["probes"] == 4  # two probes (one thread and two) per decision
    assert throughput.threads_that_pay(1) == 1  # nothing to decide on one thread


def test_deletion_scoring_runs_on_one_thread_when_more_would_be_slower(probe, two_threads, monkeypatch):
    from flashtrace.engine.models import load_model
    from flashtrace.evaluate import deletion
    from flashtrace.evaluate.methods import build_context
    from flashtrace.evaluate.tasks import make_example

    torch = two_threads
    ctx = build_context(load_model("tiny-llama"), make_example("needle", 2, length=30), batch_size=4)
    seen, score = [], deletion.target_logprob
    monkeypatch.setattr(deletion, "target_logprob", lambda *a: seen.append(torch.get_num_threads()) or score(*a))
    masks = torch.zeros(3, ctx.positions.numel(), dtype=torch.bool)
    masks[1, :2] = masks[2, :4] = True
    scorer = deletion.DeletionScorer(ctx.loaded, ctx.ids, ctx.positions, ctx.replace_id, ctx.target, 4)
    idle = scorer.score(masks)
    probe.update(one=1.0, many=4.0)
    throughput._DECIDED.clear()
    busy = deletion.DeletionScorer(ctx.loaded, ctx.ids, ctx.positions, ctx.replace_id, ctx.target, 4).score(masks)
    assert seen == [2, 1] and torch.get_num_threads() == 2
    assert torch.allclose(idle, busy, atol=1e-5)  # the same scores either way


def test_the_thread_probe_times_a_scoring_sized_product_in_the_asked_precision_and_a_tie_keeps_one(monkeypatch):
    calls = []

    def best_seconds(dtype, rows, threads, repeats=throughput.REPEATS):
        calls.append((dtype, rows, threads, repeats))
        return 1.0  # as fast on 4 threads as on one: more threads do not pay
    monkeypatch.setattr(throughput, "_best_seconds", best_seconds)
    monkeypatch.setattr(throughput, "_DECIDED", {})
    clock = iter([100.0, 100.0 + throughput.DECIDE_S])
    monkeypatch.setattr(throughput.time, "monotonic", lambda: next(clock))
    assert throughput.threads_that_pay(4) == 1
    rows, repeats = throughput.PROBE_ROWS, throughput.PROBE_REPEATS
    assert calls == [("float32", rows, 1, repeats), ("float32", rows, 4, repeats)]
    assert throughput.threads_that_pay(4) == 1 and len(calls) == 4  # DECIDE_S later: probed again


def test_a_probe_runs_its_rows_on_its_threads_and_gives_the_fastest_repeat(monkeypatch):
    import torch

    ticks = iter([0.0, 0.003, 1.0, 1.001, 2.0, 2.005])
    monkeypatch.setattr(throughput.time, "perf_counter", lambda: next(ticks))
    real_linear, seen = torch.nn.functional.linear, []
    monkeypatch.setattr(torch.nn.functional, "linear",
                        lambda x, w: seen.append((tuple(x.shape), torch.get_num_threads())) or real_linear(x, w))
    assert throughput._best_seconds("float32", 8, 2, repeats=3) == pytest.approx(0.001)
    assert seen == [((8, throughput.SHAPE[1]), 2)] * 4  # a first untimed product, then the 3 timed
