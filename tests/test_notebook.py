"""A trace in a notebook: escaped self-contained HTML display, Plotly figures, a pandas table, and the
example notebook run end to end (nbclient) on a tiny model."""

import base64
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pandas as pd
import plotly.graph_objects as go
import pytest
from nbclient import NotebookClient

import flashtrace
from flashtrace.viz.export import image_export_problem

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = '<script>alert(1)</script> " onmouseover="x" <img src=http://127.0.0.1:9/leak.png>'


def _tags(page: str) -> list[tuple[str, list]]:
    """Every element the browser would build from `page`: (tag, attributes)."""
    found = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, attrs))

    Collect().feed(page)
    return found


@pytest.fixture(scope="module")
def hostile_trace():
    from tests.conftest import _load

    return flashtrace.trace(_load("tiny-llama"), f"Why? {HOSTILE} Count the apples.", "2 + 2 = 4.\nAnswer: 4",
                            hops=2, steps=True, title=f"title {HOSTILE}")


def test_html_display_escapes_every_text_and_needs_nothing_from_outside(hostile_trace):
    page = hostile_trace._repr_html_()
    assert "<script>alert" not in page and "<img src=" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # the title, shown as text
    tags = _tags(page)
    assert not {"script", "img", "link", "iframe", "object"} & {tag for tag, _ in tags}
    assert not [(tag, name) for tag, attrs in tags for name, _ in attrs if name in ("src", "href") or name.startswith("on")]
    assert "@import" not in page and "url(" not in page


def test_html_display_says_what_reached_the_prompt_and_lists_the_top_tokens(hostile_trace):
    page = hostile_trace._repr_html_()
    reached = [1 - h.rho for h in hostile_trace.hops]  # recursive span reasoning + answer: reached = 1 - ρ_K
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", page)
    for k, value in enumerate(reached):  # one row per depth: how much reached the input, in the analysis' words
        depth = "directly (hop 0)" if k == 0 else f"after {k} hop{'s' if k > 1 else ''}"
        row = cells.index(depth)
        assert cells[row + 1] == f"{100 * value:.1f}\u00a0% of the answer&#x27;s attribution"
    prompt = hostile_trace.positions("prompt")
    words = [i for i in prompt if any(c.isalnum() for c in hostile_trace.tokens[i].text)]
    best = max(words, key=lambda i: (hostile_trace.scores.prompt[i], -i))
    row = cells.index(str(best))
    assert cells[row + 2] == f"{100 * hostile_trace.scores.prompt[best]:.1f}\u00a0%"


def test_figures_are_the_app_views(hostile_trace):
    """Each notebook figure is the figure the app draws for the same view (the same function, same data)."""
    from flashtrace.analysis.facts import analyse
    from flashtrace.analysis.graph import HopGraph
    from flashtrace.viz.compare import hop_token_strips
    from flashtrace.viz.graph import hop_graph_figure
    from flashtrace.viz.heatmap import token_heatmap

    trace = hostile_trace
    assert trace.heatmap().to_plotly_json() == token_heatmap(trace, None).to_plotly_json()
    assert trace.heatmap(hop=1).to_plotly_json() == token_heatmap(trace, 1).to_plotly_json()
    drawn = hop_graph_figure(HopGraph.from_trace(trace).pruned(node_threshold=0.8, fold=True), trace)
    assert trace.hop_graph().to_plotly_json() == drawn.to_plotly_json()
    strips = trace.compare_depths()
    assert strips.to_plotly_json() == hop_token_strips(analyse(trace), [t.text for t in trace.tokens], "added",
                                                       shared=True).to_plotly_json()
    assert len(strips.data[0].z) == 3  # hop 0 and what hops 1 and 2 add


