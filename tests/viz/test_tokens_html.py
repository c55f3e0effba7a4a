import re

from flashtrace.viz import tokens_html
from flashtrace.viz.colors import scale_color, text_color_for, PROMPT_SCALE


def test_html_escapes_every_token(small_trace):
    page = tokens_html(small_trace)
    assert "<script>alert" not in page
    assert '" onmouseover="' not in page
    assert "&lt;" in page and "&quot;" in page
    # one token span per token, each with a hover title
    assert len(re.findall(r'class="ft-tok[ "]', page)) == small_trace.n_tokens
    assert len(re.findall(r'title="#\d+ ', page)) == small_trace.n_tokens


def test_html_marks_target_and_newlines(small_trace):
    page = tokens_html(small_trace, hop=0)
    lo, hi = small_trace.settings.target
    assert page.count("ft-target") == hi - lo + 1  # + the CSS rule
    newline_tokens = sum("\n" in t.text for t in small_trace.tokens)
    assert page.count("<br>") == newline_tokens


def test_colour_scale_and_contrast():
    assert scale_color(PROMPT_SCALE, 0) == "#eef2fb"
    assert scale_color(PROMPT_SCALE, 1) == "#1e3a8a"
    assert scale_color(PROMPT_SCALE, 2) == "#1e3a8a"
    assert text_color_for("#1e3a8a") == "#ffffff"
    assert text_color_for("#eef2fb") == "#111827"
