"""Optional generation step: let the model write a response (reasoning, then answer) greedily."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import torch

from ..inputs.sequence import INSTRUCTION_SEPARATOR, REASONING_INSTRUCTION  # noqa: F401 - re-exported

# a prompt that already asks for reasoning or for an answer format gets no second instruction
_ASKS_ALREADY = re.compile(r"step[ -]by[ -]step|\banswer\s*:|\\boxed|<think>", re.I)


@dataclass(frozen=True)
class Generated:
    prompt: str  # the prompt as the model saw it (with the reasoning instruction when one was added)
    response: str
    seconds: float


def context_length(loaded) -> int | None:
    """The most tokens the model reads (from its config), or None when the config does not say."""
    config = loaded.model.config
    config = config.get_text_config() if hasattr(config, "get_text_config") else config
    return getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)


def has_thinking_mode(tokenizer) -> bool:
    return "<think>" in (getattr(tokenizer, "chat_template", None) or "")


def prompt_for_generation(tokenizer, prompt: str, reasoning_instruction: bool = False) -> str:
    """The prompt as traced. With `reasoning_instruction`, `REASONING_INSTRUCTION` is appended for models
    without a thinking mode, unless the prompt already asks for step-by-step reasoning or an answer
    format; its tokens get the template role (`inputs.scaffold_range`), so no evidence ever counts them."""
    if reasoning_instruction and not has_thinking_mode(tokenizer) and not _ASKS_ALREADY.search(prompt):
        return f"{prompt.rstrip()}{INSTRUCTION_SEPARATOR}{REASONING_INSTRUCTION}"
    return prompt


@torch.no_grad()
def generate_response(loaded, input_ids: list[int], max_new_tokens: int = 256, do_sample: bool = False) -> str:
    """Greedy (by default) continuation of `input_ids`, decoded without special tokens."""
    ids = torch.tensor([input_ids], device=loaded.device)
    tok = loaded.tokenizer
    out = loaded.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                                do_sample=do_sample, pad_token_id=tok.pad_token_id or tok.eos_token_id)
    return tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True)


def generate(loaded, prompt: str, *, max_new_tokens: int = 256, chat_template: bool = True,
             reasoning_instruction: bool = False) -> Generated:
    """Let the model answer `prompt` (with its chat template when `chat_template`); refuses before generating
    when the prompt plus `max_new_tokens` would not fit the model's context."""
    from ..inputs import build_sequence

    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
    prompt = prompt_for_generation(loaded.tokenizer, prompt, reasoning_instruction)
    ids = build_sequence(loaded.tokenizer, prompt, "", chat_template).ids
    context = context_length(loaded)
    if context and len(ids) + max_new_tokens > context:
        raise ValueError(f"the prompt has {len(ids):,} tokens; with {max_new_tokens:,} new tokens that exceeds the "
                         f"{context:,} tokens {loaded.name} reads; shorten the prompt or ask for fewer new tokens")
    start = time.perf_counter()
    response = generate_response(loaded, ids, max_new_tokens=max_new_tokens)
    return Generated(prompt, response, time.perf_counter() - start)
