"""`load_model(model, tokenizer=...)`: a model the user already loaded is traced as it is."""

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

import flashtrace
from flashtrace.engine.models import ModelLoadError, UnsupportedModelError, load_model
from flashtrace.engine.models.loading import default_tokenizer
from flashtrace.engine.models.aliases import TINY_ALIASES
from flashtrace.engine.models.tiny import build_tiny_model

PROMPT, RESPONSE = "Ann has 3 apples and buys 4 more. How many?", "3 + 4 = 7. Answer: 7"


def _user_model():
    tokenizer = default_tokenizer()
    return build_tiny_model(TINY_ALIASES["tiny-llama"], tokenizer, seed=0), tokenizer


def test_an_already_loaded_model_is_used_without_copying_its_weights():
    model, tokenizer = _user_model()
    pointers = [p.data_ptr() for p in model.parameters()]
    loaded = load_model(model, tokenizer=tokenizer)
    assert loaded.model is model and loaded.tokenizer is tokenizer
    assert loaded.spec.name == "llama"
    tr = flashtrace.trace(loaded, PROMPT, RESPONSE, hops=1)
    assert [p.data_ptr() for p in model.parameters()] == pointers
    reference = flashtrace.trace(load_model("tiny-llama"), PROMPT, RESPONSE, hops=1)
    assert torch.allclose(torch.tensor(tr.scores.final), torch.tensor(reference.scores.final), atol=1e-6)
    assert load_model(loaded) is loaded


def test_a_model_object_needs_its_tokenizer():
    model, _ = _user_model()
    with pytest.raises(ModelLoadError, match="tokenizer"):
        load_model(model)


def test_a_plain_torch_module_is_refused_with_a_message():
    with pytest.raises(ModelLoadError, match="not a transformers model"):
        load_model(torch.nn.Linear(2, 2), tokenizer=default_tokenizer())


def test_an_unsupported_family_is_refused_before_tracing():
    from transformers import BloomConfig, BloomForCausalLM

    model = BloomForCausalLM(BloomConfig(vocab_size=64, hidden_size=16, n_layer=1, n_head=2))
    with pytest.raises(UnsupportedModelError, match="bloom"):
        load_model(model, tokenizer=default_tokenizer())


def test_a_supported_gpt2_object_is_accepted():
    model = GPT2LMHeadModel(GPT2Config(vocab_size=49152, n_embd=32, n_layer=1, n_head=2, n_positions=256))
    assert load_model(model, tokenizer=default_tokenizer()).spec.name == "gpt2"


def _hooks(model) -> dict:
    return {name: (list(m._forward_hooks), list(m._forward_pre_hooks), list(m._backward_hooks))
            for name, m in model.named_modules()}


def _flags(model) -> dict:
    return {name: m.training for name, m in model.named_modules()}


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_a_model_object_is_left_as_found_after_every_use(attention):
    tokenizer = default_tokenizer()
    model = build_tiny_model(TINY_ALIASES["tiny-llama"], tokenizer, seed=0, attn_implementation=attention).train()
    model.model.layers[1].eval()  # a mixed state, as a user may leave it
    ids = torch.tensor([tokenizer(PROMPT)["input_ids"]])
    with torch.no_grad():
        before = model(ids).logits
    hooks, flags = _hooks(model), _flags(model)
    loaded = load_model(model, tokenizer=tokenizer)  # the load-time check records one forward pass
    prepared = flashtrace.prepare(loaded, PROMPT, RESPONSE)
    flashtrace.attribute(prepared, hops=1, steps=True)
    flashtrace.attribute(prepared, hops=0, method="perturbation")  # runs the model itself
    flashtrace.prepare(loaded, PROMPT, generate=True, max_new_tokens=4)
    assert model.config._attn_implementation == attention
    assert _flags(model) == flags and model.training
    assert _hooks(model) == hooks
    with torch.no_grad():
        after = model(ids).logits
    assert torch.equal(before, after)


def test_each_use_runs_in_eval_mode_with_flashtrace_attention_and_restores_on_error():
    from flashtrace.engine.models.borrow import in_use
    from flashtrace.engine.models.recording import ATTN_IMPLEMENTATION

    model, _ = _user_model()
    model.set_attn_implementation("eager")
    model.train()
    with pytest.raises(RuntimeError, match="inside"):
        with in_use(model, ATTN_IMPLEMENTATION):
            assert not any(m.training for m in model.modules())
            assert model.config._attn_implementation == ATTN_IMPLEMENTATION
            with in_use(model):  # nested: the inner use leaves the outer one's state alone
                pass
            assert not model.training and model.config._attn_implementation == ATTN_IMPLEMENTATION
            raise RuntimeError("failed inside")
    assert model.training and model.config._attn_implementation == "eager"


@pytest.mark.parametrize("name, attention", [("tiny-llama", "sdpa"), ("tiny-gemma2", "eager")])
def test_a_model_flashtrace_loads_itself_is_left_as_a_users_after_every_use(name, attention):
    """Issue 49 item 7: it kept ``ft_record`` after use; now it has transformers' default attention (eager for
    gemma2's soft-capping), like a user's model, before and after a trace, a generation and a method that runs it."""
    loaded = load_model(name)
    assert loaded.model.config._attn_implementation == attention
    prepared = flashtrace.prepare(loaded, PROMPT, RESPONSE)
    flashtrace.attribute(prepared, hops=1, steps=True)
    flashtrace.attribute(prepared, hops=0, method="perturbation")
    flashtrace.prepare(loaded, PROMPT, generate=True, max_new_tokens=4)
    assert loaded.model.config._attn_implementation == attention and not loaded.model.training