def test_pandas_table_holds_every_token_and_the_hop_contributions(hostile_trace):
    table = hostile_trace.to_pandas()
    assert isinstance(table, pd.DataFrame) and len(table) == hostile_trace.n_tokens
    assert list(table["token"]) == [t.text for t in hostile_trace.tokens]
    assert list(table["role"]) == [t.role for t in hostile_trace.tokens]
    assert [None if pd.isna(v) else int(v) for v in table["start"]] == [t.start for t in hostile_trace.tokens]
    assert list(table["final"]) == hostile_trace.scores.final
    assert list(table["prompt_score"]) == hostile_trace.scores.prompt
    for k, hop in enumerate(hostile_trace.hops):
        assert list(table[f"hop{k}_contribution"]) == hop.contribution
    summed = table[[f"hop{k}_contribution" for k in range(3)]].sum(axis=1)
    assert summed.to_numpy() == pytest.approx(table["final"].to_numpy(), abs=1e-6)
    assert table.loc[table.role == "prompt", "prompt_score"].sum() == pytest.approx(1.0, abs=1e-6)


def test_hop_graph_needs_step_data():
    from tests.conftest import _load

    tr = flashtrace.trace(_load("tiny-llama"), "Count the apples.", "Answer: 4", hops=1)
    with pytest.raises(ValueError, match="steps=True"):
        tr.hop_graph()


PLOTLY = "application/vnd.plotly.v1+json"
QUICKSTART = ROOT / "examples" / "quickstart.ipynb"


# kaleido's browser channel (choreographer) logs a message from chromium it could not decode and goes on
# ("Ignoring"): seen under load, with the PNG still drawn. Nothing of ours; any other stderr text still fails.
_CHANNEL_NOISE = re.compile(r"JSONError decoding message\. Ignoring\n.*?choreographer\.channels\._errors\.JSONError\n?",
                            re.DOTALL)


def _check_outputs(nb, png: bool) -> None:
    """No error, nothing on stderr (no warning), the trace's HTML view, and three Plotly figures that each
    carry an HTML fallback (plotly.js embedded once, offline) beside the Plotly JSON, and a PNG with `png`."""
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    stderr = [_CHANNEL_NOISE.sub("", o.text) for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    assert not [text for text in stderr if text.strip()]
    shown = [o.get("data", {}) for o in outputs if o.output_type in ("execute_result", "display_data")]
    assert any("flashtrace-trace" in d.get("text/html", "") for d in shown)
    figures = [d for d in shown if PLOTLY in d]
    assert len(figures) == 3
    for figure in figures:
        assert "Plotly.newPlot" in figure["text/html"]
        if png:  # what GitHub shows: a real image, not an empty placeholder
            assert base64.b64decode(figure["image/png"])[:8] == b"\x89PNG\r\n\x1a\n"
    assert any("plotly.js" in d.get("text/html", "") and len(d["text/html"]) > 1_000_000 for d in shown)


@pytest.mark.slow  # a Jupyter kernel runs the whole notebook: 13 s idle
def test_example_notebook_runs(monkeypatch, tmp_path):
    monkeypatch.setenv("FLASHTRACE_NOTEBOOK_MODEL", "tiny-llama")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    nb = nbformat.read(QUICKSTART, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    _check_outputs(nb, png=image_export_problem() is None)


def test_committed_notebook_carries_its_outputs():
    """examples/quickstart.ipynb is committed executed (examples/execute.py, the built-in SmolLM2 model):
    it shows on GitHub and nbviewer without running."""
    nb = nbformat.read(QUICKSTART, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code)
    assert "SmolLM2" in str(code[0].outputs) or "smollm2" in str(code[0].outputs)
    _check_outputs(nb, png=True)


def test_the_html_view_lists_the_top_prompt_tokens_of_the_api():
    """Issue 49 item 7: the HTML's "Top 10 prompt words" left out "?", which `top_prompt_tokens` ranks second; now
    both read one definition."""
    import html
    import re

    from flashtrace.store.gallery import load_gallery_trace
    from flashtrace.viz.notebook import trace_html

    trace = load_gallery_trace("marbles")
    shown = re.findall(r"<td[^>]*>(\d+)</td><td[^>]*>([^<]*)</td>", trace_html(trace, k=10))
    assert [(int(i), html.unescape(t)) for i, t in shown] == [(i, repr(t)) for i, t, _s in trace.top_prompt_tokens(10)]
    assert any("?" in t for _i, t, _s in trace.top_prompt_tokens(10))
