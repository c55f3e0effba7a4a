"""End-to-end tracing on tiny models: invariants, targets, the one-forward-pass guarantee, the Trace."""

import json
import math

import pytest
import torch

import flashtrace
from flashtrace import Trace, TraceValidationError
from flashtrace.base.errors import InputError
from flashtrace.run.tracing import attribute, prepare, resolve_target, stop_mask

PROMPT = "Ann has 3 red balls. Ben has 4 blue balls. How many balls do they have together?"
RESPONSE = "Ann has 3 balls.\nBen has 4 balls.\n3 + 4 = 7.\nAnswer: 7 balls"


@pytest.fixture
def prepared(tiny_llama):
    return prepare(tiny_llama, PROMPT, RESPONSE)


@pytest.mark.parametrize("hops", [0, 1, 2, 3, 4])
def test_trace_invariants(prepared, hops):
    tr = attribute(prepared, hops=hops)
    n = tr.n_tokens
    contrib = torch.tensor([h.contribution for h in tr.hops]).sum(0)
    assert torch.allclose(torch.tensor(tr.scores.final), contrib, atol=1e-6)
    assert min(tr.scores.final) >= 0 and min(tr.scores.prompt) >= 0
    assert math.isclose(sum(tr.scores.prompt), 1.0, rel_tol=1e-6)
    assert len(tr.hops) == hops + 1 and all(len(h.raw) == n for h in tr.hops)  # this chain never runs dry
    generated = [i for i, t in enumerate(tr.tokens) if t.role in ("reasoning", "answer")]
    assert all(tr.scores.final[i] == 0 for i in generated)
    # ρ_k = ρ_{k-1} · (mass of a_k on generated tokens) / (all of a_k), recomputed from the stored vectors
    rho = 1.0
    for h in tr.hops:
        raw = torch.tensor(h.raw, dtype=torch.float64)
        assert h.contribution == pytest.approx((raw * (1 - _generated_mask(tr)) * rho).tolist(), abs=1e-7)
        rho *= float(raw[generated].sum() / raw.sum())
        assert h.rho == pytest.approx(rho, rel=1e-5) and 0 < h.rho < 1


def _generated_mask(tr) -> torch.Tensor:
    return torch.tensor([t.role in ("reasoning", "answer") for t in tr.tokens], dtype=torch.float64)


def test_changing_the_target_changes_the_result(prepared):
    a = attribute(prepared, target="answer", hops=1)
    b = attribute(prepared, target="reasoning", hops=1)
    seq = prepared.sequence
    assert a.settings.target == seq.token_range("answer") and b.settings.target == seq.token_range("reasoning")
    lo, hi = b.settings.target
    weights = torch.tensor(b.hops[0].weights)
    assert torch.all(weights[:lo] == 0) and torch.all(weights[hi:] == 0) and weights.sum() == pytest.approx(1)
    assert max(abs(x - y) for x, y in zip(a.scores.prompt, b.scores.prompt)) > 1e-3


def test_one_forward_pass_serves_many_attributions(tiny_llama):
    calls = []
    handle = tiny_llama.model.register_forward_hook(lambda *a: calls.append(1))
    try:
        prepared = prepare(tiny_llama, PROMPT, RESPONSE)
        attribute(prepared, hops=2)
        attribute(prepared, hops=0)
        attribute(prepared, hops=1, method="ifr", target="response")
    finally:
        handle.remove()
    assert len(calls) == 1


def test_targets_resolve(prepared):
    seq = prepared.sequence
    assert resolve_target(seq, "answer") == seq.token_range("answer")
    assert resolve_target(seq, "response") == (seq.response_start, len(seq))
    assert resolve_target(seq, f"{len(seq) - 2}:{len(seq)}") == (len(seq) - 2, len(seq))
    lo, hi = resolve_target(seq, target_chars=(0, 3))
    assert "".join(t.text for t in seq.tokens[lo:hi]).strip() == "Ann"
    for bad in ("0:5", f"{len(seq)}:{len(seq) + 3}", "5:2", "nonsense"):
        with pytest.raises(ValueError):
            resolve_target(seq, bad)


def test_ifr_and_flashtrace_agree_on_a_one_token_target(prepared):
    n = len(prepared.sequence)
    a = attribute(prepared, target=f"{n - 1}:{n}", hops=0)
    b = attribute(prepared, target=f"{n - 1}:{n}", hops=0, method="ifr")
    # IFR row-normalises each row; the shape of the attribution is the same
    assert torch.allclose(torch.tensor(a.scores.prompt), torch.tensor(b.scores.prompt), atol=1e-6)
    assert [h.rho for h in a.hops] == pytest.approx([h.rho for h in b.hops], abs=1e-6)


