"""Token ids as a prompt or a response (issue 49 item 7), as transformers takes ``input_ids``: a 1-D tensor, a
``[1, N]`` batch of one, a numpy array or a list of ints.

A trace keeps text with character offsets, so ids are decoded (special tokens kept) and must come back as the
same ids when the text is tokenised again; prompt ids are what the model reads, so no chat template is added
around them. Ids that do not round-trip are refused in words, never traced as something else.
"""

from __future__ import annotations

from numbers import Integral

from ...base.errors import InputError


def is_token_ids(value) -> bool:
    """Whether `value` is token ids: a tensor or array of integers, or a non-empty list or tuple of ints."""
    if hasattr(value, "dtype") and hasattr(value, "shape"):  # torch tensor or numpy array
        return "int" in str(value.dtype)
    return (isinstance(value, (list, tuple)) and len(value) > 0
            and all(isinstance(v, Integral) and not isinstance(v, bool) for v in value))


def ids_list(value, what: str = "prompt") -> list[int]:
    """`value` (`is_token_ids`) as a list of ints: one sequence, 1-D or a batch of one."""
    shape = tuple(getattr(value, "shape", (len(value),)))
    if len(shape) == 2 and shape[0] == 1:
        value, shape = value[0], shape[1:]
    if len(shape) != 1:
        raise InputError(f"the {what} ids must be one sequence (shape [N] or [1, N]), got shape {list(shape)}")
    ids = [int(v) for v in (value.tolist() if hasattr(value, "tolist") else value)]
    if not ids:
        raise InputError(f"the {what} ids are empty")
    return ids


def text_of_ids(tokenizer, value, what: str = "prompt", add_special_tokens: bool = False) -> str:
    """The text of token ids `value`, checked to tokenise back to the same ids (with `add_special_tokens` as the
    text will be tokenised: True for a prompt without the chat template, False for a response)."""
    ids = ids_list(value, what)
    size = len(tokenizer)
    if min(ids) < 0 or max(ids) >= size:
        raise InputError(f"the {what} ids must lie in 0..{size - 1} (the tokenizer's vocabulary), "
                         f"got {min(ids)}..{max(ids)}")
    text = tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
    again = tokenizer(text, add_special_tokens=add_special_tokens)["input_ids"]
    if again != ids:
        first = next((i for i, (a, b) in enumerate(zip(again, ids)) if a != b), min(len(again), len(ids)))
        raise InputError(f"the {what} ids do not come back from their text (they differ from token {first} on: "
                         f"{ids[first:first + 3]} became {again[first:first + 3]}); pass the text instead")
    return text


def texts_of_ids(tokenizer, prompt, response, chat_template: bool):
    """``(prompt, response, chat_template)`` with token ids given as the prompt or the response turned into their
    text (`text_of_ids`); prompt ids are what the model reads, so no chat template is added around them."""
    if is_token_ids(prompt):
        prompt, chat_template = text_of_ids(tokenizer, prompt, "prompt", add_special_tokens=True), False
    if response is not None and is_token_ids(response):
        response = text_of_ids(tokenizer, response, "response")
    return prompt, response, chat_template


__all__ = ["is_token_ids", "ids_list", "text_of_ids", "texts_of_ids"]
