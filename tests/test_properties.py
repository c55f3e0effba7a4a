"""Property tests (hypothesis): what holds for every trace, every response and every library title, not only
for the examples someone thought of.

- Every trace the tracer makes, whatever the text, hops, stop tokens, recursive span and hop-0 span, holds
  the invariants (tests/trace_checks.py: final = Σ contributions, prompt shares sum to 1, roles in one block
  each, offsets in order, ρ as METHOD.md §4 defines it) and saves as it loaded.
- Answer-span detection on built responses: the expected spans are known from how each response was put
  together (the last ``\\boxed{}`` after the reasoning, else the last "Answer:" line, else the text after
  ``</think>``, else the last non-empty line), not from the detector's own rules.
- Library names: any title saves under a safe name, reopens, renames and deletes.
"""

from __future__ import annotations

import math
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from flashtrace import Trace
from flashtrace.engine.inputs import detect_spans
from flashtrace.run.tracing import attribute, prepare
from flashtrace.store.library import Library, LibraryError
from tests.conftest import _load
from tests.trace_checks import assert_traced

WORDS = ["Ann", "has", "3", "apples", "Ben", "gives", "her", "two", "more", "how", "many", "now", "the", "sum", "is",
         "of", "and", "4", "7", "cats", "dogs", "x", "=", "+"]
PUNCT = ["", ".", "?", "!", ",", ":"]
words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)
sentence = st.tuples(words, st.sampled_from(PUNCT)).map("".join)
prompts = st.lists(sentence, min_size=1, max_size=3).map(" ".join)


@st.composite
def responses(draw) -> str:
    steps = draw(st.lists(sentence, min_size=0, max_size=3))
    answer = draw(words)
    form = draw(st.sampled_from(["answer-line", "think", "boxed", "last-line"]))
    if form == "think":
        return f"<think>{' '.join(steps) or 'ok'}</think>\n{answer}"
    if form == "boxed":
        return "\n".join([*steps, f"So \\boxed{{{answer}}}."])
    if form == "answer-line":
        return "\n".join([*steps, f"Answer: {answer}"])
    return "\n".join([*steps, answer])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=st.sampled_from(["tiny-llama", "tiny-qwen2", "tiny-gpt2"]), prompt=prompts, response=responses(),
       hops=st.integers(0, 3), stops=st.sampled_from(["paper", "punctuation", "none"]),
       recursive=st.sampled_from(["reasoning+answer", "reasoning"]), hop0=st.sampled_from(["answer", "generation"]),
       chat=st.booleans())
def test_every_trace_holds_the_invariants(model, prompt, response, hops, stops, recursive, hop0, chat):
    prepared = prepare(_load(model), prompt, response, chat_template=chat)
    try:
        trace = attribute(prepared, hops=hops, stop_tokens=stops, recursive=recursive, hop0=hop0)
    except ValueError as exc:  # a target made only of stop tokens is refused, with a reason
        assert "stop tokens" in str(exc) or "weight" in str(exc)
        return
    assert_traced(trace)
    assert trace.prompt == prompt and trace.response == response
    assert (trace.settings.hops, trace.settings.stop_tokens, trace.settings.recursive, trace.settings.hop0) == (
        hops, stops, recursive, hop0)
    g_roles = ("reasoning",) if recursive == "reasoning" else ("reasoning", "answer")
    g = [i for i, t in enumerate(trace.tokens) if t.role in g_roles]
    rho = 1.0
    for k, hop in enumerate(trace.hops):  # ρ_k and each hop's contribution, from the raw vectors
        previous = rho
        rho *= math.fsum(hop.raw[i] for i in g) / math.fsum(hop.raw)
        assert hop.rho == pytest.approx(rho, abs=1e-6)
        observed = [t.role in ("template", "prompt") for t in trace.tokens]  # the input keeps what reaches it
        assert hop.contribution == pytest.approx([r * previous * m for r, m in zip(hop.raw, observed)], abs=1e-6)
    if len(trace.hops) < hops + 1:  # stopped early: nothing was left on the recursive span
        assert trace.hops[-1].rho == 0 or not any(trace.hops[-1].raw[i] > 0 for i in g)
    assert Trace.from_json(trace.to_json()) == trace


# --- answer-span detection ----------------------------------------------------------------------------------

filler = st.text(alphabet="abcdefgh ijk.,0123456789\t", max_size=25)  # no "answer", no markup, no braces
content = st.text(alphabet="abcdefgh0123456789 .=+", min_size=1, max_size=12).map(str.strip).filter(bool)


class Built:
    """A response put together piece by piece, remembering where each piece landed."""

    def __init__(self):
        self.text = ""

    def add(self, piece: str) -> tuple[int, int]:
        start = len(self.text)
        self.text += piece
        return start, len(self.text)


def _stripped(text: str, start: int, end: int) -> tuple[int, int] | None:
    inner = text[start:end]
    if not inner.strip():
        return None
    return start + len(inner) - len(inner.lstrip()), end - (len(inner) - len(inner.rstrip()))


