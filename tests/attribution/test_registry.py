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


def test_a_new_method_registers_with_what_it_declares_and_gets_its_checked_options(monkeypatch):
    """The extension point: `register` files a builder under its name with its description, progress unit,
    options and capabilities (defaults: per layer, no options, hops and steps, unsigned scores); its aggregator is
    built with the source, the progress callback and every option parsed, defaults filled in."""
    from flashtrace.engine.attribution.registry import Method, Option, register

    built = []

    def build(source, tick, **options):
        built.append((source, tick, options))
        return lambda w: w

    scale, shift = Option("scale", float, 2.0, "a factor", low=0.0), Option("shift", int, 0, "an offset")
    for name in ("test-custom", "test-plain"):
        monkeypatch.delitem(METHODS, name, raising=False)
    custom = register("test-custom", "a custom method", "row", (scale, shift), hops=False, steps=False, signed=True)
    assert custom(build) is build
    assert register("test-plain", "a plain method")(build) is build
    try:
        assert METHODS["test-custom"] == Method("test-custom", "a custom method", build, "row", (scale, shift), False,
                                                False, True)
        assert METHODS["test-plain"] == Method("test-plain", "a plain method", build, "layer", (), True, True, False)
        tick = [].append
        get_method("test-custom").aggregator("the source", tick, scale="3")
        get_method("test-custom").aggregator("the source")
        assert built == [("the source", tick, {"scale": 3.0, "shift": 0}),
                         ("the source", None, {"scale": 2.0, "shift": 0})]
        with pytest.raises(ValueError) as refused:
            get_method("test-custom").resolve_options({"size": 1})
        assert str(refused.value) == "method test-custom has no option size (its options: scale, shift)"
        with pytest.raises(ValueError, match=r"^progress_unit must be one of \('layer', 'row', 'run'\)$"):
            register("test-bad", "a bad unit", "token")
        assert "test-bad" not in METHODS
    finally:
        METHODS.pop("test-custom", None)
        METHODS.pop("test-plain", None)


def test_options_parse_to_their_kind_within_their_bounds_with_messages_naming_both():
    from flashtrace.engine.attribution.registry import THRESHOLD, Option

    steps = Option("steps", int, 16, "integration steps", low=1, high=512)
    assert [steps.parse(v, "ig") for v in (None, 1, "7", 2.0, 512)] == [16, 1, 7, 2, 512]
    for bad, words in ((True, "must be int, got True"), (2.5, "must be int, got 2.5"), ("x", "must be int, got 'x'"),
                       (0, "must satisfy 1 <= steps <= 512, got 0"), (513, "must satisfy 1 <= steps <= 512, got 513")):
        with pytest.raises(ValueError) as refused:
            steps.parse(bad, "ig")
        assert str(refused.value) == f"method ig: option steps {words}"
    assert THRESHOLD.parse(0.0, "flashtrace") == 0.0 and THRESHOLD.parse(0.999, "flashtrace") == 0.999
    for bad in (1.0, float("nan")):
        with pytest.raises(ValueError) as refused:
            THRESHOLD.parse(bad, "flashtrace")
        assert str(refused.value) == ("method flashtrace: option threshold must satisfy 0.0 <= threshold < 1.0, "
                                      f"got {bad!r}")
    with pytest.raises(ValueError) as refused:
        Option("scale", float, 1.0, "a factor", low=0.5).parse(0.25, "m")
    assert str(refused.value) == "method m: option scale must satisfy scale >= 0.5, got 0.25"


def test_unknown_names_are_refused_with_what_there_is():
    with pytest.raises(ValueError) as refused:
        get_method("nope")
    assert str(refused.value) == (f"unknown method 'nope'; available: {', '.join(sorted(METHODS))} (captum's and "
                                  "inseq's names for them work too, such as integrated_gradients)")
    with pytest.raises(ValueError) as refused:
        get_method("rollout").resolve_options({"b": 1, "a": 2})
    assert str(refused.value) == "method rollout has no option a, b (its options: residual)"
    with pytest.raises(ValueError) as refused:
        get_method("ifr").resolve_options({"threshold": 0.1})
    assert str(refused.value) == "method ifr has no option threshold (its options: none)"
    with pytest.raises(ValueError) as refused:
        get_method("ig").resolve_options({"steps": 0})
    assert str(refused.value) == "method ig: option steps must satisfy 1 <= steps <= 512, got 0"


def test_progress_units_count_layers_target_rows_or_weight_vectors():
    weights = torch.tensor([[0.0, 1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.5, 0.0]])  # 2 vectors over 3 target rows
    assert get_method("flashtrace").units(weights, n_layers=30) == 30
    assert get_method("ifr").units(weights, n_layers=30) == 3
    assert get_method("attention").units(weights, n_layers=30) == 2


def test_per_vector_methods_tick_once_per_vector_and_layer_methods_run_without_a_callback(prepared):
    source = method_source(prepared)
    weights = torch.zeros(3, prepared.recording.n_tokens)
    weights[:, -3:] = 1.0
    ticks = []
    get_method("attention").aggregator(source, ticks.append)(weights)
    assert ticks == [1, 1, 1]
    assert get_method("flashtrace").aggregator(method_source(prepared))(weights).shape == weights.shape


def test_model_running_methods_need_the_model_and_a_replacement_id_and_explain_the_target_span(prepared,
                                                                                               monkeypatch):
    from flashtrace.engine.attribution import baselines
    from flashtrace.engine.attribution.registry import Source

    source = method_source(prepared)
    for missing in ({"model": None}, {"replace_id": None}):
        bare = Source(**{**vars(source), **missing})
        for name in ("ig", "perturbation"):
            with pytest.raises(ValueError) as refused:
                get_method(name).aggregator(bare)
            assert str(refused.value) == (f"method {name} runs the model: its source needs the model and a "
                                          "replacement token id")
    asked = []
    monkeypatch.setattr(baselines, "segment_ablation", lambda model, ids, segments, target, *a: asked.append(target)
                        or torch.zeros(len(ids)))
    weights = torch.zeros(1, prepared.recording.n_tokens)
    weights[0, [5, 6, 9]] = 1.0  # a target with a gap: its span runs from the first to the last token
    get_method("perturbation").aggregator(source)(weights)
    assert asked == [(5, 10)]


def test_captum_and_inseq_names_run_as_our_methods_and_are_stored_under_ours(prepared, capsys):
    from flashtrace.cli import main

    trace = attribute(prepared, method="integrated_gradients", hops=0, options={"steps": 2})
    assert trace.settings.method == "ig"
    for alias, ours in (("IntegratedGradients", "ig"), ("feature_ablation", "perturbation"),
                        ("attention_rollout", "rollout"), ("IFR_ROWWISE", "ifr-rowwise"), ("attention", "attention")):
        assert get_method(alias).name == ours
    with pytest.raises(ValueError, match="unknown method 'saliency'.*captum's and inseq's names for them work too"):
        get_method("saliency")
    with pytest.raises(SystemExit):
        main(["trace", "--model", "tiny-llama", "--prompt", "x", "--response", "y", "--method", "saliency"])
    assert "invalid choice: 'saliency'" in capsys.readouterr().err
