"""The offline HTML report (`viz.report`): its sections, figures and escaped text."""

import re

from flashtrace.viz.report import heatmap_with_hop_selector, trace_report_html


def test_report_is_offline_escaped_and_has_every_view(small_trace):
    page = trace_report_html(small_trace)
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r'<(script|link|img)[^>]+(src|href)="https?:', page)  # nothing fetched from the network
    assert small_trace.title.startswith("Keep <script>alert(1)</script>")
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # title, escaped
    assert page.count("<script") == page.count("</script>")  # no token text opened or closed a script
    for heading in ("What the answer rests on", "Token heatmap", "Text", "Where each hop's attribution lands",
                    "Top prompt tokens"):
        assert f"<h2>{heading}</h2>" in page
    assert "<h2>Hop graph</h2>" not in page  # this trace has no step vectors


def test_hop_selector_buttons_switch_whole_views(small_trace):
    fig = heatmap_with_hop_selector(small_trace)
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.label for b in buttons] == ["combined", "hop 0", "hop 1", "hop 2"]
    for b in buttons:
        visible = b.args[0]["visible"]
        assert len(visible) == len(fig.data) and sum(visible) == 4  # prompt, generated, template, target of one view
