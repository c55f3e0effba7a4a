"""The random-weight models that tests, demos and benchmarks trace: what `build_tiny_model` promises (sized for the
tokenizer, its special tokens, recorded attention, every bias and norm gain randomised a little and nothing else
touched, seeded) and the real-shaped ones built without memory on the meta device."""

import pytest
import torch
from transformers import AutoModelForCausalLM

from flashtrace.engine.models.aliases import TINY_ALIASES
from flashtrace.engine.models.loading import default_tokenizer
from flashtrace.engine.models.recording import ATTN_IMPLEMENTATION
from flashtrace.engine.models.tiny import TINY_CONFIGS, build_shaped_model, build_tiny_model, shaped_config


@pytest.fixture(scope="module")
def tokenizer():
    return default_tokenizer()


def _randomised(name):
    return name.endswith("bias") or "norm" in name or ".ln_" in name


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_a_tiny_model_is_sized_for_the_tokenizer_and_knows_its_special_tokens(tokenizer, family):
    model = build_tiny_model(family, tokenizer)
    config = model.config
    assert config.vocab_size == len(tokenizer) and model.get_input_embeddings().weight.shape[0] == len(tokenizer)
    assert (config.bos_token_id, config.eos_token_id) == (tokenizer.bos_token_id, tokenizer.eos_token_id)
    expected_pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    assert config.pad_token_id == expected_pad is not None
    assert config._attn_implementation == "sdpa"  # transformers' default: recording switches to its own and back
    assert {p.dtype for p in model.parameters()} == {torch.float32} and not model.training


def test_a_tokenizer_without_a_pad_token_pads_with_its_end_token(tokenizer):
    class NoPad:
        bos_token_id, eos_token_id, pad_token_id = tokenizer.bos_token_id, tokenizer.eos_token_id, None

        def __len__(self):
            return len(tokenizer)

    with_pad = type("WithPad", (NoPad,), {"pad_token_id": 7})
    assert build_tiny_model("llama", NoPad()).config.pad_token_id == tokenizer.eos_token_id
    assert build_tiny_model("llama", with_pad()).config.pad_token_id == 7


def test_only_biases_and_norm_gains_are_randomised_a_little(tokenizer):
    model = build_tiny_model("llama", tokenizer, seed=3)
    torch.manual_seed(3)
    plain = AutoModelForCausalLM.from_config(model.config, attn_implementation=ATTN_IMPLEMENTATION, dtype=torch.float32)
    changed = []
    for (name, p), (_, q) in zip(model.named_parameters(), plain.named_parameters()):
        if _randomised(name):
            changed.append(name)
            assert 0 < (p - q).abs().max() < 0.6, name  # 0.1 x a standard normal: visible, small
        else:
            assert torch.equal(p, q), name  # the family's own initialisation, untouched
    assert any(n.endswith("bias") for n in changed) and any("norm" in n for n in changed)
    gpt2 = dict(build_tiny_model("gpt2", tokenizer).named_parameters())
    assert not torch.equal(gpt2["transformer.h.0.ln_1.weight"], torch.ones(64))  # gpt2's norms are named ln_


def test_the_seed_picks_the_model_and_zero_is_the_default(tokenizer):
    first, other = (dict(build_tiny_model("qwen2", tokenizer, seed=s).named_parameters()) for s in (0, 1))
    again = dict(build_tiny_model("qwen2", tokenizer).named_parameters())
    assert all(torch.equal(p, again[n]) for n, p in first.items())
    assert not all(torch.equal(p, other[n]) for n, p in first.items())
    assert all(TINY_CONFIGS[f]["hidden_size" if f != "gpt2" else "n_embd"] == 64 for f in TINY_ALIASES.values())


def test_a_real_shaped_model_is_built_on_the_device_asked_for_in_its_dtype():
    model = build_shaped_model("random-smollm2-135m", torch.bfloat16, device="meta")
    params = list(model.parameters())
    assert {p.device.type for p in params} == {"meta"} and {p.dtype for p in params} == {torch.bfloat16}
    assert sum(p.numel() for p in params) == 134_515_008  # SmolLM2-135M's published parameter count
    assert model.config._attn_implementation == "sdpa" and not model.training
    config = shaped_config("random-qwen3-8b")
    assert (config.model_type, config.num_hidden_layers, config.hidden_size) == ("qwen3", 36, 4096)


def test_a_real_shaped_model_without_a_device_is_built_on_the_cpu_with_seed_zero():
    torch.manual_seed(5)
    model = build_shaped_model("random-smollm2-135m", torch.bfloat16)
    assert {p.device.type for p in model.parameters()} == {"cpu"}
    assert torch.initial_seed() == 0  # seeded with 0 before the weights were drawn


def test_an_attention_implementation_asked_for_is_the_one_built(tokenizer):
    """Tests build models with eager attention to compare against; the default is transformers' own (sdpa)."""
    assert build_tiny_model("llama", tokenizer, attn_implementation="eager").config._attn_implementation == "eager"
    shaped = build_shaped_model("random-smollm2-135m", torch.float32, device="meta", attn_implementation="eager")
    assert shaped.config._attn_implementation == "eager"
