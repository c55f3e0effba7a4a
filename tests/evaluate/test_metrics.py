"""Metrics against hand-computed curves: perfect, reversed and uniform rankings of a toy additive score."""

import pytest
import torch

from flashtrace.evaluate.metrics import (deletion_masks, deletion_metrics, deletion_order, mas, mass_remaining,
                                         normalise_curve, recovery, rise)

P, IMPORTANT = 20, 7
WEIGHT = torch.zeros(P)
WEIGHT[IMPORTANT] = 1.0
GOLD = WEIGHT.bool()


def toy_score(masks: torch.Tensor) -> torch.Tensor:
    """Target log-prob falls by the weight of each deleted token: s = -Σ_deleted w."""
    return -(masks.float() * WEIGHT).sum(1)


def test_perfect_ranking():
    r = deletion_metrics(WEIGHT.clone(), toy_score, k=20)
    assert r.n == pytest.approx([1.0] + [0.0] * 20)
    assert r.rise == pytest.approx(0.025) and r.mas == pytest.approx(0.025)
    assert recovery(WEIGHT, GOLD) == 1.0


def test_reversed_ranking():
    scores = 1.0 - WEIGHT  # the important token ranked last
    r = deletion_metrics(scores, toy_score, k=20)
    assert r.n == pytest.approx([1.0] * 20 + [0.0])
    assert r.rise == pytest.approx(0.975)
    assert r.d[:20] == pytest.approx([1 - t / 19 for t in range(20)]) and r.d[20] == 0
    assert r.mas == pytest.approx(0.975)
    assert recovery(scores, GOLD) == 0.0


def test_uniform_ranking():
    scores = torch.zeros(P)  # ties: deleted in position order, the important token at step 8
    r = deletion_metrics(scores, toy_score, k=20)
    assert r.n == pytest.approx([1.0] * 8 + [0.0] * 13)
    assert r.rise == pytest.approx(7.5 / 20)
    assert r.d == pytest.approx([1 - t / 20 for t in range(21)])  # no positive mass: token share
    assert r.mas == pytest.approx(0.35 + 0.04 + 0.18)
    assert recovery(scores, GOLD) == 0.0


def test_ranking_order_matters():
    noise = torch.rand(P, generator=torch.Generator().manual_seed(0))  # seeded: the same ties broken every run
    good = deletion_metrics(WEIGHT + 0.01 * noise, toy_score).rise
    bad = deletion_metrics(-WEIGHT + 0.01 * noise, toy_score).rise
    assert good < 0.1 < 0.9 < bad


def test_masks_equal_groups():
    order = deletion_order(torch.arange(45.0))
    masks = deletion_masks(order, k=20)
    assert masks.shape == (21, 45) and not masks[0].any() and masks[-1].all()
    sizes = masks.sum(1).diff()
    assert set(sizes.tolist()) <= {2, 3} and int(sizes.sum()) == 45
    assert masks[1, 44] and masks[1, 43] and not masks[1, 0]  # highest first
    assert (masks[1:].int() >= masks[:-1].int()).all()


def test_normalise_clip_and_running_min():
    n = normalise_curve(torch.tensor([0.0, -2.0, -1.0, -3.0, -4.0]))
    assert n.tolist() == pytest.approx([1.0, 0.5, 0.5, 0.25, 0.0])
    n = normalise_curve(torch.tensor([0.0, 1.0, -0.5, -1.0]))  # rises above s_0: clipped to 1
    assert n.tolist() == pytest.approx([1.0, 1.0, 0.5, 0.0])
    assert normalise_curve(torch.tensor([-1.0, -3.0, -1.0])).tolist() == [1.0, 1.0, 1.0]
    assert rise(torch.ones(21)) == pytest.approx(1.0) and rise(torch.linspace(1, 0, 21)) == pytest.approx(0.5)


def test_mas_minmax_and_mass():
    masks = deletion_masks(torch.arange(4), k=4)
    d = mass_remaining(torch.tensor([3.0, 1.0, -2.0, 0.0]), masks)
    assert d.tolist() == pytest.approx([1.0, 0.25, 0.0, 0.0, 0.0])
    assert mas(torch.ones(5), torch.ones(5)) == 0.0  # constant curve: minmax gives zeros
    n = torch.tensor([1.0, 0.5, 0.0])
    assert mas(n, n) == pytest.approx(0.5)


def test_recovery_top_fraction():
    scores = torch.arange(30.0)
    gold = torch.zeros(30, dtype=torch.bool)
    gold[[29, 28, 0]] = True
    assert recovery(scores, gold) == pytest.approx(2 / 3)  # top ceil(3) = 29, 28, 27
    assert recovery(scores, torch.zeros(30, dtype=torch.bool)) is None


def test_recovery_of_random_rankings_matches_the_reported_chance_level():
    from flashtrace.evaluate.report import recovery_chance

    gen = torch.Generator().manual_seed(0)
    gold = torch.zeros(37, dtype=torch.bool)
    gold[[3, 4, 5, 20, 21]] = True
    draws = [recovery(torch.rand(37, generator=gen), gold) for _ in range(4000)]
    assert sum(draws) / len(draws) == pytest.approx(recovery_chance(37), abs=0.01)  # 4 of 37 = 0.108
