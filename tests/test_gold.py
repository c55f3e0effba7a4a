"""Known evidence (gold): which prompt tokens a gold character range marks, and which malformed ranges a trace
file may carry that are ignored rather than trusted (`flashtrace.analysis.gold`)."""

from types import SimpleNamespace

import pytest

from flashtrace.analysis.gold import gold_positions


def _trace(gold, tokens, where="gold"):
    extra = {"gold": gold} if where == "gold" else {"gallery": {"gold": gold}}
    return SimpleNamespace(extra=extra, tokens=[SimpleNamespace(role=r, start=s, end=e) for r, s, e in tokens])


# prompt "Ann has 3 apples": tokens at 0-3, 3-7, 7-9, 9-16; a template token without offsets; a response token
TOKENS = [("prompt", 0, 3), ("prompt", 3, 7), ("prompt", 7, 9), ("prompt", 9, 16), ("template", None, None),
          ("reasoning", 0, 5)]


def test_a_range_marks_the_prompt_tokens_it_overlaps_from_either_place_in_the_file():
    assert gold_positions(_trace([[4, 8]], TOKENS)) == {1, 2}
    assert gold_positions(_trace([[4, 8]], TOKENS, where="gallery")) == {1, 2}
    assert gold_positions(_trace([[0, 3]], TOKENS)) == {0}  # a range may start at the prompt's first character
    assert gold_positions(_trace([[0, 16]], TOKENS)) == {0, 1, 2, 3}  # never a template or response token


def test_a_token_that_only_touches_a_range_is_not_in_it():
    # token 0 ends where the range starts, token 2 starts where it ends
    assert gold_positions(_trace([[3, 7]], TOKENS)) == {1}


def test_a_zero_width_token_counts_where_it_sits():
    tokens = [("prompt", 5, 5), ("prompt", 9, 9)]
    assert gold_positions(_trace([[5, 9]], tokens)) == {0}  # at the range's start: in; at its end: out
    assert gold_positions(_trace([[6, 9]], tokens)) == set()  # just before the range: out


@pytest.mark.parametrize("bad", [
    [5, 5],  # empty
    [8, 4],  # reversed
    [-1, 4],  # before the prompt
    [4],  # one number
    [4, 8, 9],  # three
    ["4", "8"],  # strings
    [True, 8],  # a bool is not a position
    [4.0, 8.0],  # floats
    "4-8",  # not a pair at all
    None,
])
def test_a_malformed_range_is_ignored_and_the_valid_ones_kept(bad):
    assert gold_positions(_trace([bad], TOKENS)) == set()
    assert gold_positions(_trace([bad, [9, 10]], TOKENS)) == {3}


def test_gold_that_is_not_a_list_marks_nothing():
    assert gold_positions(_trace({"0": [4, 8]}, TOKENS)) == set()
    assert gold_positions(SimpleNamespace(extra={}, tokens=[])) == set()
