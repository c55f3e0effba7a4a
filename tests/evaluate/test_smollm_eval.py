"""End-to-end check on the default model: the needle task depends on its prompt, and FlashTrace finds it."""

import pytest

from flashtrace.evaluate.methods import build_context
from flashtrace.evaluate.runner import evaluate_context
from flashtrace.evaluate.tasks import make_example


@pytest.mark.slow
def test_needle_on_smollm(smollm):
    ctx = build_context(smollm, make_example("needle", 0, length=80, variant="single"))
    rec = evaluate_context(ctx, ["flashtrace-k1"], k=4)
    ft = rec["methods"]["flashtrace-k1"]
    assert ft["s"][-1] < ft["s"][0] - 1.0  # deleting the whole prompt costs the answer > 1 nat
    assert ft["recovery"] >= 0.2  # the needle's digits rank in the top 10% of prompt tokens
    top = sorted(range(rec["n_prompt"]), key=lambda i: -ft["scores"][i])[:3]
    assert all(rec["tokens"][i].strip().isdigit() for i in top)
