"""Settings the gallery never uses, traced end to end on tiny random models and checked against numbers
computed here from scratch: a float64 span aggregate written out from METHOD.md §3 (tests/attribution/
reference.py: explicit attention, per-target contributions, L1 proximities) and the hop recursion of
METHOD.md §4 written out below. Nothing of the code under test computes the expected values.

Variants: recursive span = reasoning only; hop 0 over the whole generation; a response without reasoning;
hops that stop early (nothing left on the recursive span); half precision (bf16, fp16); token-wise IFR
with its target rows split into several memory groups.
"""

from __future__ import annotations

import unicodedata

import pytest
import torch

from flashtrace.engine.attribution import tokenwise
from flashtrace.engine.models import load_model, record_forward
from flashtrace.run.tracing import attribute, prepare
from tests.attribution.reference import reference_span_scores
from tests.conftest import _load
from tests.trace_checks import assert_traced

PROMPT = "Tom has 3 cats. Ann has 2 dogs. How many pets?"
WITH_STEPS = "<think>Tom has 3 cats. Ann has 2 dogs. 3 plus 2 is 5.</think>\nAnswer: 5"


def _stop(text: str, preset: str) -> bool:
    if preset == "none":
        return False
    if not text.strip():
        return True
    if preset == "paper":
        return text.strip() in {",", "."}
    return all(unicodedata.category(c).startswith("P") or c.isspace() for c in text)  # punctuation


def full_recording(prepared):
    """The prepared sequence recorded again, keeping the residual stream after attention (the reference
    needs it; the tracer does not record it)."""
    return record_forward(prepared.loaded, prepared.sequence.ids, keep_mid=True)


def reference_hops(trace, recording, hops: int, preset: str, recursive: str, hop0: str, span=None):
    """``[(raw, rho, contribution)]`` and ``final`` in float64, from METHOD.md §4 with `span` (default: the
    float64 FlashTrace span aggregate over `recording`, made with ``keep_mid=True``) as the aggregator."""
    span = span or (lambda w: reference_span_scores(recording, w))
    roles = [t.role for t in trace.tokens]
    keep = torch.tensor([0.0 if _stop(t.text, preset) else 1.0 for t in trace.tokens], dtype=torch.float64)
    g = torch.tensor([r in (("reasoning",) if recursive == "reasoning" else ("reasoning", "answer")) for r in roles])
    obs = torch.tensor([r in ("template", "prompt") for r in roles], dtype=torch.float64)
    lo, hi = trace.settings.target
    w = torch.zeros(len(roles), dtype=torch.float64)
    if hop0 == "generation":
        w[torch.tensor([r in ("reasoning", "answer") for r in roles])] = 1.0
    else:
        w[lo:hi] = 1.0
    w = w * keep
    out, final, rho_prev = [], torch.zeros_like(w), 1.0
    for k in range(hops + 1):
        raw = span(w / w.sum()) * keep
        rho = rho_prev * float(raw[g].sum() / raw.sum())
        out.append((raw, rho, raw * obs * rho_prev))
        final += raw * obs * rho_prev
        if k == hops or rho <= 0:
            break
        w, rho_prev = raw * g, rho
    return out, final


def assert_matches(trace, expected, final, rel=1e-4):
    assert len(trace.hops) == len(expected)
    for hop, (raw, rho, contribution) in zip(trace.hops, expected):
        scale = float(raw.max())
        assert hop.raw == pytest.approx(raw.tolist(), abs=rel * scale)
        assert hop.rho == pytest.approx(rho, abs=rel)
        assert hop.contribution == pytest.approx(contribution.tolist(), abs=rel * scale)
    assert trace.scores.final == pytest.approx(final.tolist(), abs=rel * float(final.max()))
    prompt = [i for i, t in enumerate(trace.tokens) if t.role == "prompt"]
    shares = final[prompt] / final[prompt].sum()
    assert [trace.scores.prompt[i] for i in prompt] == pytest.approx(shares.tolist(), abs=rel)


@pytest.fixture(scope="module")
def steps_llama():
    return prepare(_load("tiny-llama"), PROMPT, WITH_STEPS, chat_template=False)


@pytest.mark.parametrize("recursive, hop0, preset", [("reasoning", "answer", "none"),
                                                     ("reasoning+answer", "generation", "none"),
                                                     ("reasoning", "generation", "paper")])
def test_recursive_span_and_hop0_variants_match_the_reference(steps_llama, recursive, hop0, preset):
    trace = attribute(steps_llama, hops=2, recursive=recursive, hop0=hop0, stop_tokens=preset)
    assert_traced(trace)
    expected, final = reference_hops(trace, full_recording(steps_llama), 2, preset, recursive, hop0)
    assert len(expected) == 3  # all hops ran
    assert_matches(trace, expected, final)


def test_recursive_reasoning_follows_less_than_reasoning_and_answer(steps_llama):
    """With the answer left out of the recursive span, ρ_0 is only the reasoning's share of hop 0."""
    narrow, wide = (attribute(steps_llama, hops=1, recursive=r, stop_tokens="none") for r in ("reasoning",
                                                                                                "reasoning+answer"))
    raw = torch.tensor(wide.hops[0].raw, dtype=torch.float64)
    roles = [t.role for t in wide.tokens]
    on = {role: float(sum(raw[i] for i, r in enumerate(roles) if r == role) / raw.sum()) for role in ("reasoning", "answer")}
    assert narrow.hops[0].rho == pytest.approx(on["reasoning"], abs=1e-5)
    assert wide.hops[0].rho == pytest.approx(on["reasoning"] + on["answer"], abs=1e-5)
    assert on["answer"] > 0 and narrow.hops[0].rho < wide.hops[0].rho


