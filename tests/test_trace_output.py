"""A trace's output in a notebook or a script: NumPy arrays, nullable integer offsets in pandas, a one-line
repr with the analysis' top sentence, and `show()` as HTML in a kernel (nbclient) and as coloured text in a
terminal (a subprocess's captured output)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
from nbclient import NotebookClient

from flashtrace import Trace
from flashtrace.analysis import facts
from flashtrace.analysis.facts import analyse
from flashtrace.analysis.text import quote, short_text

ROOT = Path(__file__).resolve().parents[1]
GALLERY = sorted(p for p in (ROOT / "assets" / "gallery").glob("*.json") if p.name != "index.json")
LONGEST = ROOT / "assets" / "gallery" / "long-vartrack.json"  # the longest trace, 2,147 tokens


@pytest.fixture(scope="module")
def longest():
    return Trace.load(LONGEST)


def test_scores_and_hops_as_numpy_arrays(longest):
    final, prompt = longest.scores_array(), longest.scores_array("prompt")
    assert isinstance(final, np.ndarray) and final.dtype == np.float64 and final.shape == (longest.n_tokens,)
    assert final.tolist() == longest.scores.final and prompt.tolist() == longest.scores.prompt
    hops = longest.hop_array()
    assert hops.shape == (len(longest.hops), longest.n_tokens)
    assert hops.sum(axis=0) == pytest.approx(final, abs=1e-5)  # the hops' contributions add up to the scores
    assert longest.hop_array("weights")[1].tolist() == longest.hops[1].weights
    with pytest.raises(ValueError, match="which must be"):
        longest.scores_array("hop0")


def test_pandas_offsets_are_nullable_integers(longest):
    table = longest.to_pandas()
    assert table["start"].dtype == pd.Int64Dtype() and table["end"].dtype == pd.Int64Dtype()
    template = table.role == "template"
    assert table.loc[template, "start"].isna().any() and not table.loc[table.role == "prompt", "start"].isna().any()
    assert table["start"].tolist() == [pd.NA if t.start is None else t.start for t in longest.tokens]


@pytest.mark.parametrize("path", GALLERY, ids=lambda p: p.stem)
def test_repr_is_one_short_line_with_the_analysis_top_sentence(path):
    tr = Trace.load(path)
    line = repr(tr)
    assert len(line) <= 200 and "\n" not in line and str(tr) == line
    piece, share = analyse(tr).evidence(1)[0]
    words = short_text(piece.text, 40).split(" … ")[0][:20]
    assert tr.model.name in line and f"{tr.n_tokens:,} tokens" in line and f"{tr.settings.hops} hop" in line
    assert words in line and f"{round(100 * share)}\u00a0%" in line  # the share analyse computed, as shown


def test_repr_quotes_the_target_text_and_shortens_a_long_model_name_to_40_characters():
    tr = Trace.load(ROOT / "assets" / "gallery" / "free-form.json")
    lo, hi = tr.settings.target
    target = "".join(t.text for t in tr.tokens[lo:hi])
    assert f" · target {quote(target, 30)} · " in repr(tr)
    name = "org/" + "a-model-name-far-longer-than-forty-characters-" * 2
    renamed = tr.model_copy(update={"model": tr.model.model_copy(update={"name": name})})
    shown = repr(renamed).removeprefix("<Trace ").split(" · ")[0]
    assert len(shown) == 40 and shown == short_text(name, 40) and shown.startswith("org/a-model")


def test_repr_shortens_a_long_top_sentence_to_fit_the_200_characters_cut_between_words():
    tr = Trace.load(ROOT / "assets" / "gallery" / "needle.json")
    renamed = tr.model_copy(update={"model": tr.model.model_copy(update={"name": "org/" + "long-model-name-" * 5})})
    line = repr(renamed)
    sentence = line.split(" · top sentence ")[1]
    assert 185 <= len(line) <= 200 and " … " in sentence and sentence.endswith("” 36 %>")
    head = sentence[1:].split(" … ")[0]
    full = "Question: What is the special magic number for lucky-falcon mentioned in the provided text?"
    assert full.startswith(head) and full[len(head)] == " "  # the cut falls between words


def test_repr_leaves_the_top_piece_out_when_there_is_none_or_the_analysis_fails(monkeypatch):
    path = ROOT / "assets" / "gallery" / "free-form.json"
    tr = Trace.load(path)
    lo, hi = tr.settings.target
    head = (f"<Trace {tr.model.name} · {tr.n_tokens} tokens · {tr.settings.hops} hops · "
            f"target {quote(''.join(t.text for t in tr.tokens[lo:hi]), 30)}")
    doc = json.loads(path.read_text())
    doc["scores"].update(final=[0.0] * tr.n_tokens, prompt=[0.0] * tr.n_tokens)
    for hop in doc["hops"]:
        hop["contribution"] = [0.0] * tr.n_tokens
    assert repr(Trace.from_json(json.dumps(doc))) == head + " · no prompt attribution>"

    def broken(trace):
        raise RuntimeError("analysis failed")

    monkeypatch.setattr(facts, "analyse", broken)
    assert repr(tr) == head + ">"  # a repr never raises


def test_show_prints_coloured_text_in_a_terminal(tmp_path):
    code = ("import sys, flashtrace; tr = flashtrace.Trace.load(sys.argv[1]); tr.show()")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FORCE_COLOR": "1", "COLUMNS": "100", "TERM": "xterm-256color"}
    out = subprocess.run([sys.executable, "-c", code, str(LONGEST)], capture_output=True, text=True, env=env,
                         timeout=120, check=True).stdout
    tr = Trace.load(LONGEST)
    assert "\x1b[" in out  # coloured
    words = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", out).split())  # as read: colours off, the terminal's wraps undone
    assert tr.title in out and "Top prompt words" in out and "Question: What is the value" in words
    plain = subprocess.run([sys.executable, "-c", code, str(LONGEST)], capture_output=True, text=True,
                           env={**env, "FORCE_COLOR": "", "NO_COLOR": "1", "TERM": "dumb"}, timeout=120,
                           check=True).stdout
    assert "\x1b[" not in plain and tr.title in plain


def test_show_displays_html_in_a_notebook(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        f"import flashtrace\nflashtrace.Trace.load({str(LONGEST)!r}).show()")])
    env_path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    os.environ["PYTHONPATH"], before = env_path, os.environ.get("PYTHONPATH")
    try:
        NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        os.environ.pop("PYTHONPATH") if before is None else os.environ.__setitem__("PYTHONPATH", before)
    outputs = nb.cells[0].outputs
    assert [o.output_type for o in outputs] == ["display_data"], outputs
    assert 'class="flashtrace-trace"' in outputs[0]["data"]["text/html"]
    assert len(outputs[0]["data"]["text/plain"]) <= 200  # the saved plain-text form is the one-line repr
