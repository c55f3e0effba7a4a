"""Issue 13 item 11 (display): heatmap labels show quotes as quotes, not &quot; / &#x27;, while tags stay
inert; a right-to-left override in a token is shown, not applied to the tokens after it."""

import flashtrace
from flashtrace.viz import tokens_html
from flashtrace.viz.heatmap import token_heatmap
from flashtrace.viz.tokens import visible_label


def _labels(fig) -> list[str]:
    return [t for trace in fig.data for row in trace.text for t in row if t]


def _trace(prompt: str):
    return flashtrace.trace(flashtrace.load_model("tiny-llama"), prompt=prompt, response="Answer: 5", hops=1)


def test_quotes_show_as_quotes_and_tags_stay_escaped():
    fig = token_heatmap(_trace('She said "it\'s <b>five</b>" & left. How many?'))
    labels = _labels(fig)
    joined = "".join(labels)
    assert not any("&quot;" in t or "&#x27;" in t or "&amp;amp;" in t for t in labels), labels
    assert '"' in joined and "'" in joined  # shown as typed
    assert "<b>" not in joined and "&lt;b" in joined  # Plotly decodes &lt; back to < when drawing
    hovers = [c[1] for trace in fig.data for row in trace.customdata for c in row if c]
    assert not any("&#x27;" in h or "&quot;" in h for h in hovers), hovers


def test_a_right_to_left_override_is_shown_not_applied():
    """Byte-level tokenizers split U+202E into pieces, but a trace file (or another tokenizer) can hold it
    whole in a token's text: it must not reverse the tokens drawn after it."""
    assert visible_label("ab\u202ecd", None) == "ab⟨U+202E⟩cd"
    tr = _trace("Pay the evil one now. How many?")
    k = next(i for i, t in enumerate(tr.tokens) if t.text == " evil")
    tokens = list(tr.tokens)
    tokens[k] = tokens[k].model_copy(update={"text": " \u202eevil\u202c"})
    tr = tr.model_copy(update={"tokens": tokens})
    page = tokens_html(tr)
    assert "\u202e" not in page and "\u202c" not in page and "⟨U+202E⟩evil⟨U+202C⟩" in page
    labels = "".join(_labels(token_heatmap(tr)))
    assert "\u202e" not in labels and "⟨U+" in labels  # shortened to fit a cell