@pytest.mark.parametrize("family", ["tiny-llama", "tiny-gemma2"])
def test_a_response_without_reasoning_matches_the_reference(family):
    prepared = prepare(_load(family), PROMPT, "5", chat_template=False)
    trace = attribute(prepared, hops=2, stop_tokens="none")
    assert_traced(trace)
    assert trace.spans.reasoning is None and {t.role for t in trace.tokens} == {"prompt", "answer"}
    expected, final = reference_hops(trace, full_recording(prepared), 2, "none", "reasoning+answer", "answer")
    assert len(expected) == 3  # the answer itself is the recursive span: the hops go on
    assert_matches(trace, expected, final)


@pytest.mark.parametrize("response, recursive, preset", [
    ("5", "reasoning", "none"),  # no reasoning to follow: ρ_0 = 0
    (". , .\n5", "reasoning", "punctuation"),  # reasoning made only of stop tokens: nothing on it
])
def test_hops_stop_early_when_nothing_is_left_to_follow(response, recursive, preset):
    prepared = prepare(_load("tiny-llama"), PROMPT, response, chat_template=False)
    trace = attribute(prepared, hops=3, recursive=recursive, stop_tokens=preset)
    assert_traced(trace)
    assert len(trace.hops) == 1 and trace.hops[0].rho == 0 and trace.settings.hops == 3
    expected, final = reference_hops(trace, full_recording(prepared), 3, preset, recursive, "answer")
    assert_matches(trace, expected, final)
    raw = torch.tensor(trace.hops[0].raw, dtype=torch.float64)
    obs = [t.role in ("template", "prompt") for t in trace.tokens]
    assert trace.scores.final == pytest.approx([float(r) if o else 0.0 for r, o in zip(raw, obs)], abs=1e-7)


@pytest.mark.parametrize("dtype, rel", [(torch.bfloat16, 0.05), (torch.float16, 0.01)])
def test_half_precision_traces_match_the_float64_reference(dtype, rel):
    """A model loaded in half precision traces without error and agrees with the float64 reference on its
    own half-precision forward pass (the residual streams it recorded) to the precision of its dtype."""
    loaded = load_model("tiny-llama", dtype=dtype)
    assert next(loaded.model.parameters()).dtype == dtype
    prepared = prepare(loaded, PROMPT, WITH_STEPS, chat_template=False)
    trace = attribute(prepared, hops=2, stop_tokens="paper")  # the preset the reference is told
    assert_traced(trace)
    expected, final = reference_hops(trace, full_recording(prepared), 2, "paper", "reasoning+answer", "answer")
    assert_matches(trace, expected, final, rel=rel)
    full = attribute(prepare(_load("tiny-llama"), PROMPT, WITH_STEPS, chat_template=False), hops=2,
                     stop_tokens="paper")
    prompt = trace.positions("prompt")
    best = max(prompt, key=lambda i: full.scores.prompt[i])
    assert trace.scores.prompt[best] >= sorted(trace.scores.prompt)[-3]  # float32's top token stays near the top


def test_tokenwise_ifr_split_into_memory_groups_matches_the_reference(monkeypatch, steps_llama):
    """Token-wise IFR with a memory budget of ~3 target rows: the rows run in several groups and the
    trace equals the reference (each row the float64 one-token span aggregate, normalised, then weighted)."""
    rec = full_recording(steps_llama)
    layer = steps_llama.recording.layers[0]
    per_row = 4 * rec.n_tokens * (layer.n_heads * 3 + layer.x_prev.shape[1])
    groups = []
    real = tokenwise.span_aggregate

    def counted(recording, weights, **kwargs):
        groups.append(weights.shape[0])
        return real(recording, weights, **kwargs)

    monkeypatch.setattr(tokenwise, "span_aggregate", counted)
    small = tokenwise.tokenwise_aggregate  # the registered method, given a budget of ~3 rows (passed on to the rows)
    monkeypatch.setattr(tokenwise, "tokenwise_aggregate", lambda rec, w, **kw: small(rec, w, **kw, budget_bytes=3 * per_row))
    trace = attribute(steps_llama, hops=1, method="ifr", stop_tokens="none")
    n_targets = [sum(1 for w in hop.weights if w > 0) for hop in trace.hops]
    assert max(groups) == 3 and len(groups) == sum(-(-m // 3) for m in n_targets) > len(trace.hops)

    def tokenwise_reference(w):
        out = torch.zeros_like(w)
        for i in torch.nonzero(w).flatten().tolist():
            row = reference_span_scores(rec, torch.nn.functional.one_hot(torch.tensor(i), w.numel()).double())
            out += w[i] * row / row.sum()
        return out

    expected, final = reference_hops(trace, rec, 1, "none", "reasoning+answer", "answer", span=tokenwise_reference)
    assert_matches(trace, expected, final)
