"""The hop mass figures (`viz.mass`): where the attribution sits at each hop, as shares."""

import pytest

from flashtrace.analysis.facts import analyse
from flashtrace.viz import mass_per_hop


def test_each_hop_s_split_sums_to_one_and_hop_zero_s_generated_share_is_rho(small_trace):
    facts = analyse(small_trace)
    splits = [d.split for d in facts.depths if d.ran]
    assert len(splits) == len(small_trace.hops)
    for k, shares in enumerate(splits):
        raw = small_trace.hops[k].raw
        prompt = sum(v for v, t in zip(raw, small_trace.tokens) if t.role == "prompt") / sum(raw)
        assert shares["prompt"] == pytest.approx(prompt) and sum(shares.values()) == pytest.approx(1.0)
    # hop 0's generated share is rho_0 (recursive span = reasoning + answer)
    assert splits[0]["reasoning"] + splits[0]["answer"] == pytest.approx(small_trace.hops[0].rho, abs=1e-6)


def test_mass_figure_has_one_bar_series_per_role(small_trace):
    facts = analyse(small_trace)
    fig = mass_per_hop(facts)
    assert [t.name for t in fig.data] == ["prompt", "template", "reasoning", "answer"]
    assert list(fig.data[0].x) == pytest.approx([d.split["prompt"] for d in facts.depths])
    assert list(fig.data[0].y) == ["hop 0", "hop 1", "hop 2"]
    assert "share of that hop's attribution" in fig.layout.title.text
