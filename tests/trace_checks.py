"""What every Trace must satisfy, written out independently of the loader's own checks
(`flashtrace.analysis.schema`): used by the fuzz tests (a document the loader accepts must hold them) and
the property tests (every trace the tracer makes must hold them, and the stronger ones of a real run)."""

from __future__ import annotations

import math

import pytest

GENERATED = ("reasoning", "answer")


def assert_promised(trace) -> None:
    """The invariants the schema promises for any trace it accepts."""
    n = len(trace.tokens)
    vectors = [trace.scores.final, trace.scores.prompt]
    vectors += [v for hop in trace.hops for v in (hop.weights, hop.raw, hop.contribution)]
    assert all(len(v) == n for v in vectors)
    assert all(math.isfinite(x) and x >= 0 for v in vectors for x in v)
    assert 1 <= len(trace.hops) <= trace.settings.hops + 1 and [h.k for h in trace.hops] == list(range(len(trace.hops)))
    scale = max([*trace.scores.final, 0.0])
    for i, value in enumerate(trace.scores.final):
        parts = [hop.contribution[i] for hop in trace.hops]
        assert value == pytest.approx(math.fsum(parts), rel=2e-4, abs=2e-4 * max(scale, sum(parts)) + 1e-12)
    prompt = [i for i, t in enumerate(trace.tokens) if t.role == "prompt"]
    on_prompt = math.fsum(trace.scores.prompt[i] for i in prompt)
    assert on_prompt == pytest.approx(1.0, abs=2e-4) or math.fsum(trace.scores.prompt) == 0
    assert math.fsum(trace.scores.prompt) == pytest.approx(on_prompt, abs=2e-4)  # nothing outside the prompt
    assert all(t.start <= t.end for t in trace.tokens if t.start is not None and t.end is not None)
    lo, hi = trace.settings.target
    response = [i for i, t in enumerate(trace.tokens) if t.role in GENERATED]
    assert response and response[0] <= lo < hi <= n


def role_runs(trace) -> list[str]:
    """The roles in token order with repeats merged: ['template', 'prompt', 'template', 'reasoning', ...]."""
    runs: list[str] = []
    for tok in trace.tokens:
        if not runs or runs[-1] != tok.role:
            runs.append(tok.role)
    return runs


def assert_traced(trace) -> None:
    """What a trace made by the tracer holds beyond the promised invariants: the prompt and the answer in
    one block each (template text may sit around the prompt; response text after the answer counts as
    reasoning), the spans matching the roles, character offsets in order and hop 0's weights on its span."""
    assert_promised(trace)
    runs = [r for r in role_runs(trace) if r != "template"]
    assert runs[0] == "prompt" and runs.count("prompt") == 1 and runs.count("answer") <= 1
    assert set(runs[1:]) <= set(GENERATED)
    for role in ("prompt", "reasoning", "answer"):
        pos = [i for i, t in enumerate(trace.tokens) if t.role == role]
        first_run = [i for i in pos if i - pos[0] == pos.index(i)]  # the first run of consecutive positions
        span = getattr(trace.spans, role)
        assert (tuple(span) if span is not None else None) == ((pos[0], first_run[-1] + 1) if pos else None), role
    for roles, text in ((("prompt",), trace.prompt), (GENERATED, trace.response)):  # offsets into that text
        toks = [t for t in trace.tokens if t.role in roles and t.start is not None]
        assert all(a.end <= b.start for a, b in zip(toks, toks[1:])) and all(t.end <= len(text) for t in toks)
    lo, hi = trace.settings.target
    generated = {i for i, t in enumerate(trace.tokens) if t.role in GENERATED}
    hop0 = set(range(lo, hi)) if trace.settings.hop0 == "answer" else generated
    assert all(w == 0 for i, w in enumerate(trace.hops[0].weights) if i not in hop0)
    assert sum(trace.hops[0].weights) == pytest.approx(1.0, abs=1e-5)
