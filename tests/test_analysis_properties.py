"""Property tests of the analysis layer (`flashtrace.analysis.facts.analyse`) on traces hypothesis makes
on a tiny model: every share sums to its total, what must grow with depth grows, and the layer agrees with
the trace's own stored numbers. Expected values come from the trace's hop vectors, computed here."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flashtrace.analysis.facts import analyse
from flashtrace.run.tracing import attribute, prepare
from tests.conftest import _load
from tests.test_properties import prompts, responses

INPUT = ("template", "prompt")


def reached_by_hand(trace) -> list[float]:
    """Share of the answer's attribution on the input after hops 0..K: Σ_{j<=K} ρ_{j-1} · (input share of a_j)."""
    out, total, rho_prev = [], 0.0, 1.0
    for k in range(trace.settings.hops + 1):
        if k < len(trace.hops):
            raw = trace.hops[k].raw
            total += rho_prev * math.fsum(v for v, t in zip(raw, trace.tokens) if t.role in INPUT) / math.fsum(raw)
            rho_prev = trace.hops[k].rho
        out.append(total)
    return out


def check_facts(trace) -> None:
    facts = analyse(trace)
    hops = trace.settings.hops
    assert len(facts.depths) == hops + 1 and [d.ran for d in facts.depths] == [k < len(trace.hops) for k in range(hops + 1)]
    reached = [d.reached for d in facts.depths]
    assert reached == pytest.approx(reached_by_hand(trace), abs=1e-9)
    assert all(b >= a - 1e-12 for a, b in zip(reached, reached[1:])) and reached[-1] <= 1 + 1e-9
    for d in facts.depths:
        assert d.rho == trace.hops[min(d.k, len(trace.hops) - 1)].rho
        if trace.settings.recursive == "reasoning+answer" and d.ran:  # nothing else to lose
            assert d.reached + d.rho == pytest.approx(1.0, abs=1e-5)
    raw0 = np.asarray(trace.hops[0].raw)
    roles = np.asarray([t.role for t in trace.tokens])
    direct = {"prompt": raw0[roles == "prompt"].sum(), "template": raw0[roles == "template"].sum(),
              "generated": raw0[np.isin(roles, ["reasoning", "answer"])].sum()}
    assert facts.direct == pytest.approx({k: v / raw0.sum() for k, v in direct.items()}, abs=1e-9)
    check_shares(trace, facts)


def check_shares(trace, facts) -> None:
    """Sentence and token shares per depth from the cumulative contributions; the deepest depth is the trace's
    own final ranking; what the hops added sums to the final shares."""
    prompt = [i for i, t in enumerate(trace.tokens) if t.role == "prompt"]
    assert list(facts.prompt_positions) == prompt
    contributions = np.asarray([h.contribution for h in trace.hops])
    cum = np.cumsum(contributions, axis=0)
    for d in facts.depths:
        row = cum[min(d.k, len(trace.hops) - 1)]
        on_prompt = row[prompt].sum()
        pieces = np.asarray([row[p.start:p.end].sum() for p in facts.pieces])
        if on_prompt > 0:
            assert d.shares.sum() == pytest.approx(1.0, abs=1e-9) and d.token_shares.sum() == pytest.approx(1.0, abs=1e-9)
            assert d.shares == pytest.approx(pieces / on_prompt, abs=1e-9)
            assert d.token_shares == pytest.approx(row[prompt] / on_prompt, abs=1e-9)
        assert [d.shares[i] for i in d.order] == sorted(d.shares, reverse=True)
        assert all(cum[min(d.k, len(cum) - 1)][i] >= cum[max(min(d.k, len(cum) - 1) - 1, 0)][i] - 1e-12 for i in prompt)
    final = facts.final
    assert final.token_shares == pytest.approx([trace.scores.prompt[i] for i in prompt], abs=2e-6)
    assert final.shares == pytest.approx([sum(trace.scores.prompt[p.start:p.end]) for p in facts.pieces], abs=2e-6)
    assert sum(d.added for d in facts.depths) == pytest.approx(final.shares, abs=1e-9)
    assert [p.key for p, _ in facts.evidence()] == [facts.pieces[i].key for i in final.order if final.shares[i] > 0]
    assert sum(facts.input_share) == pytest.approx(facts.depths[-1].reached, abs=1e-9)
    if facts.graph is not None:
        assert facts.graph.shares.sum() == pytest.approx(1.0, abs=1e-9) or facts.graph.shares.sum() == 0
        assert facts.graph.difference == pytest.approx(float(np.abs(facts.graph.shares - final.shares).max()), abs=1e-12)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prompt=prompts, response=responses(), hops=st.integers(0, 3), recursive=st.sampled_from(["reasoning+answer", "reasoning"]),
       hop0=st.sampled_from(["answer", "generation"]), stops=st.sampled_from(["paper", "none"]), steps=st.booleans())
def test_the_analysis_of_any_trace_adds_up(prompt, response, hops, recursive, hop0, stops, steps):
    prepared = prepare(_load("tiny-llama"), prompt, response)
    try:
        trace = attribute(prepared, hops=hops, recursive=recursive, hop0=hop0, stop_tokens=stops, steps=steps)
    except ValueError as exc:  # a target of stop tokens only is refused
        assert "stop tokens" in str(exc)
        return
    check_facts(trace)
