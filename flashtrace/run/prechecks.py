"""Checks on a run's inputs that cost nothing and come before any tokenising or forward pass.

- `read_text_bounded`: a prompt/response file read with a byte limit (``/dev/zero`` cannot fill memory),
  one-line errors for a missing file, a folder, a device, a named pipe or undecodable bytes;
- `max_input_chars` / `check_text_size`: a character bound from the model's context (no token is longer
  than the tokenizer's longest vocabulary entry), so a 16 MB prompt is refused before it is tokenised;
  the app uses `max_input_chars` as its text areas' ``max_chars``;
- `context_length`: the model's context from its config.

Once the text is tokenised, every command that runs a model makes one check before its first forward pass:
`flashtrace.engine.estimate.check_run` (the sequence, with any new tokens, against the context; the memory the
run needs against what is available). The limits themselves (and option checks that need no model) are in
`flashtrace.analysis.limits`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..analysis.limits import MAX_INPUT_BYTES, MAX_INPUT_CHARS
from ..base.fileio import FileTooLargeError, NotAFileError, read_regular_file
from ..base.errors import InputError

if TYPE_CHECKING:
    from ..engine.models.loading import LoadedModel


def read_text_bounded(path: str | Path, what: str = "file", limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of `path` (``-``: standard input), reading at most `limit` bytes.

    Args:
        path: The file to read; ``-`` reads standard input.
        what: What the file is, to begin the error messages with ("prompt file", ...).
        limit: The most bytes read.

    Returns:
        The file's text.

    Raises:
        InputError: A `ValueError` with one line when the file is missing, a folder (or a device or a named pipe,
            refused unread), unreadable, larger than `limit` or not UTF-8.
    """
    path = Path(path)
    if str(path) == "-":
        data = sys.stdin.buffer.read(limit + 1)
    else:
        try:  # a folder, a device or a named pipe (which would block with no writer) is refused unread
            data = read_regular_file(path, limit, "text file")
        except NotAFileError as exc:
            raise InputError(f"{what} {exc}") from None
        except FileTooLargeError:
            data = None
        except FileNotFoundError:
            raise InputError(f"{what} {path} does not exist") from None
        except PermissionError:
            raise InputError(f"{what} {path} cannot be read (permission denied)") from None
    if data is None or len(data) > limit:
        raise InputError(f"{what} {path} is larger than {limit:,} bytes (a prompt or response holds at most "
                         f"{MAX_INPUT_CHARS:,} characters)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {path} is not UTF-8 text (byte {exc.start})") from None


def context_length(loaded: LoadedModel) -> int | None:
    """The most tokens the model reads at once, from its config (None when the config does not say).

    Args:
        loaded: The model.

    Returns:
        The context in tokens, or None when the config does not say.
    """
    from ..engine.models.generation import context_length as from_config

    value = from_config(loaded)
    return int(value) if value else None


def max_token_chars(tokenizer: Any) -> int:
    """Characters in the tokenizer's longest vocabulary entry (an upper bound on one token's text).

    Args:
        tokenizer: A transformers tokenizer; the result is cached on it.

    Returns:
        The length of its longest vocabulary entry (64 when it cannot list its vocabulary), at least 1.
    """
    cached = getattr(tokenizer, "_flashtrace_max_token_chars", None)
    if cached is None:
        try:
            cached = max(map(len, tokenizer.get_vocab()), default=64)
        except (AttributeError, NotImplementedError, TypeError):
            cached = 64
        try:
            tokenizer._flashtrace_max_token_chars = cached
        except AttributeError:
            pass
    return max(int(cached), 1)


def max_input_chars(loaded: LoadedModel) -> int:
    """The most characters of prompt (or response) worth tokenising for `loaded`: beyond this the text
    cannot fit its context, and a trace could not store it. For the app's text areas (``max_chars``).

    Args:
        loaded: The model.

    Returns:
        The context times the longest token's characters, at most `MAX_INPUT_CHARS`.
    """
    context = context_length(loaded)
    bound = context * max_token_chars(loaded.tokenizer) if context else MAX_INPUT_CHARS
    return min(bound, MAX_INPUT_CHARS)


def check_text_size(loaded: LoadedModel, prompt: str, response: str | None = None) -> None:
    """`ValueError` when the prompt or response is certainly too long, before anything is tokenised.

    Args:
        loaded: The model that is to read them.
        prompt: The prompt's text.
        response: The response's text, if any.

    Raises:
        InputError: A `ValueError` when either has more than `MAX_INPUT_CHARS` characters, or both together more
            than the model's context can hold.
    """
    context = context_length(loaded)
    for what, text in (("prompt", prompt), ("response", response or "")):
        if len(text) > MAX_INPUT_CHARS:
            raise InputError(f"the {what} has {len(text):,} characters; a trace holds at most {MAX_INPUT_CHARS:,}")
    total = len(prompt) + len(response or "")
    if context and total > context * max_token_chars(loaded.tokenizer):
        raise InputError(f"the prompt and response have {total:,} characters, more than {loaded.name}'s context of "
                         f"{context:,} tokens can hold (at most ~{context * max_token_chars(loaded.tokenizer):,} "
                         "characters); shorten them")

