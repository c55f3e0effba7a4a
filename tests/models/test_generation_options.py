"""What a user sets for generation, and what the tool tells them back: the sampling options and their refusals,
what a trace records of them, the context the model reads, the reasoning instruction on chat prompts, the
refusals before generating, and the text handed over while streaming."""

from types import SimpleNamespace

import pytest
import torch

from flashtrace.engine.inputs import REASONING_INSTRUCTION, build_sequence
from flashtrace.engine.inputs.sequence import INSTRUCTION_SEPARATOR
from flashtrace.engine.models import generation, load_model
from flashtrace.engine.models.generation import (Sampling, TextStream, context_length, generate, generation_ids,
                                                 has_thinking_mode, prompt_for_generation)

INSTRUCTED = f"{INSTRUCTION_SEPARATOR}{REASONING_INSTRUCTION}"


@pytest.fixture(scope="module")
def llama():
    return load_model("tiny-llama")


def _loaded(tokenizer, context, name="stub-model"):
    """A loaded model as generation_ids reads it: a tokenizer, a config that says (or not) how far it reads."""
    return SimpleNamespace(tokenizer=tokenizer, name=name,
                           model=SimpleNamespace(config=SimpleNamespace(max_position_embeddings=context)))


# --- sampling options -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("options", [{"temperature": 0.7}, {"top_p": 0.9}, {"temperature": 0.7, "top_p": 0.9}])
def test_sampling_settings_without_sampling_are_passed_on_as_transformers_takes_them(options):
    """As ``model.generate`` does: a sampling setting without ``do_sample=True`` is unused and transformers says
    so itself (a warning); it used to be a hard error here (issue 49 item 3)."""
    chosen = Sampling(**options)
    assert chosen.generate_kwargs() == {"do_sample": False, **options}
    assert {k: chosen.record(8)[k] for k in options} == options


@pytest.mark.parametrize("options, message", [
    ({"temperature": 0.0}, "temperature must be > 0, got 0.0"),
    ({"temperature": -1.0}, "temperature must be > 0, got -1.0"),
    ({"top_p": 0.0}, r"top_p must be in \(0, 1\], got 0.0"),
    ({"top_p": 1.5}, r"top_p must be in \(0, 1\], got 1.5"),
])
def test_out_of_range_sampling_values_are_refused_with_the_value(options, message):
    with pytest.raises(ValueError, match=message):
        Sampling(do_sample=True, **options)


@pytest.mark.parametrize("options", [{"temperature": 0.5}, {"temperature": 1.0}, {"temperature": 2.0},
                                     {"top_p": 1.0}, {"top_p": 0.5}, {"top_p": 1e-6}])
def test_every_valid_sampling_value_is_accepted(options):
    assert Sampling(do_sample=True, **options).do_sample


def test_transformers_gets_only_the_options_that_were_set():
    assert Sampling().generate_kwargs() == {"do_sample": False}
    assert Sampling(do_sample=True).generate_kwargs() == {"do_sample": True}
    assert Sampling(do_sample=True, temperature=0.7).generate_kwargs() == {"do_sample": True, "temperature": 0.7}
    assert Sampling(do_sample=True, top_p=0.9, seed=3).generate_kwargs() == {"do_sample": True, "top_p": 0.9}


def test_a_trace_records_every_generation_setting_by_name():
    assert Sampling(do_sample=True, temperature=0.7, top_p=0.9, seed=3).record(64) == {
        "max_new_tokens": 64, "do_sample": True, "temperature": 0.7, "top_p": 0.9, "seed": 3}
    assert Sampling().record(8) == {"max_new_tokens": 8, "do_sample": False, "temperature": None, "top_p": None,
                                    "seed": None}


# --- the context the model reads --------------------------------------------------------------------------------

def test_context_length_reads_the_models_config_whatever_it_calls_it():
    def length(config):
        return context_length(SimpleNamespace(model=SimpleNamespace(config=config)))

    assert length(SimpleNamespace(max_position_embeddings=2048)) == 2048
    assert length(SimpleNamespace(n_positions=1024)) == 1024  # GPT-2's name for it
    assert length(SimpleNamespace()) is None  # the config does not say

    class Multimodal:  # a composite config: the text model's config says how far it reads
        def get_text_config(self):
            return SimpleNamespace(n_positions=512)

    assert length(Multimodal()) == 512


# --- thinking mode and the reasoning instruction ----------------------------------------------------------------

def test_only_a_template_that_mentions_think_has_a_thinking_mode():
    assert has_thinking_mode(SimpleNamespace(chat_template="{{ '<think>' }}{{ content }}"))
    assert not has_thinking_mode(SimpleNamespace(chat_template="{{ '<THINK>' }} plain"))
    assert not has_thinking_mode(SimpleNamespace(chat_template="plain"))
    assert not has_thinking_mode(SimpleNamespace(chat_template=None))
    assert not has_thinking_mode(SimpleNamespace())  # a tokenizer without a chat template


def test_the_instruction_follows_the_prompt_text_with_its_trailing_space_dropped():
    plain = SimpleNamespace(chat_template="plain")
    assert prompt_for_generation(plain, "  How many pets?\n\n", True) == "  How many pets?" + INSTRUCTED
    thinking = SimpleNamespace(chat_template="<think>")
    assert prompt_for_generation(thinking, "How many pets?", True) == "How many pets?"  # it reasons already


