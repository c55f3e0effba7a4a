"""Hugging Face conventions: load_model's dtype/revision/pass-through keywords, chat-messages prompts,
sampling settings recorded in the Trace, and lists of prompts (all on tiny random models, offline)."""

import pytest
import torch
import transformers

import flashtrace
from flashtrace.engine.models import ModelLoadError, load_model
from flashtrace.engine.models.aliases import TINY_ALIASES
from flashtrace.engine.models.loading import default_tokenizer
from flashtrace.engine.models.tiny import build_tiny_model
from tests.conftest import record_calls, save_tiny_llama

PROMPT, RESPONSE = "Ann has 3 apples and buys 4 more. How many?", "3 + 4 = 7. Answer: 7"


@pytest.fixture(scope="module")
def bf16_folder(tmp_path_factory):
    """A tiny llama saved in bfloat16 with its tokenizer: a model folder as from_pretrained reads it."""
    folder = tmp_path_factory.mktemp("tiny-bf16")
    save_tiny_llama(folder, torch.bfloat16)
    return folder


def test_dtype_auto_takes_the_checkpoints_dtype_and_names_are_accepted(bf16_folder):
    assert load_model(str(bf16_folder), dtype="auto", verify=False).dtype == torch.bfloat16
    assert load_model(str(bf16_folder), verify=False).dtype == torch.float32  # the default stays float32
    assert load_model(str(bf16_folder), dtype="torch.float16", verify=False).dtype == torch.float16
    assert load_model(str(bf16_folder), torch_dtype=torch.float32, verify=False).dtype == torch.float32
    assert load_model("tiny-llama", dtype="auto", verify=False).dtype == torch.float32
    with pytest.raises(ModelLoadError, match="unknown dtype"):
        load_model("tiny-llama", dtype="int8")
    with pytest.raises(ModelLoadError) as refused:
        load_model("tiny-llama", dtype="bf16", torch_dtype=torch.float16)
    assert str(refused.value) == "pass dtype= or torch_dtype= (its former name), not both"
    assert load_model("tiny-llama", torch_dtype=torch.bfloat16, verify=False).dtype == torch.bfloat16


@pytest.mark.parametrize("name, dtype", [("bf16", torch.bfloat16), ("fp16", torch.float16), ("fp32", torch.float32),
                                         ("half", torch.float16), ("torch.float64", torch.float64),
                                         ("double", torch.float64)])
def test_short_names_and_torchs_own_dtype_names_are_accepted(name, dtype):
    """The short names (bf16, fp16, fp32) and any name torch gives a floating dtype ('half', 'float64')."""
    assert load_model("tiny-llama", dtype=name, verify=False).dtype == dtype


@pytest.mark.parametrize("name", ["int8", "float8", "bfloat 16", "bool", ""])
def test_a_dtype_that_is_not_a_floating_torch_dtype_is_refused_with_the_names_to_use(name):
    with pytest.raises(ModelLoadError) as refused:
        load_model("tiny-llama", dtype=name)
    assert str(refused.value) == (f"unknown dtype {name!r}; use 'auto', a torch floating dtype, or one of float32, "
                                  "fp32, bfloat16, bf16, float16, fp16")


@pytest.mark.parametrize("name", ["float8_e4m3fn", "torch.float8_e5m2"])
def test_a_float8_storage_dtype_is_refused_before_loading(name):
    """Issue 48 L7 repro: float8 dtypes were accepted, then failed raw (exit 1) in the first forward pass."""
    with pytest.raises(ModelLoadError) as refused:
        load_model("tiny-llama", dtype=name)
    assert str(refused.value) == (f"dtype {name!r} is a storage format a model cannot run in; use 'auto', float32, "
                                  "bfloat16, float16 or float64")


def test_revision_and_other_keywords_go_to_from_pretrained(bf16_folder, monkeypatch):
    seen = record_calls(monkeypatch, transformers.AutoModelForCausalLM, "from_pretrained")
    loaded = load_model(str(bf16_folder), revision="main", attn_implementation="eager", trust_remote_code=False)
    assert seen[-1]["revision"] == "main" and seen[-1]["trust_remote_code"] is False
    assert loaded.model.config._attn_implementation == "eager"  # passed through, and left so after tracing
    tr = flashtrace.trace(loaded, PROMPT, RESPONSE, hops=1)
    assert loaded.model.config._attn_implementation == "eager" and abs(sum(tr.scores.prompt) - 1) < 1e-4


def test_a_model_object_refuses_a_conflicting_dtype_device_or_loading_keyword():
    tokenizer = default_tokenizer()
    model = build_tiny_model(TINY_ALIASES["tiny-llama"], tokenizer, seed=0)
    assert load_model(model, tokenizer=tokenizer, dtype="float32").model is model  # the same dtype is fine
    assert load_model(model, tokenizer=tokenizer, dtype="auto").model is model
    with pytest.raises(ModelLoadError, match="is float32, not bfloat16.*does not convert"):
        load_model(model, tokenizer=tokenizer, dtype=torch.bfloat16)
    with pytest.raises(ModelLoadError, match="revision apply when loading by name"):
        load_model(model, tokenizer=tokenizer, revision="main")
    with pytest.raises(ModelLoadError, match="low_cpu_mem_usage"):
        load_model(model, tokenizer=tokenizer, low_cpu_mem_usage=True)
    with pytest.raises(ModelLoadError, match="on cpu, not meta"):
        load_model(model, tokenizer=tokenizer, device="meta")


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny-llama")


