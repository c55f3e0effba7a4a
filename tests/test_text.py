"""Words and numbers as every view writes them (flashtrace.analysis.text): the exact strings a user reads."""

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from flashtrace.analysis.text import NBSP, counted, distinct_labels, flat, pct, points, quote, short_text


@pytest.mark.parametrize(("share", "digits", "shown"), [
    (0.783, 0, "78"), (0.783, 1, "78.3"), (0.006, 0, "1"), (0.0, 0, "0"), (1.0, 0, "100"),
    (0.004, 0, "<1"), (0.00497, 0, "<1"), (0.0004, 1, "<0.1"), (0.00049, 1, "<0.1"), (0.0006, 1, "0.1"),
    (0.005, 0, "<1"), (0.0005, 2, "0.05"), (0.00004, 2, "<0.01"),
])
def test_a_share_reads_as_a_percentage_and_a_tiny_one_as_below_the_last_digit(share, digits, shown):
    assert pct(share, digits) == f"{shown}{NBSP}%"


@given(share=st.floats(min_value=0, max_value=1, exclude_min=True), digits=st.integers(0, 3))
@example(share=0.005, digits=0)  # exactly half of the last digit: rounds to even, "0"
@example(share=5e-324, digits=3)
def test_a_non_zero_share_never_reads_as_zero_and_a_shown_number_is_the_share_rounded(share, digits):
    shown = pct(share, digits)
    number = shown.removesuffix(f"{NBSP}%")
    if number.startswith("<"):  # below the last digit shown: said so, with that digit's value
        assert float(number[1:]) == 10 ** -digits and 100 * share < 10 ** -digits
    else:
        assert float(number) > 0 and abs(float(number) - 100 * share) <= 0.5 * 10 ** -digits + 1e-9


def test_a_difference_reads_in_points_whatever_its_sign():
    assert points(-0.0321) == "3.2 points" and points(0.5) == "50.0 points"


def test_a_count_has_its_noun_in_the_right_number():
    assert [counted(1, "step"), counted(3, "step"), counted(0, "step")] == ["1 step", "3 steps", "0 steps"]
    assert counted(2, "query", "queries") == "2 queries" and counted(1, "query", "queries") == "1 query"
    assert counted(1234, "token") == "1,234 tokens"


def test_trace_text_is_flattened_without_chat_markers():
    assert flat("<|im_start|>user\n  hi  </s> [INST]x[/INST]") == "user hi x"
    assert quote("x \n y") == "\u201cx y\u201d"


def test_long_text_is_shortened_in_the_middle_to_the_limit():
    text = "abcdefghij klmnopqrstuvwxyz 0123456789 end"
    assert short_text(text, 20) == "abcdef … 3456789 end" and short_text(text, 21) == "abcdefg … 3456789 end"
    assert len(short_text("x" * 100, 30)) == 30
    assert short_text("a" * 10, 10) == "a" * 10  # exactly the limit: kept whole
    assert short_text("  \n ") == "(whitespace)"
    assert len(short_text("y" * 100)) == 70  # the default limit


def test_labels_that_would_collide_show_where_the_texts_differ():
    a = "The pass key for the vault is: 1234. Remember it well and keep it safe."
    labels = distinct_labels([a, a.replace("1234", "5678")], 30)
    assert labels == ["\u2026 vault is: 1234. Remember it \u2026", "\u2026 vault is: 5678. Remember it \u2026"]
    b = "Ann and Bob met at noon, X and then walked home."
    assert distinct_labels([b, b.replace("X", "Y")], 34) == ["\u2026 at noon, X and then walked home.",
                                                            "\u2026 at noon, Y and then walked home."]


def test_identical_texts_are_numbered_and_distinct_ones_kept():
    assert distinct_labels(["same", "same", "other"]) == ["same (1)", "same (2)", "other"]
    c = "Many words in common up to the very end: one"
    labels = distinct_labels([c, c.replace("one", "two"), c], 20)
    assert labels == ["Many words in common \u2026 (1)", "Many \u2026 end: two", "Many words in common \u2026 (2)"]
    assert distinct_labels(["short", "text"], 48) == ["short", "text"]
    long = "w" * 60
    assert distinct_labels([long]) == [short_text(long, 48)]  # the default limit is 48


def test_a_shortened_text_is_cut_between_words():
    """Issue 45's polish list: labels were cut mid-word ("… dden in the following text.")."""
    text = "Some special magic numbers are hidden inside the following text, so read it with care."
    short = short_text(text, 48)
    head, tail = short.split(" … ")
    assert text.startswith(head) and text.endswith(tail) and len(short) <= 48
    assert text[len(head)] == " " and text[len(text) - len(tail) - 1] == " "  # both cuts at a space
    assert short_text("x" * 100, 20) == "x" * 6 + " … " + "x" * 11  # one long word: cut where it must be


def test_a_shortened_text_has_no_stray_space_at_the_cut():
    assert short_text("abcde fghijklmnopqrstuvwxyz 3456789 end", 20) == "abcde \u2026 3456789 end"
    assert short_text("abcdefghijklmnopqrstuvwxyz 456789 end", 20) == "abcdef \u2026 456789 end"


def test_a_quote_is_shortened_to_its_limit():
    assert len(quote("x" * 100)) == 72  # 70 characters and the two quote marks
    assert len(quote("x" * 100, 30)) == 32


def test_three_colliding_sentences_each_show_their_own_difference():
    keys = [f"The number for key {c} is: 2201 and that is all there is to say about it." for c in "ABC"]
    assert distinct_labels(keys, 30) == [f"\u2026 for key {c} is: 2201 and that \u2026" for c in "ABC"]


def test_a_difference_label_starts_at_a_word_eight_characters_before_the_change():
    for old, new, labels in [
        ("1234567AAAA", "1234567BBBB", ["\u2026 is 1234567AAAA and then noth \u2026", "\u2026 is 1234567BBBB and then noth \u2026"]),
        ("12345678A", "12345678B", ["\u2026 12345678A and then nothing m \u2026", "\u2026 12345678B and then nothing m \u2026"]),
    ]:
        text = f"The pass key for the vault is {old} and then nothing more will be said today."
        assert distinct_labels([text, text.replace(old, new)], 30) == labels


def test_each_label_starts_before_its_first_difference_from_any_other():
    texts = [f"The pass key for the vault is: {k} and that is all there is to say about it."
             for k in ("1234 5678 0000", "9999 5678 0000", "1234 5678 1111")]
    assert distinct_labels(texts, 30) == ["\u2026 vault is: 1234 5678 0000 and \u2026", "\u2026 vault is: 9999 5678 0000 and \u2026",
                                          "\u2026 vault is: 1234 5678 1111 and \u2026"]
