"""Estimates before an evaluation or a methods comparison (issue 28 item 2): what each part costs, how the
time left narrows as the run goes, and the command's bars counting every part once. Whether runs land in
their range is timed by benchmarks/estimate_accuracy.py on an idle machine, not asserted here."""

import pytest

from flashtrace.cli.eval_progress import EvalBars
from flashtrace.engine.estimate import speed_of
from flashtrace.evaluate.estimate import (Countdown, ExampleSize, RunEstimate, attribution_seconds, deletion_states,
                                          estimate_eval, example_estimate, sequence_size)
from flashtrace.evaluate.tasks import make_example

IDLE = speed_of(threads=1, slowdown=1.0)


def test_deletion_states_share_the_two_ends():
    assert deletion_states(200, 20, first=True) == 21
    assert deletion_states(200, 20, first=False) == 19
    assert deletion_states(5, 20, first=True) == 6  # fewer prompt tokens than steps: the states repeat


def test_costs_grow_with_the_example_and_the_method(tiny_llama):
    small, large = ExampleSize(100, 5, 20, 60, 4), ExampleSize(400, 5, 20, 300, 12)
    for method in ("flashtrace-k1", "ig", "perturbation"):
        assert attribution_seconds(tiny_llama, method, small, IDLE) < attribution_seconds(tiny_llama, method, large, IDLE)
    assert attribution_seconds(tiny_llama, "flashtrace-k2", large, IDLE) > attribution_seconds(
        tiny_llama, "flashtrace-k0", large, IDLE)
    ex = example_estimate(tiny_llama, large, ["flashtrace-k0", "attention"], k=20, speed=IDLE)
    (_, first), (_, second) = ex["methods"]["flashtrace-k0"], ex["methods"]["attention"]
    assert second == pytest.approx(first * 19 / 21)  # the second curve reuses both end states
    assert ex["recording"] > 0
    assert example_estimate(tiny_llama, large, ["attention"], speed=IDLE, recorded=True)["recording"] == 0


def test_estimate_eval_tokenises_each_example(tiny_llama):
    jobs = [("a", make_example("needle", 0, length=40), ["flashtrace-k0"]),
            ("b", make_example("needle", 1, length=200), ["flashtrace-k0", "ifr"])]
    plan = estimate_eval(tiny_llama, jobs, k=10, speed=IDLE)
    assert [ex["id"] for ex in plan.examples] == ["a", "b"]
    assert plan.example_seconds(1) > plan.example_seconds(0)
    assert plan.seconds == pytest.approx(plan.example_seconds(0) + plan.example_seconds(1))
    assert plan.range() == pytest.approx((plan.seconds / 2, plan.seconds * 2))
    size = sequence_size(tiny_llama, jobs[1][1].prompt, jobs[1][1].response)
    assert size.n_prompt < size.n_tokens and size.n_target >= 1 and size.n_segments > 1


def test_countdown_narrows_and_follows_the_pace():
    clock = Countdown(100.0)
    lo, hi = clock.left(0.0, 0.0)
    assert (lo, hi) == pytest.approx((50.0, 200.0))  # the estimate's range at the start
    lo, hi = clock.left(50.0, 100.0)  # half done, twice as slow as estimated
    assert lo < 100.0 < hi and hi / lo < 4
    assert clock.left(100.0, 180.0) == pytest.approx((0.0, 0.0))


def test_eval_bars_count_every_part_once():
    plan = RunEstimate(examples=[{"id": "x", "recording": 1.0, "methods": {"m1": (1.0, 4.0), "m2": (1.0, 3.0)}},
                                 {"id": "y", "recording": 2.0, "methods": {"m1": (2.0, 8.0)}}])
    bars = EvalBars(2, 2, plan, disable=True)
    for method in ("m1", "m2"):
        bars.method_step("x", method, "attribution", 0, 1)
        bars.method_step("x", method, "deletion", 5, 10)
        bars.method_step("x", method, "deletion", 10, 10)
        bars.method_step("x", method, "deletion", 10, 10)  # a repeated last report is counted once
    bars.example_done("x", {"total_s": 9.0})
    assert bars.done_s == pytest.approx(10.0) and bars.finished == {"m1", "m2"}
    bars.example_done("y", {})  # kept by resume: its whole estimate counts as done
    assert bars.done_s == pytest.approx(plan.seconds)
    bars.close()
