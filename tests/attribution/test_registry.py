"""The one method registry: declared options checked before a run, progress that reaches its total,
capabilities, and the same methods behind `attribute`, the CLI and the evaluation (issue 18 items 3, 4, 7)."""

import pytest
import torch

from flashtrace.engine.attribution import METHODS, get_method
from flashtrace.engine.attribution.baselines import attention_rollout, raw_attention
from flashtrace.run.tracing import attribute, method_source, prepare

PROMPT = "Ann has 3 red balls. Ben has 4 blue balls. How many balls do they have together?"
RESPONSE = "Ann has 3 balls.\nBen has 4 balls.\n3 + 4 = 7.\nAnswer: 7 balls."


@pytest.fixture
def prepared(tiny_llama):
    return prepare(tiny_llama, PROMPT, RESPONSE)


def test_every_registered_method_runs_through_attribute(prepared):
    assert {"flashtrace", "ifr", "ifr-rowwise", "attention", "rollout", "ig", "perturbation"} <= set(METHODS)
    for name, spec in METHODS.items():
        options = {"steps": 2} if name == "ig" else {}
        tr = attribute(prepared, method=name, hops=1 if spec.hops else 0, options=options)
        assert tr.settings.method == name and len(tr.hops) == (2 if spec.hops else 1)
        assert sum(tr.scores.prompt) == pytest.approx(1.0) and min(tr.scores.final) >= 0


@pytest.mark.parametrize("method", ["flashtrace", "ifr", "ifr-rowwise", "attention"])
@pytest.mark.parametrize("hops, steps", [(0, False), (2, False), (1, True)])
def test_progress_reaches_its_total(prepared, method, hops, steps):
    seen = []
    attribute(prepared, method=method, hops=hops, steps=steps, progress=lambda d, t: seen.append((d, t)))
    assert seen and seen[-1][0] == seen[-1][1] > 0
    assert all(d <= t for d, t in seen) and [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_progress_counts_target_rows_for_ifr(prepared):
    """IFR ticks once per explained row: the answer's tokens that are not stop tokens."""
    seen = []
    tr = attribute(prepared, method="ifr", hops=0, progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (sum(1 for w in tr.hops[0].weights if w > 0),) * 2


def test_ifr_refuses_a_threshold_before_running(prepared):
    seen = []
    with pytest.raises(ValueError, match="ifr has no option threshold"):
        attribute(prepared, method="ifr", threshold=0.1, progress=lambda d, t: seen.append(d))
    assert seen == []


@pytest.mark.parametrize("bad", [1.0, -0.1, 2, "x"])
def test_a_bad_threshold_is_a_plain_error_before_the_run(prepared, bad):
    seen = []
    with pytest.raises(ValueError, match="threshold") as info:
        attribute(prepared, threshold=bad, progress=lambda d, t: seen.append(d))
    assert seen == [] and "pydantic" not in str(info.value)


def test_capabilities_are_enforced(prepared):
    with pytest.raises(ValueError, match="cannot run recursive hops"):
        attribute(prepared, method="perturbation", hops=1)
    with pytest.raises(ValueError, match="cannot attribute reasoning steps"):
        attribute(prepared, method="ig", hops=0, steps=True)
    with pytest.raises(ValueError, match="option"):
        attribute(prepared, method="rollout", hops=0, options={"residual": 1.5})
    assert get_method("rollout").resolve_options({"residual": "0.25"}) == {"residual": 0.25}


def test_baselines_in_attribute_equal_the_direct_functions(prepared):
    """hops=0 without stop tokens: the trace's prompt scores are the baseline's own, and a signed
    method keeps its positive part."""
    seq = prepared.sequence
    tr = attribute(prepared, method="attention", hops=0, stop_tokens="none")
    w = torch.zeros(len(seq))
    w[slice(*tr.settings.target)] = 1
    direct = raw_attention(prepared.recording, w)
    prompt = seq.positions("prompt")
    assert torch.allclose(torch.tensor(tr.scores.final)[prompt], direct[prompt], atol=1e-7)
    tr = attribute(prepared, method="rollout", hops=1, stop_tokens="none", options={"residual": 0.3})
    assert tr.extra["method_options"] == {"residual": 0.3} and len(tr.hops) == 2
    assert torch.allclose(torch.tensor(tr.hops[0].raw), attention_rollout(prepared.recording, w, residual=0.3),
                          atol=1e-6)
    signed = get_method("perturbation").aggregator(method_source(prepared))(w[None])[0]
    tr = attribute(prepared, method="perturbation", hops=0, stop_tokens="none")
    assert torch.allclose(torch.tensor(tr.hops[0].raw), signed.clamp_min(0), atol=1e-6)


def test_the_evaluation_uses_the_registry(prepared, tiny_llama):
    from flashtrace.evaluate.methods import build_context, get_eval_method
    from flashtrace.evaluate.tasks import make_example

    ctx = build_context(tiny_llama, make_example("arithmetic", 0))
    w = ctx.target_weights()
    assert torch.equal(get_eval_method("attention")(ctx), raw_attention(ctx.prepared.recording, w))
    ig = get_eval_method("ig")(ctx)
    direct = get_method("ig").aggregator(method_source(ctx.prepared), steps=ctx.ig_steps)(w[None])[0]
    assert torch.allclose(ig, direct, atol=1e-6)
    segments = ctx.segments()
    assert sorted(p for s in segments for p in s) == ctx.positions.tolist()  # every prompt token in one sentence


def test_sentences_split_like_the_segments_module(tiny_llama):
    """The ablation's sentences are the trace's prompt segments: "3.5" is one number, not two sentences."""
    prepared = prepare(tiny_llama, "Pay 3.5 dollars. Then pay 2.", "Total 5.5.\nAnswer: 5.5")
    segments = method_source(prepared).segments
    texts = ["".join(prepared.sequence.tokens[p].text for p in seg).strip() for seg in segments]
    assert texts == ["Pay 3.5 dollars.", "Then pay 2."]