def test_on_a_chat_prompt_only_the_last_user_message_gets_the_instruction():
    plain = SimpleNamespace(chat_template="plain")
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Tom has 3 cats."},
            {"role": "assistant", "content": "Noted."}, {"role": "user", "content": "How many pets? "}]
    out = prompt_for_generation(plain, chat, reasoning_instruction=True)
    assert out[:3] == chat[:3]
    assert out[3] == {"role": "user", "content": "How many pets?" + INSTRUCTED}
    assert prompt_for_generation(plain, chat) == chat  # off by default
    assert chat[3]["content"] == "How many pets? "  # the caller's list is left as it was
    asked = [{"role": "user", "content": "How many pets? Answer: with a number."}]
    assert prompt_for_generation(plain, asked, True) == asked
    assert prompt_for_generation(SimpleNamespace(chat_template="<think>"), chat, True) == chat  # it reasons already


def test_a_malformed_chat_prompt_is_refused_before_generating():
    with pytest.raises(ValueError, match="needs a string 'role' and a string 'content'"):
        prompt_for_generation(SimpleNamespace(chat_template="plain"), [{"role": "user", "content": 3}], True)


# --- refusals before generating ---------------------------------------------------------------------------------

def test_the_new_token_count_must_be_at_least_one(llama):
    with pytest.raises(ValueError, match="max_new_tokens must be at least 1, got 0"):
        generation_ids(llama, "How many?", max_new_tokens=0)
    prompt, ids = generation_ids(llama, "How many?", max_new_tokens=1)
    assert prompt == "How many?" and ids == build_sequence(llama.tokenizer, "How many?", "").ids


def test_a_prompt_that_just_fits_the_context_is_generated_from_and_one_more_token_is_refused(llama):
    n = len(build_sequence(llama.tokenizer, "How many?", "").ids)
    fits = _loaded(llama.tokenizer, n + 256)
    assert generation_ids(fits, "How many?")[1] == build_sequence(llama.tokenizer, "How many?", "").ids  # 256 new
    assert generation_ids(fits, "How many?", max_new_tokens=256)[1]
    with pytest.raises(ValueError) as refused:
        generation_ids(fits, "How many?", max_new_tokens=257)
    assert str(refused.value) == (f"the prompt has {n:,} tokens; with 257 new tokens that exceeds the {n + 256:,} "
                                  "tokens stub-model reads; shorten the prompt or ask for fewer new tokens")


def test_generation_ids_use_the_chat_template_and_no_instruction_unless_asked(llama):
    templated = build_sequence(llama.tokenizer, "How many?", "").ids
    raw = build_sequence(llama.tokenizer, "How many?", "", chat_template=False).ids
    assert raw != templated
    assert generation_ids(llama, "How many?")[1] == templated
    assert generation_ids(llama, "How many?", chat_template=False)[1] == raw
    prompt, ids = generation_ids(llama, "How many?", reasoning_instruction=True)
    assert prompt == "How many?" + INSTRUCTED
    assert ids == build_sequence(llama.tokenizer, prompt, "").ids


def test_a_model_with_a_thinking_mode_is_never_given_the_instruction(llama, monkeypatch):
    monkeypatch.setattr(llama.tokenizer, "chat_template", "{# <think> #}" + llama.tokenizer.chat_template)
    prompt, ids = generation_ids(llama, "How many?", reasoning_instruction=True)
    assert prompt == "How many?" and ids == build_sequence(llama.tokenizer, "How many?", "").ids


# --- generate: what reaches the model, and the time it reports --------------------------------------------------

def test_generate_hands_its_settings_to_the_model_and_reports_the_time_taken(llama, monkeypatch):
    seen = {}

    def fake_response(loaded, ids, **kwargs):
        seen.update(kwargs, ids=ids)
        return generation.Continuation("five", 2, False)

    clock = iter([10.0, 12.5])
    monkeypatch.setattr(generation, "generate_response", fake_response)
    monkeypatch.setattr(generation.time, "perf_counter", lambda: next(clock))
    sampling = Sampling(do_sample=True, temperature=0.7, seed=1)
    out = generate(llama, "How many?", sampling=sampling)
    assert out.response == "five" and out.seconds == 2.5 and out.prompt == "How many?"
    assert seen["sampling"] is sampling and seen["max_new_tokens"] == 256  # the documented default
    assert seen["ids"] == build_sequence(llama.tokenizer, "How many?", "").ids  # inside the chat template


# --- the text handed over while streaming -----------------------------------------------------------------------

class _Tokenizer:
    """Decodes ids to letters; id 0 is a special token, left out when asked."""

    def decode(self, ids, skip_special_tokens=False):
        return "".join("<s>" if i == 0 else chr(ord("a") + i) for i in ids if not (skip_special_tokens and i == 0))


def test_the_streamed_text_has_no_special_tokens_and_takes_several_ids_at_once():
    seen = []
    stream = TextStream(_Tokenizer(), lambda text, n: seen.append((text, n)))
    stream.put(torch.tensor([[0, 7, 7]]))  # the prompt: skipped
    stream.put(torch.tensor([1]))
    stream.put(torch.tensor([[0, 2]]))  # a special token and a letter in one call
    stream.end()
    assert seen == [("b", 1), ("bc", 3)]
