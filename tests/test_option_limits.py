"""The options a run takes are checked up front against `analysis/limits.py`: each is accepted right up to its
bounds, refused just past them, and the message names the option (as the caller spells it) and the value."""

import pytest

from flashtrace.analysis.limits import (HOP0_SPANS, MAX_HOPS, MAX_TITLE, RECURSIVE_SPANS, check_graph_threshold,
                                        check_hop0, check_hops, check_method_threshold, check_options,
                                        check_recursive, check_title)


@pytest.mark.parametrize("hops", [0, 1, MAX_HOPS])
def test_hops_within_the_range_are_accepted(hops):
    assert check_hops(hops) == hops
    check_options(hops=hops)


@pytest.mark.parametrize("hops", [-1, MAX_HOPS + 1, True, 1.5, "2"])
def test_hops_outside_the_range_are_refused_with_the_value(hops):
    with pytest.raises(ValueError, match=f"^hops must be between 0 and {MAX_HOPS}, got {hops!r}$"):
        check_options(hops=hops)
    with pytest.raises(ValueError, match="^--hops must be between"):
        check_hops(hops, "--hops")


def test_titles_up_to_the_limit_are_accepted():
    assert check_title("t" * MAX_TITLE) == "t" * MAX_TITLE
    assert check_title("") == "" and check_title(None) is None
    with pytest.raises(ValueError, match=f"^the title has {MAX_TITLE + 1} characters; at most {MAX_TITLE}$"):
        check_options(title="t" * (MAX_TITLE + 1))


def test_the_span_choices_name_every_choice():
    for choice in RECURSIVE_SPANS:
        assert check_recursive(choice) == choice
        check_options(recursive=choice)
    for choice in HOP0_SPANS:
        assert check_hop0(choice) == choice
        check_options(hop0=choice)
    with pytest.raises(ValueError, match="^recursive must be 'reasoning\\+answer' or 'reasoning', got 'answer'$"):
        check_options(recursive="answer")
    with pytest.raises(ValueError, match="^--recursive must be"):
        check_recursive("x", "--recursive")
    with pytest.raises(ValueError, match="^hop0 must be 'answer' or 'generation', got 'reasoning'$"):
        check_options(hop0="reasoning")
    with pytest.raises(ValueError, match="^--hop0 must be"):
        check_hop0("x", "--hop0")


def test_the_defaults_pass():
    assert check_options() is None


@pytest.mark.parametrize("value", [0, 0.5, 0.999])
def test_a_graph_threshold_below_one_is_accepted(value):
    assert check_graph_threshold(value) == value


@pytest.mark.parametrize("value", [1, 1.5, -0.01])
def test_a_graph_threshold_of_one_or_negative_is_refused(value):
    with pytest.raises(ValueError, match=f"^threshold must be at least 0 and below 1 \\(0 keeps every edge\\), got {value}$"):
        check_graph_threshold(value)
    with pytest.raises(ValueError, match="^--threshold must be at least 0"):
        check_graph_threshold(value, "--threshold")


@pytest.mark.parametrize("value", [None, 0, 0.5, 1])
def test_a_method_threshold_from_zero_to_one_is_accepted(value):
    assert check_method_threshold(value) == value


@pytest.mark.parametrize("value", [1.01, -0.1])
def test_a_method_threshold_outside_zero_to_one_is_refused(value):
    with pytest.raises(ValueError, match=f"^threshold must be between 0 and 1, got {value}$"):
        check_method_threshold(value)
    with pytest.raises(ValueError, match="^--threshold must be between"):
        check_method_threshold(value, "--threshold")
