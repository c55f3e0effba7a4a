"""Token ids as a prompt or a response (issue 49 item 7), as transformers takes ``input_ids``: a 1-D tensor, a
``[1, N]`` batch of one, a numpy array or a list of ints.

A trace keeps text with character offsets, so ids are decoded (special tokens kept) and must come back as the
same ids when the text is tokenised again; prompt ids are what the model reads, so no chat template is added
around them. Ids that do not round-trip are refused in words, never traced as something else.
"""

from __future__ import annotations

from numbers import Integral
from typing import TYPE_CHECKING

from ...base.errors import InputError

if TYPE_CHECKING:
    from typing import Any

    from .chat import Prompt


def is_token_ids(value: object) -> bool:
    """Whether `value` is token ids: a tensor or array of integers, or a non-empty list or tuple of ints.

    Args:
        value: A prompt or response as given: text, a chat-messages list, or token ids.

    Returns:
        True for a torch tensor or numpy array of an integer dtype, or a non-empty list or tuple of ints (bools
        excluded).
    """
    if hasattr(value, "dtype") and hasattr(value, "shape"):  # torch tensor or numpy array
        return "int" in str(value.dtype)
    return (isinstance(value, (list, tuple)) and len(value) > 0
            and all(isinstance(v, Integral) and not isinstance(v, bool) for v in value))


def ids_list(value: Any, what: str = "prompt") -> list[int]:
    """`value` (`is_token_ids`) as a list of ints: one sequence, 1-D or a batch of one.

    Args:
        value: Token ids: a 1-D tensor, a ``[1, N]`` batch of one, a numpy array or a list of ints.
        what: What the ids are (``"prompt"`` or ``"response"``), for the error messages.

    Returns:
        The ids, as Python ints.

    Raises:
        InputError: When `value` is not one sequence (shape ``[N]`` or ``[1, N]``) or is empty.
    """
    shape = tuple(getattr(value, "shape", (len(value),)))
    if len(shape) == 2 and shape[0] == 1:
        value, shape = value[0], shape[1:]
    if len(shape) != 1:
        raise InputError(f"the {what} ids must be one sequence (shape [N] or [1, N]), got shape {list(shape)}")
    ids = [int(v) for v in (value.tolist() if hasattr(value, "tolist") else value)]
    if not ids:
        raise InputError(f"the {what} ids are empty")
    return ids


def text_of_ids(tokenizer: Any, value: Any, what: str = "prompt", add_special_tokens: bool = False) -> str:
    """The text of token ids `value`, checked to tokenise back to the same ids.

    Args:
        tokenizer: The model's tokenizer (a transformers tokenizer).
        value: Token ids: a 1-D tensor, a ``[1, N]`` batch of one, a numpy array or a list of ints.
        what: What the ids are (``"prompt"`` or ``"response"``), for the error messages.
        add_special_tokens: As the text will be tokenised: True for a prompt without the chat template, False for a
            response.

    Returns:
        The decoded text (special tokens kept).

    Raises:
        InputError: When the ids are not one non-empty sequence, lie outside the tokenizer's vocabulary, or do not
            come back from their text.
    """
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


def texts_of_ids(tokenizer: Any, prompt: Prompt | Any, response: str | Any | None, chat_template: bool
                 ) -> tuple[Prompt, str | None, bool]:
    """``(prompt, response, chat_template)`` with token ids given as the prompt or the response turned into their
    text (`text_of_ids`); prompt ids are what the model reads, so no chat template is added around them.

    Args:
        tokenizer: The model's tokenizer (a transformers tokenizer).
        prompt: A prompt string, a chat-messages list, or token ids.
        response: A response string, token ids, or None.
        chat_template: Whether the prompt is wrapped in the chat template.

    Returns:
        ``(prompt, response, chat_template)``: ids turned into text, and `chat_template` False when the prompt
        was ids; other values as given.

    Raises:
        InputError: When ids are refused (`text_of_ids`).
    """
    if is_token_ids(prompt):
        prompt, chat_template = text_of_ids(tokenizer, prompt, "prompt", add_special_tokens=True), False
    if response is not None and is_token_ids(response):
        response = text_of_ids(tokenizer, response, "response")
    return prompt, response, chat_template


__all__ = ["is_token_ids", "ids_list", "text_of_ids", "texts_of_ids"]
