"""Chat-messages prompts: ``[{"role": "system", "content": ...}, {"role": "user", "content": ...}]``.

A messages list is rendered with the model's chat template (the generation prompt added). The traced
prompt text is the messages' contents joined by a blank line (`prompt_text`): every token inside a
message's content maps back into that text and gets the prompt role; the template around them (role
markers, the generation prompt) gets the template role, as for a single prompt string.
"""

from __future__ import annotations

from typing import Union

from ...base.errors import InputError

SEPARATOR = "\n\n"  # between the messages' contents in the traced prompt text
Prompt = Union[str, list]  # a prompt string, or a chat-messages list


def is_messages(prompt: object) -> bool:
    """True for a chat-messages list (a list of dicts), False for a prompt string.

    Args:
        prompt: A prompt: a string, or a chat-messages list.

    Returns:
        True for a non-empty list or tuple of dicts; False for anything else.
    """
    return isinstance(prompt, (list, tuple)) and bool(prompt) and all(isinstance(m, dict) for m in prompt)


def check_messages(messages: list) -> list[dict]:
    """The messages as plain ``{"role", "content"}`` dicts, or `ValueError` saying what is wrong.

    Args:
        messages: A chat-messages list.

    Returns:
        The messages, each as a new ``{"role", "content"}`` dict.

    Raises:
        InputError: When `messages` is not a non-empty list of dicts, a message lacks a string role or a string
            content, or the last message is not the user's (a ValueError saying what is wrong).
    """
    if not is_messages(messages):
        raise InputError("a chat prompt is a non-empty list of {'role': ..., 'content': ...} dicts")
    checked = []
    for i, message in enumerate(messages):
        role, content = message.get("role"), message.get("content")
        if not isinstance(role, str) or not isinstance(content, str):
            raise InputError(f"message {i} needs a string 'role' and a string 'content' (text only), got "
                             f"{sorted(message)}")
        checked.append({"role": role, "content": content})
    if checked[-1]["role"] != "user":
        raise InputError(f"the last message must be the user's (the model answers it), not '{checked[-1]['role']}'")
    return checked


def prompt_text(prompt: Prompt) -> str:
    """The traced prompt text: the string itself, or the messages' contents joined by `SEPARATOR`.

    Args:
        prompt: A prompt string, or a chat-messages list.

    Returns:
        The prompt text.

    Raises:
        InputError: When `prompt` is a messages list `check_messages` refuses.
    """
    return SEPARATOR.join(m["content"] for m in check_messages(prompt)) if is_messages(prompt) else prompt


def with_last_user_text(messages: list[dict], text: str) -> list[dict]:
    """The messages with the last (user) message's content replaced by `text`.

    Args:
        messages: A checked chat-messages list (`check_messages`).
        text: The new content of the last message.

    Returns:
        A new list; `messages` is left as it was.
    """
    return [*messages[:-1], {**messages[-1], "content": text}]


def content_pieces(rendered: str, messages: list[dict]) -> list[tuple[int, int, int]]:
    """``(offset in rendered, offset in prompt_text, length)`` of each message's content inside the rendered
    conversation, found from the end backwards (a content the template does not show verbatim is left out).

    Args:
        rendered: The conversation as the chat template rendered it.
        messages: The checked chat-messages list it was rendered from.

    Returns:
        One ``(offset in rendered, offset in prompt_text, length)`` per message found, in message order.
    """
    starts, at = [], 0
    for message in messages:
        starts.append(at)
        at += len(message["content"]) + len(SEPARATOR)
    pieces, bound = [], len(rendered)
    for message, start in reversed(list(zip(messages, starts))):
        found = rendered.rfind(message["content"], 0, bound)
        if found >= 0 and message["content"]:
            pieces.append((found, start, len(message["content"])))
            bound = found
    return pieces[::-1]


__all__ = ["Prompt", "SEPARATOR", "is_messages", "check_messages", "prompt_text", "with_last_user_text",
           "content_pieces"]