@st.composite
def built_responses(draw):
    """(response, expected reasoning range, expected answer range, expected rule)."""
    b = Built()
    think = draw(st.sampled_from(["none", "open-close", "close-only"]))
    reasoning = None
    if think != "none":
        if think == "open-close":
            b.add(draw(filler) + "<think>")
        inner_start = len(b.text)
        for line in draw(st.lists(filler, max_size=3)):  # marks in the reasoning never count
            b.add(line + draw(st.sampled_from(["\n", " Answer: 5\n", " \\boxed{9}\n"])))
        reasoning = _stripped(b.text, inner_start, len(b.text))
        b.add("</think>")
    after = len(b.text)
    lines = draw(st.lists(filler, max_size=4))
    boxes = draw(st.lists(st.integers(0, max(len(lines) - 1, 0)), max_size=2)) if lines else []
    mark_at = draw(st.none() | st.integers(0, len(lines)))
    boxed = mark = None
    for i, line in enumerate(lines + [""]):
        if i == mark_at:
            b.add(draw(st.sampled_from(["Answer: ", "The final answer is: ", "answer:  "])))
            mark = b.add(draw(content))
            b.add(draw(st.sampled_from(["", " "])) + "\n")
        if i < len(lines):
            b.add(line)
            for _ in range(boxes.count(i)):
                b.add(" \\boxed{")
                boxed = b.add(draw(content))
                b.add("} ")
            b.add("\n")
    text = b.text
    if boxed:
        answer, rule = boxed, "boxed"
    elif mark:
        answer, rule = mark, "answer-line"
    elif think != "none" and _stripped(text, after, len(text)):
        answer, rule = _stripped(text, after, len(text)), "after-think"
    elif _stripped(text, after, len(text)):
        end = _stripped(text, after, len(text))[1]
        answer, rule = _stripped(text, text.rfind("\n", 0, end) + 1, end), "last-line"
    else:
        return text, reasoning, None, "empty"
    if think == "none":
        reasoning = _stripped(text, 0, text.rfind("\n", 0, answer[0]) + 1)
    return text, reasoning, answer, rule


@settings(max_examples=400, deadline=None)
@given(case=built_responses())
def test_answer_span_precedence(case):
    text, reasoning, answer, rule = case
    spans = detect_spans(text)
    assert (spans.rule, spans.answer, spans.reasoning) == (rule, answer, reasoning), text


def test_answer_span_examples_by_precedence():
    """The rules in order, each beating the ones after it."""
    cases = [
        ("<think>Answer: 1 \\boxed{2}</think>x \\boxed{3} y\nAnswer: 4\nlast", "boxed", "3"),
        ("<think>a</think>x\nAnswer: 4\nlast", "answer-line", "4"),
        ("The answer is: Answer: 32\nok", "answer-line", "32"),
        ("Answer: 5\nfinal answer:\n", "answer-line", "5"),
        ("<think>a \\boxed{1}</think>\n  after  \n", "after-think", "after"),
        ("one\n two \n\n", "last-line", "two"),
        ("\\boxed{a{b}c}", "boxed", "a{b}c"),
        ("\\boxed{open\nAnswer: 6", "answer-line", "6"),  # an unclosed box is no answer
    ]
    for text, rule, answer in cases:
        spans = detect_spans(text)
        assert (spans.rule, text[slice(*spans.answer)]) == (rule, answer), text


# --- library naming -------------------------------------------------------------------------------------------

SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")
titles = st.text(max_size=120) | st.sampled_from(["..", "../../etc/passwd", "a/b", "con", "-", ".hidden", "x" * 300,
                                                   "é" * 90, "\x00", "trace", " spaced  out "])


@pytest.fixture(scope="module")
def small_trace():
    return attribute(prepare(_load("tiny-llama"), "Ann has 3 apples.", "Answer: 3"), hops=0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=titles, second=titles)
def test_any_title_saves_reopens_renames_and_deletes(small_trace, first, second):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "lib"
        lib = Library(root)
        trace = small_trace.model_copy(update={"title": first[:500]})
        name = lib.save(trace)
        again = lib.save(trace, first)  # the same title twice: a second name, the first file untouched
        assert SAFE.fullmatch(name) and SAFE.fullmatch(again) and name != again
        assert sorted(p.name for p in root.iterdir() if p.suffix == ".json") == sorted([f"{name}.json", f"{again}.json"])
        assert lib.open(name) == trace and lib.open(again) == trace  # the title comes back exactly
        assert {e.name: e.title for e in lib.entries()} == {name: trace.title, again: trace.title}
        try:
            renamed = lib.rename(name, second)
        except LibraryError as exc:  # only when the new name is the other trace's
            assert "already exists" in str(exc)
            renamed = name
        else:
            assert SAFE.fullmatch(renamed) and (renamed == name or not lib.exists(name))
        assert lib.open(renamed) == trace and lib.open(again) == trace
        lib.delete(renamed)
        lib.delete(again)
        assert lib.entries() == [] and not [p for p in root.iterdir() if p.suffix == ".json"]
        with pytest.raises(LibraryError):
            lib.open(renamed)
