"""The flowing token HTML (`viz.tokens.tokens_html`): colours, legend, escaping and visible whitespace."""

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


def test_token_backgrounds_are_translucent_and_text_keeps_the_theme_colour(small_trace):
    """No opaque light chips: on a dark page the chips stay dark and the text stays the theme's."""
    page = tokens_html(small_trace, hop=1)
    backgrounds = re.findall(r'class="ft-tok" style="background:rgba\((\d+),(\d+),(\d+),([\d.]+)\)"', page)
    lo, hi = small_trace.settings.target
    assert len(backgrounds) == small_trace.n_tokens - (hi - lo)  # every token but the target is coloured
    alphas = [float(a) for *_rgb, a in backgrounds]
    assert min(alphas) >= 0.05 and max(alphas) <= 0.85 and max(alphas) == 0.85  # the top of the scale
    assert not re.search(r'class="ft-tok[^"]*" style="[^"]*color:#', page)  # no fixed text colour


def test_fold_runs_merge_units_without_kept_positions():
    from flashtrace.viz.tokens import fold_runs

    units = [(0, 10), (10, 20), (20, 30), (30, 33), (33, 50)]
    assert fold_runs(units, {25}) == [(0, 20, False), (20, 30, True), (30, 50, False)]
    assert fold_runs(units, {25, 31}) == [(0, 20, False), (20, 30, True), (30, 33, True), (33, 50, False)]
    assert fold_runs(units, {0}, min_tokens=20) == [(0, 10, True), (10, 50, False)]
    assert fold_runs([(0, 3), (3, 7)], set()) == [(0, 7, True)]  # too short to be worth folding


def test_folded_text_view_hides_only_unsalient_segments_in_details(small_trace):
    from flashtrace.viz import view_values
    from flashtrace.viz.tokens import salient_positions

    values = view_values(small_trace, None)
    keep = salient_positions(small_trace, values, small_trace.positions("prompt"), k=1, share=1.0)
    page = tokens_html(small_trace, keep=keep, legend="combined view")
    assert "<details" in page
    closed = re.findall(r"<details.*?</details>", page, flags=re.S)
    lo, hi = small_trace.settings.target
    for i in keep | set(range(lo, hi)):  # kept and target tokens are never inside a fold
        assert not any(f'title="#{i} ' in block for block in closed)
    assert len(re.findall(r'class="ft-tok[ "]', page)) == small_trace.n_tokens  # every token is still there, once
    assert page.index('class="ft-legend"') < page.index('class="ft-tokens"')
    assert "combined view" in page and "prompt 0" in page
