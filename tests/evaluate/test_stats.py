"""Intervals and paired tests of evaluation summaries: a change is claimed only with its margin, a tie is
called a tie (issue 46)."""

import pytest

from flashtrace.evaluate.report import markdown, summarise
from flashtrace.evaluate.stats import bootstrap_interval, paired_difference


def test_the_bootstrap_interval_holds_the_mean_narrows_with_more_examples_and_repeats():
    few = [0.1, 0.5, 0.3, 0.9, 0.2]
    low, high = bootstrap_interval(few)
    assert low < sum(few) / len(few) < high
    many_low, many_high = bootstrap_interval(few * 20)
    assert many_high - many_low < (high - low) / 2
    assert bootstrap_interval(few) == (low, high)  # seeded: a rebuilt summary gives the same interval
    assert bootstrap_interval([0.4]) is None and bootstrap_interval([None, 0.4]) is None


def test_equal_methods_tie_and_a_shift_on_every_example_does_not():
    same = paired_difference([0.2, 0.4, 0.6], [0.2, 0.4, 0.6])
    assert same["mean"] == 0 and same["tie"] and same["p"] == 1.0
    better = paired_difference([0.3, 0.5, 0.7, 0.9, 0.4], [0.1, 0.2, 0.5, 0.6, 0.3])
    assert better["mean"] == pytest.approx(0.22) and not better["tie"] and better["interval"][0] > 0
    assert better["p"] == pytest.approx(2 / 32)  # exact: only all-plus and all-minus of 32 sign patterns are as far
    assert paired_difference([0.1, None, 0.3], [0.2, 0.5, None]) is None  # one pair only


def test_the_summary_pairs_each_hop_count_with_k0_of_its_variant():
    def method(recovery):
        return {"rise": None, "mas": None, "recovery": recovery, "seconds": 0.1, "deletion_s": 0.0, "n": [],
                "scores": [1.0]}

    records = [{"task": "needle", "k": 0, "n_tokens": 10, "n_prompt": 5, "n_gold": 1,
                "methods": {"flashtrace-k0": method(0.2 + i / 100), "flashtrace-k1": method(0.5 + i / 100),
                            "flashtrace-k2": method(0.2 + i / 100 + (0.01 if i % 2 else -0.01))}}
               for i in range(8)]
    methods = summarise(records)["tasks"]["needle"]["methods"]
    k1, k2 = methods["flashtrace-k1"]["vs_k0"]["recovery"], methods["flashtrace-k2"]["vs_k0"]["recovery"]
    assert k1["mean"] == pytest.approx(0.3) and not k1["tie"] and k2["tie"]
    assert "vs_k0" not in methods["flashtrace-k0"] and methods["flashtrace-k1"]["vs_k0"]["rise"] is None
    assert methods["flashtrace-k0"]["recovery"]["interval"][0] < 0.235 < methods["flashtrace-k0"]["recovery"]["interval"][1]
    text = markdown(summarise(records))
    assert "K1 +0.300 [+0.300, +0.300], p = 0.01" in text and "K2 +0.000" in text and "(tie)" in text
