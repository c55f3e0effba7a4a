import pytest

from flashtrace.viz import mass_per_hop, mass_split


def test_mass_split_sums_to_one_and_matches_rho(small_trace):
    split = mass_split(small_trace)
    assert len(split) == len(small_trace.hops)
    for shares in split:
        assert sum(shares.values()) == pytest.approx(1.0)
    # hop 0's generated share is rho_0 (recursive span = reasoning + answer)
    assert split[0]["reasoning"] + split[0]["answer"] == pytest.approx(small_trace.hops[0].rho, abs=1e-6)


def test_mass_figure_has_one_bar_series_per_role(small_trace):
    fig = mass_per_hop(small_trace)
    assert [t.name for t in fig.data] == ["prompt", "template", "reasoning", "answer"]
    prompt = fig.data[0]
    assert list(prompt.x) == pytest.approx([s["prompt"] for s in mass_split(small_trace)])
    assert list(prompt.y) == ["hop 0", "hop 1", "hop 2"]
