"""Model families: the spec found for each model type, the refusal of any other in full words, models without a
config, and the per-head output projections and gains the decomposition reads."""

import importlib

import pytest
import torch
from torch import nn

from flashtrace.engine.models.families import (SPECS, UnsupportedModelError, spec_for, spec_for_model_type,
                                               supported_families)

FAMILIES = ["gemma2", "gemma3", "gpt2", "llama", "mistral", "phi3", "qwen2", "qwen3"]


def test_supported_families_are_named_once_each_in_order():
    assert supported_families() == FAMILIES
    assert spec_for_model_type("gemma3_text") is spec_for_model_type("gemma3")


def test_importing_the_module_registers_each_family_under_each_of_its_model_types():
    """The table is built while the module is imported: run that again (then put the module back as it was, so no
    other test sees new objects) and every model type maps to the spec of its family."""
    module = importlib.import_module("flashtrace.engine.models.families")
    saved = dict(module.__dict__)
    try:
        fresh = importlib.reload(module)
        table = {model_type: (spec.name, spec.model_types) for model_type, spec in fresh.SPECS.items()}
    finally:
        module.__dict__.clear()
        module.__dict__.update(saved)
    gemma3 = ("gemma3", ("gemma3", "gemma3_text"))
    assert table == {**{name: (name, (name,)) for name in FAMILIES if name != "gemma3"},
                     "gemma3": gemma3, "gemma3_text": gemma3}
    assert module.SPECS is SPECS


def test_an_unknown_family_is_refused_naming_every_supported_one():
    with pytest.raises(UnsupportedModelError) as raised:
        spec_for_model_type("bloom")
    assert str(raised.value) == ("model family 'bloom' is not supported (its attention decomposition is unverified); "
                                 "supported families: " + ", ".join(FAMILIES))
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_a_model_without_a_config_is_named_by_its_class():
    with pytest.raises(UnsupportedModelError, match="model family 'Linear' is not supported"):
        spec_for(nn.Linear(2, 2))
    blank = nn.Linear(2, 2)
    blank.config = type("Config", (), {"model_type": None})()
    with pytest.raises(UnsupportedModelError, match="'Linear'"):
        spec_for(blank)


def test_the_decoder_layers_are_found_at_each_familys_path(tiny):
    layers = tiny.spec.decoder_layers(tiny.model)
    assert isinstance(layers, nn.ModuleList) and len(layers) == tiny.model.config.num_hidden_layers == 2
    assert tiny.spec is spec_for(tiny.model) is SPECS[tiny.model.config.model_type]


def test_per_head_projections_split_the_output_projection_by_head():
    linear = nn.Linear(6, 4, bias=False)  # in: H*d = 6 (3 heads of 2), out: D = 4
    heads = SPECS["llama"].heads_of(linear, 3)
    x = torch.randn(6)
    assert heads.shape == (3, 2, 4)
    assert torch.allclose(sum(x[2 * h:2 * h + 2] @ heads[h] for h in range(3)), linear(x), atol=1e-6)
    conv = type("Conv1D", (nn.Module,), {})()
    conv.weight = nn.Parameter(torch.randn(6, 4))  # GPT-2: x @ W
    heads = SPECS["gpt2"].heads_of(conv, 3)
    assert heads.shape == (3, 2, 4) and torch.allclose(sum(x[2 * h:2 * h + 2] @ heads[h] for h in range(3)),
                                                       x @ conv.weight, atol=1e-6)


def test_gemmas_norm_gain_is_one_plus_its_weight_and_the_others_their_weight():
    norm = nn.LayerNorm(3)
    with torch.no_grad():
        norm.weight.copy_(torch.tensor([0.5, -1.0, 2.0]))
    assert SPECS["gemma2"].post_norm_gain(norm).tolist() == [1.5, 0.0, 3.0]
    assert SPECS["llama"].post_norm_gain(norm).tolist() == [0.5, -1.0, 2.0]