def test_a_chat_messages_prompt_is_rendered_with_the_chat_template(tiny):
    messages = [{"role": "system", "content": "You count apples."}, {"role": "user", "content": PROMPT}]
    tr = flashtrace.trace(tiny, messages, RESPONSE, hops=1)
    assert tr.prompt == "You count apples.\n\n" + PROMPT and tr.extra["messages"] == messages
    rendered = tiny.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    prompt_ids = [t.id for t in tr.tokens[:tr.spans.reasoning[0] if tr.spans.reasoning else tr.spans.answer[0]]]
    assert prompt_ids == tiny.tokenizer(rendered, add_special_tokens=False)["input_ids"]
    prompt_tokens = [t for t in tr.tokens if t.role == "prompt"]
    assert "".join(tr.prompt[t.start:t.end] for t in prompt_tokens).replace(" ", "") == \
        tr.prompt.replace("\n\n", "").replace(" ", "")  # both messages' words, each token mapped into tr.prompt
    assert abs(sum(tr.scores.prompt) - 1) < 1e-4
    with pytest.raises(ValueError, match="last message must be the user"):
        flashtrace.trace(tiny, [*messages, {"role": "assistant", "content": "7"}], RESPONSE)
    with pytest.raises(ValueError, match="needs the model's chat template"):
        flashtrace.trace(tiny, messages, RESPONSE, chat_template=False)


def test_sampling_settings_are_used_and_recorded(tiny):
    kwargs = dict(generate=True, max_new_tokens=6, do_sample=True, temperature=1.5, top_p=0.9, hops=0)
    first = flashtrace.trace(tiny, PROMPT, seed=3, **kwargs)
    again = flashtrace.trace(tiny, PROMPT, seed=3, **kwargs)
    others = {flashtrace.trace(tiny, PROMPT, seed=s, **kwargs).response for s in range(4, 8)}
    greedy = flashtrace.trace(tiny, PROMPT, generate=True, max_new_tokens=6, hops=0)
    assert first.response == again.response  # the seed makes a sampled response repeatable
    assert len(others | {first.response}) > 1  # and other seeds sample other responses
    assert first.extra["generation"] == {"max_new_tokens": 6, "do_sample": True, "temperature": 1.5, "top_p": 0.9,
                                         "seed": 3, "new_tokens": 6, "stopped": "max_new_tokens"}
    assert greedy.extra["generation"]["do_sample"] is False
    assert "generation" not in flashtrace.trace(tiny, PROMPT, RESPONSE, hops=0).extra
    with pytest.raises(ValueError, match="only with generate=True"):
        flashtrace.trace(tiny, PROMPT, RESPONSE, do_sample=True)
    greedy_warm = flashtrace.trace(tiny, PROMPT, generate=True, max_new_tokens=6, hops=0, temperature=0.7)
    assert greedy_warm.response == greedy.response  # as transformers: temperature without sampling is unused,
    assert greedy_warm.extra["generation"]["temperature"] == 0.7  # its warning is transformers' own, and recorded


def test_any_generate_setting_is_accepted_checked_by_transformers_and_recorded(tiny):
    """Issue 49 item 3: ``top_k``, ``repetition_penalty``, ``num_beams`` and ``generation_config`` gave
    ``TypeError: attribute() got an unexpected keyword argument 'top_k'``."""
    from transformers import GenerationConfig

    sampled = flashtrace.trace(tiny, PROMPT, generate=True, max_new_tokens=5, hops=0, do_sample=True, seed=2,
                               top_k=5, repetition_penalty=1.2)
    assert sampled.extra["generation"]["top_k"] == 5 and sampled.extra["generation"]["repetition_penalty"] == 1.2
    beams = flashtrace.trace(tiny, PROMPT, generate=True, max_new_tokens=5, hops=0,
                             generation_config=GenerationConfig(num_beams=1, no_repeat_ngram_size=2))
    assert beams.extra["generation"]["num_beams"] == 1 and beams.extra["generation"]["no_repeat_ngram_size"] == 2
    tokens = beams.response.split()
    assert all(pair not in list(zip(tokens, tokens[1:]))[i + 1:] for i, pair in enumerate(zip(tokens, tokens[1:])))
    as_dict = flashtrace.trace(tiny, PROMPT, generate=True, max_new_tokens=5, hops=0,
                               generation_config={"no_repeat_ngram_size": 2})
    assert as_dict.response == beams.response
    with pytest.raises(TypeError, match="'bogus'.*neither an option of flashtrace's trace/prepare nor a setting"):
        flashtrace.trace(tiny, PROMPT, generate=True, bogus=1)
    with pytest.raises(ValueError, match="num_return_sequences .a trace explains one response"):
        flashtrace.trace(tiny, PROMPT, generate=True, num_return_sequences=2)
    with pytest.raises(ValueError, match="apply only with generate=True"):
        flashtrace.trace(tiny, PROMPT, RESPONSE, top_k=5)


def test_a_list_of_prompts_gives_a_list_of_traces(tiny):
    messages = [{"role": "user", "content": "Ben has 2 pears. How many?"}]
    traces = flashtrace.trace(tiny, [PROMPT, messages], [RESPONSE, "Answer: 2"], hops=1)
    assert [tr.prompt for tr in traces] == [PROMPT, messages[0]["content"]]
    single = flashtrace.trace(tiny, PROMPT, RESPONSE, hops=1)
    assert traces[0].scores.final == pytest.approx(single.scores.final, abs=1e-6)
    prepared = [flashtrace.prepare(tiny, PROMPT, RESPONSE), flashtrace.prepare(tiny, PROMPT, "Answer: 7")]
    attributed = flashtrace.attribute(prepared, hops=0)
    assert len(attributed) == 2 and attributed[1].response == "Answer: 7"
    with pytest.raises(ValueError, match="2 prompts need a list of 2 responses"):
        flashtrace.trace(tiny, [PROMPT, PROMPT], [RESPONSE])