def test_stop_tokens_option(prepared):
    paper = attribute(prepared, hops=0, target="response", stop_tokens="paper")
    punct = attribute(prepared, hops=0, target="response", stop_tokens="punctuation")
    no_stops = attribute(prepared, hops=0, target="response", stop_tokens="none")
    prompt = [i for i, t in enumerate(paper.tokens) if t.role == "prompt"]
    period = [i for i in prompt if paper.tokens[i].text == "."]
    question = [i for i in prompt if paper.tokens[i].text == "?"]
    assert period and question
    assert all(paper.scores.final[i] == 0 and punct.scores.final[i] == 0 for i in period)
    assert all(paper.scores.final[i] > 0 for i in question)  # the authors' set keeps the question mark
    assert all(punct.scores.final[i] == 0 for i in question)
    assert any(no_stops.scores.final[i] > 0 for i in period)
    assert (paper.settings.stop_tokens, punct.settings.stop_tokens) == ("paper", "punctuation")
    mine = attribute(prepared, hops=0, target="response", stop_tokens=["?"])
    assert all(mine.scores.final[i] == 0 for i in question) and any(mine.scores.final[i] > 0 for i in period)


def test_template_tokens_are_zeroed_only_when_they_match_the_set(prepared):
    seq = prepared.sequence
    template = [i for i, t in enumerate(seq.tokens) if t.role == "template"]
    mask = stop_mask(seq, "paper")
    assert template and any(mask[i] for i in template) and not all(mask[i] for i in template)
    assert all(bool(mask[i]) == (seq.tokens[i].text.strip() in ("", ",", ".")) for i in template)
    zeroed = {seq.tokens[i].text for i in template if mask[i]}
    assert zeroed == {"\n", ","}  # SmolLM2's system line has a comma; "<|im_start|>", "system" etc. keep scores


@pytest.mark.parametrize("hops", [0, 2])
def test_hop0_generation_equals_attributing_the_whole_response(prepared, hops):
    gen = attribute(prepared, target="answer", hops=hops, hop0="generation")
    whole = attribute(prepared, target="response", hops=hops)
    answer = attribute(prepared, target="answer", hops=hops)
    assert gen.settings.hop0 == "generation" and gen.settings.target == answer.settings.target
    assert len(gen.hops) == len(whole.hops)
    for a, b in zip(gen.hops, whole.hops):
        assert a.weights == pytest.approx(b.weights, abs=1e-7) and a.raw == pytest.approx(b.raw, abs=1e-7)
        assert a.rho == pytest.approx(b.rho, abs=1e-7)
    assert gen.scores.final == pytest.approx(whole.scores.final, abs=1e-7)
    assert gen.scores.prompt != pytest.approx(answer.scores.prompt, abs=1e-4)  # the option changes the result


def test_settings_round_trip(prepared):
    tr = attribute(prepared, hops=1, stop_tokens=[",", "?"], hop0="generation", recursive="reasoning")
    again = Trace.from_json(tr.to_json())
    assert again.settings == tr.settings and again.settings.assumed == []
    assert (again.settings.stop_tokens, again.settings.hop0, again.settings.recursive) == ([",", "?"], "generation",
                                                                                           "reasoning")
    assert again.schema_version == 3 and again.settings.describe_assumed() == ""


@pytest.mark.parametrize("old_stops, expected, assumed", [("default", "punctuation", ["stop_tokens", "hop0"]),
                                                           (None, "punctuation", ["stop_tokens", "hop0"]),
                                                           ("none", "none", ["hop0"])])
def test_version_1_traces_load_and_say_which_defaults_they_used(prepared, old_stops, expected, assumed):
    data = json.loads(attribute(prepared, hops=1).to_json())
    data["schema_version"] = 1  # as written before the stop-token presets and the hop-0 option
    del data["settings"]["hop0"], data["settings"]["assumed"]
    if old_stops is None:
        del data["settings"]["stop_tokens"]
    else:
        data["settings"]["stop_tokens"] = old_stops
    old = Trace.from_json(json.dumps(data))
    assert (old.settings.stop_tokens, old.settings.hop0, old.settings.assumed) == (expected, "answer", assumed)
    assert (f"stop_tokens = {expected}" in old.settings.describe_assumed()) == ("stop_tokens" in assumed)
    assert "hop0 = answer" in old.settings.describe_assumed()
    assert Trace.from_json(old.to_json()).settings == old.settings  # re-saved, it still says so


