"""Recursive hops: the bookkeeping invariants of METHOD §4."""

import pytest
import torch

from flashtrace.engine.attribution import recursive_hops


def matrix_aggregator(seed=0, n=12):
    """A causal random aggregator: row i of a fixed non-negative matrix, weighted by the target."""
    g = torch.Generator().manual_seed(seed)
    m = torch.rand(n, n, generator=g).tril()
    return lambda w: w @ m, n


def masks(n, n_prompt=5):
    prompt = torch.zeros(n, dtype=torch.bool)
    prompt[:n_prompt] = True
    return prompt, ~prompt


@pytest.mark.parametrize("hops", [0, 1, 2, 3, 4])
def test_final_is_the_sum_of_contributions(hops):
    agg, n = matrix_aggregator()
    observed, generated = masks(n)
    target = torch.zeros(n)
    target[9:] = 1
    result, final = recursive_hops(agg, target, generated, observed, hops=hops)
    assert len(result) == hops + 1
    assert torch.allclose(final, sum(h.contribution for h in result), atol=1e-6)
    assert all(0 <= h.rho <= 1 for h in result)
    assert torch.all(final >= 0) and torch.all(final[~observed] == 0)


def test_hops_follow_the_method_formulas():
    agg, n = matrix_aggregator(seed=1)
    observed, generated = masks(n)
    target = torch.zeros(n)
    target[10:] = 1
    result, final = recursive_hops(agg, target, generated, observed, hops=2)
    a0 = agg((target / target.sum())[None])[0]
    rho0 = a0[generated].sum() / a0.sum()
    u1 = a0 * generated / (a0 * generated).sum()
    a1 = agg(u1[None])[0]
    rho1 = rho0 * a1[generated].sum() / a1.sum()
    assert torch.allclose(result[0].raw, a0) and result[0].rho == pytest.approx(float(rho0))
    assert torch.allclose(result[1].weights, u1) and result[1].rho == pytest.approx(float(rho1))
    assert torch.allclose(result[1].contribution, rho0 * a1 * observed, atol=1e-7)
    u2 = a1 * generated / (a1 * generated).sum()  # hop 2, from hop 1's mass on the generated tokens
    a2 = agg(u2[None])[0]
    rho2 = rho1 * a2[generated].sum() / a2.sum()
    assert torch.allclose(result[2].weights, u2) and torch.allclose(result[2].raw, a2)
    assert result[2].rho == pytest.approx(float(rho2))
    assert torch.allclose(result[2].contribution, rho1 * a2 * observed, atol=1e-7)
    # the final prompt attribution, written from METHOD §4 directly (not from the contributions returned)
    assert torch.allclose(final, a0 * observed + rho0 * a1 * observed + rho1 * a2 * observed, atol=1e-6)


def test_stop_tokens_get_no_weight_and_no_score():
    agg, n = matrix_aggregator(seed=2)
    observed, generated = masks(n)
    target = torch.zeros(n)
    target[8:] = 1
    stop = torch.zeros(n, dtype=torch.bool)
    stop[[2, 9]] = True
    result, final = recursive_hops(agg, target, generated, observed, hops=2, stop_mask=stop)
    assert all(h.weights[stop].sum() == 0 and h.raw[stop].sum() == 0 for h in result)
    assert final[2] == 0


def test_hops_stop_when_no_mass_is_left_on_generated_tokens():
    n = 8
    observed, generated = masks(n, n_prompt=4)
    to_prompt_only = torch.zeros(n, n)
    to_prompt_only[:, :4] = 1.0
    result, final = recursive_hops(lambda w: w @ to_prompt_only, torch.ones(n) * generated, generated, observed,
                                   hops=3)
    assert len(result) == 1 and result[0].rho == 0
    assert torch.allclose(final.sum(), torch.tensor(1.0 * 4))


def test_all_stop_token_target_is_refused():
    agg, n = matrix_aggregator()
    observed, generated = masks(n)
    target = torch.zeros(n)
    target[10] = 1
    stop = torch.zeros(n, dtype=torch.bool)
    stop[10] = True
    with pytest.raises(ValueError, match="no token with positive weight"):
        recursive_hops(agg, target, generated, observed, stop_mask=stop)


def test_without_a_stop_mask_every_token_counts_and_one_hop_follows_hop_zero():
    agg, n = matrix_aggregator(seed=3)
    observed, generated = masks(n)
    target = (torch.arange(n) >= 9).long()  # an integer mask works as well as weights
    calls = []
    result, final = recursive_hops(agg, target, generated, observed, on_hop=calls.append)
    assert [h.k for h in result] == calls == [0, 1]
    assert torch.allclose(result[0].weights, target / 3.0)
    assert result[0].raw.dtype == torch.float32 and torch.allclose(result[0].raw, agg((target / 3.0)[None])[0])


def test_an_aggregator_that_finds_nothing_ends_the_hops_with_no_attribution():
    n = 6
    observed, generated = masks(n, n_prompt=3)
    result, final = recursive_hops(lambda w: torch.zeros_like(w), generated.float(), generated, observed, hops=3)
    assert len(result) == 1 and result[0].rho == 0.0
    assert torch.equal(final, torch.zeros(n)) and not final.isnan().any()


def test_hops_never_go_past_the_number_asked_for():
    agg, n = matrix_aggregator(seed=4)
    observed, generated = masks(n)
    for hops in (0, 1, 2):
        calls = []
        result, _ = recursive_hops(agg, generated.float(), generated, observed, hops=hops, on_hop=calls.append)
        assert calls == list(range(hops + 1)) and len(result) == hops + 1


def test_an_all_stop_target_is_refused_in_words():
    n = 4
    observed, generated = masks(n, n_prompt=2)
    with pytest.raises(ValueError) as raised:
        recursive_hops(lambda w: w, generated.float(), generated, observed, stop_mask=generated)
    assert str(raised.value) == "the target span has no token with positive weight (all stop tokens?)"
