"""Durations in words (flashtrace.base.units.time_range): what the app and the command line show as an estimate."""

import pytest

from flashtrace.base.units import time_range


@pytest.mark.parametrize(("lo", "hi", "words"), [
    (0.1, 0.9, "under 1 s"),
    (0.5, 1.0, "0.5–1.0 s"),
    (2.0, 8.04, "2.0–8.0 s"),
    (3.25, 9.96, "3.2–10.0 s"),
    (4.0, 10.0, "4–10 s"),
    (12.4, 47.6, "12–48 s"),
    (60.0, 119.4, "60–119 s"),
    (90.0, 120.0, "1.5–2.0 min"),
    (300.0, 1800.0, "5.0–30.0 min"),
])
def test_a_duration_reads_in_the_unit_that_fits_its_upper_end(lo, hi, words):
    assert time_range(lo, hi) == words