def test_bad_stop_tokens_and_hop0_are_refused(prepared):
    with pytest.raises(ValueError, match="stop tokens"):
        attribute(prepared, stop_tokens="default")
    with pytest.raises(ValueError, match="hop0"):
        attribute(prepared, hop0="reasoning")


def test_a_target_of_only_stop_tokens_is_refused_before_any_work_with_the_preset_named(tiny_llama):
    """An answer of only punctuation has nothing left to explain under ``punctuation``: refused with the target, the
    preset and the ways out named, before the method runs; ``paper`` (which keeps "?" and "!") traces it."""
    prepared = prepare(tiny_llama, PROMPT, "Ann has 3 balls.\nAnswer: ?!")
    ticks = []
    with pytest.raises(InputError, match=r"only stop tokens under the stop preset 'punctuation'.*paper"):
        attribute(prepared, target="answer", stop_tokens="punctuation", progress=lambda *a: ticks.append(a))
    assert ticks == []
    assert attribute(prepared, target="answer", stop_tokens="paper").settings.stop_tokens == "paper"


def test_progress_is_reported(prepared):
    seen = []
    attribute(prepared, hops=1, progress=lambda done, total: seen.append((done, total)))
    assert seen[-1][0] == seen[-1][1] == 2 * len(prepared.recording.layers)


def test_json_round_trip_is_exact(prepared, tmp_path):
    tr = attribute(prepared, hops=2)
    again = Trace.from_json(tr.to_json())
    assert again == tr
    path = tr.save(tmp_path / "t.json")
    assert Trace.load(path) == tr


@pytest.mark.parametrize("mutate, needle", [
    (lambda d: d.pop("tokens"), "tokens"),
    (lambda d: d["settings"].__setitem__("hops", "two"), "settings.hops"),
    (lambda d: d.__setitem__("schema_version", 99), "schema_version"),
    (lambda d: d["scores"]["final"].pop(), "scores.final"),
    (lambda d: d["hops"][0].__setitem__("rho", 1.5), "rho"),
    (lambda d: d["settings"].__setitem__("target", [0, 10**6]), "settings.target"),
])
def test_malformed_traces_give_clear_errors(prepared, mutate, needle):
    data = json.loads(attribute(prepared, hops=1).to_json())
    mutate(data)
    with pytest.raises(TraceValidationError, match=needle.replace(".", r"\.")):
        Trace.from_json(json.dumps(data))


def test_nan_and_non_json_are_rejected(prepared):
    text = attribute(prepared, hops=0).to_json()
    with pytest.raises(TraceValidationError, match="NaN"):
        Trace.from_json(text.replace('"rho":', '"rho":NaN,"_x":', 1))
    with pytest.raises(TraceValidationError, match="JSON"):
        Trace.from_json("{not json")
    with pytest.raises(TraceValidationError, match="object"):
        Trace.from_json("[1, 2]")


def test_trace_api_in_one_call(tiny_llama):
    tr = flashtrace.trace(tiny_llama, PROMPT, RESPONSE, hops=1, target="response")
    assert tr.settings.hops == 1 and tr.model.family == "llama"
    two_steps = attribute(prepare(tiny_llama, PROMPT, RESPONSE), hops=1, target="response")
    assert tr.settings == two_steps.settings and tr.scores == two_steps.scores
    top = tr.top_prompt_tokens(3)
    prompt_scores = [tr.scores.prompt[i] for i in tr.positions("prompt")]
    assert [score for _, _, score in top] == sorted(prompt_scores, reverse=True)[:3]


def test_empty_response_without_generation_is_refused(tiny_llama):
    with pytest.raises(ValueError, match="response is empty"):
        prepare(tiny_llama, PROMPT, "  ")


def test_generation_then_trace(tiny_llama):
    prepared = prepare(tiny_llama, PROMPT, generate=True, max_new_tokens=8, reasoning_instruction=True)
    assert prepared.sequence.response and "generate_s" in prepared.timings
    assert "Answer:" in prepared.sequence.prompt  # the instruction asked for is part of the traced prompt...
    assert "Answer:" not in "".join(t.text for t in prepared.sequence.tokens if t.role == "prompt")  # ...as template
    seq = prepared.sequence
    assert 0 < len(seq) - seq.response_start <= 8
    tr = attribute(prepared, target="response", hops=1)
    assert tr.response == seq.response and tr.settings.target == (seq.response_start, len(seq))
    assert math.isclose(sum(tr.scores.prompt), 1.0, rel_tol=1e-6)
