"""Optional generation step: let the model write a response (reasoning, then answer) greedily."""

from __future__ import annotations

import torch

REASONING_INSTRUCTION = "Think step by step, then give the final answer on a last line starting with 'Answer:'."


def has_thinking_mode(tokenizer) -> bool:
    return "<think>" in (getattr(tokenizer, "chat_template", None) or "")


def prompt_for_generation(tokenizer, prompt: str, reasoning_instruction: bool = True) -> str:
    """The prompt as traced: with the reasoning instruction appended for models without a thinking mode."""
    if reasoning_instruction and not has_thinking_mode(tokenizer):
        return f"{prompt.rstrip()}\n\n{REASONING_INSTRUCTION}"
    return prompt


@torch.no_grad()
def generate_response(loaded, input_ids: list[int], max_new_tokens: int = 256, do_sample: bool = False) -> str:
    """Greedy (by default) continuation of `input_ids`, decoded without special tokens."""
    ids = torch.tensor([input_ids], device=loaded.device)
    tok = loaded.tokenizer
    out = loaded.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                                do_sample=do_sample, pad_token_id=tok.pad_token_id or tok.eos_token_id)
    return tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True)
