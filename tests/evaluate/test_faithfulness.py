"""The Story page's faithfulness check (top 10 % of prompt tokens deleted vs random), tiny model."""

import json
import math

import pytest
import torch

from flashtrace.engine.attribution.baselines import target_logprob
from flashtrace.evaluate.faithfulness import faithfulness_check
from flashtrace.evaluate.metrics import deletion_order
from flashtrace.evaluate.methods import replacement_id
from flashtrace.evaluate.tasks import make_example
from flashtrace.engine.models import load_model
from flashtrace.run.tracing import attribute, prepare


@pytest.fixture(scope="module")
def llama():
    return load_model("tiny-llama")


@pytest.fixture(scope="module")
def trace(llama):
    ex = make_example("needle", 1, length=40)
    return attribute(prepare(llama, ex.prompt, ex.response), target="answer", hops=1)


def test_check_matches_manual_deletions(llama, trace):
    got = faithfulness_check(llama, trace, fraction=0.1, n_random=3, seed=5)
    positions = trace.positions("prompt")
    n = math.ceil(0.1 * len(positions))
    assert got["n_prompt"] == len(positions) and got["n_deleted"] == n and len(got["random"]) == 3
    ids = torch.tensor([t.id for t in trace.tokens])
    top = [positions[i] for i in deletion_order(torch.tensor([trace.scores.final[p] for p in positions]))[:n]]
    deleted = ids.clone()
    deleted[top] = replacement_id(llama.tokenizer)
    want = target_logprob(llama.model, torch.stack([ids, deleted]), tuple(trace.settings.target))
    assert got["before"] == pytest.approx(float(want[0]), abs=1e-5)
    assert got["top"] == pytest.approx(float(want[1]), abs=1e-5)
    assert got["random_mean"] == pytest.approx(sum(got["random"]) / 3)
    assert got["random"] != [got["before"]] * 3  # random deletions do change the input
    assert faithfulness_check(llama, trace, n_random=3, seed=5) == got  # seeded: reproducible
    json.dumps(got)


def test_check_rejects_wrong_model_and_bad_arguments(llama, trace):
    with pytest.raises(ValueError, match="fraction"):
        faithfulness_check(llama, trace, fraction=0)
    big = trace.model_copy(update={"tokens": [trace.tokens[0].model_copy(update={"id": 10**7}), *trace.tokens[1:]]})
    with pytest.raises(ValueError, match="vocabulary"):
        faithfulness_check(llama, big)
