"""Build the token sequence of prompt (+ chat template) + response, with roles and character offsets.

Token labels come straight from the token ids; offsets point into the original prompt or response
text (template tokens have none). The prompt is never re-tokenised from decoded text.
"""

from __future__ import annotations

import string
import unicodedata
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .chat import Prompt, check_messages, content_pieces, is_messages, prompt_text
from .spans import CharRange, ResponseSpans, detect_spans
from ...base.errors import InputError

if TYPE_CHECKING:
    from typing import Any, Callable

ROLES = ("template", "prompt", "reasoning", "answer")


@dataclass
class Token:
    """One token: vocabulary id, text, role, the text it came from (prompt, response or None for the
    template) and its character offsets there."""
    id: int
    text: str
    role: str  # template | prompt | reasoning | answer
    source: str | None  # "prompt" | "response" | None (template)
    start: int | None  # character offsets into the source text
    end: int | None


@dataclass
class TokenSequence:
    """The tokens of a prompt and response as the model reads them, with roles, the reasoning and
    answer spans, and the chat-messages list the prompt came from (if any)."""
    prompt: str
    response: str
    tokens: list[Token]
    chat_template: bool
    spans: ResponseSpans = field(default=ResponseSpans(None, None, "empty"))
    messages: list[dict] | None = None  # the chat-messages list the prompt came from (`inputs.chat`), if any

    @property
    def ids(self) -> list[int]:
        """The token ids, in order."""
        return [t.id for t in self.tokens]

    def __len__(self) -> int:
        return len(self.tokens)

    def positions(self, *roles: str) -> list[int]:
        """The positions of the tokens whose role is one of `roles`.

        Args:
            *roles: The roles to pick (of `ROLES`: template, prompt, reasoning, answer).

        Returns:
            The picked tokens' positions, in order (empty when no token has one of `roles`).
        """
        return [i for i, t in enumerate(self.tokens) if t.role in roles]

    def token_range(self, *roles: str) -> tuple[int, int] | None:
        """``[start, end)`` of the first contiguous run of tokens with these roles, or None.

        Roles run template/prompt → reasoning → answer, except that response text after the answer
        (``\\boxed{12} so that is it``) is labelled reasoning too: the reasoning span is only the run
        before the answer, so it never contains the answer.

        Args:
            *roles: The roles the run's tokens may have (of `ROLES`).

        Returns:
            ``(start, end)`` of the first run, end exclusive; None when no token has one of `roles`.
        """
        pos = self.positions(*roles)
        if not pos:
            return None
        end = pos[0]
        while end < len(self.tokens) and self.tokens[end].role in roles:
            end += 1
        return pos[0], end

    def token_runs(self, role: str) -> list[tuple[int, int]]:
        """Every contiguous run ``[start, end)`` of tokens with `role` (a chat prompt has one per message).

        Args:
            role: The role (of `ROLES`).

        Returns:
            The runs as ``(start, end)`` pairs, end exclusive, in order (empty when no token has `role`).
        """
        runs: list[tuple[int, int]] = []
        for i in self.positions(role):
            if runs and runs[-1][1] == i:
                runs[-1] = (runs[-1][0], i + 1)
            else:
                runs.append((i, i + 1))
        return runs

    @property
    def response_start(self) -> int:
        """Index of the first response token (= number of input tokens)."""
        return next((i for i, t in enumerate(self.tokens) if t.source == "response"), len(self.tokens))

    def char_range_to_tokens(self, chars: CharRange, source: str = "response") -> tuple[int, int]:
        """Token range covering the characters ``[start, end)`` of `source`.

        Args:
            chars: The characters ``(start, end)``, end exclusive.
            source: The text they are in: ``"response"`` or ``"prompt"``.

        Returns:
            ``(start, end)`` of the tokens from `source` that overlap the characters, end exclusive.

        Raises:
            InputError: When no token from `source` covers any of the characters.
        """
        lo, hi = chars
        hit = [i for i, t in enumerate(self.tokens)
               if t.source == source and t.start is not None and t.start < hi and t.end > lo]
        if not hit:
            raise InputError(f"no {source} token covers characters {lo}:{hi}")
        return hit[0], hit[-1] + 1


def _encode(tokenizer, text: str, add_special_tokens: bool):
    enc = tokenizer(text, add_special_tokens=add_special_tokens, return_offsets_mapping=True)
    return enc["input_ids"], enc["offset_mapping"]


def _labels(tokenizer, ids: list[int]) -> list[str]:
    return [tokenizer.decode([i], clean_up_tokenization_spaces=False) for i in ids]


REASONING_INSTRUCTION = "Think step by step, then give the final answer on a last line starting with 'Answer:'."
INSTRUCTION_SEPARATOR = "\n\n"


def scaffold_range(prompt: str) -> tuple[int, int] | None:
    """The characters of `prompt` that the tool added, not the user: a trailing `REASONING_INSTRUCTION`
    (with the blank line before it), or None.

    Args:
        prompt: The prompt text.

    Returns:
        ``(start, end)`` of the added characters, or None when the tool added none.
    """
    added = INSTRUCTION_SEPARATOR + REASONING_INSTRUCTION
    if prompt.endswith(added):
        return len(prompt) - len(added), len(prompt)
    return None


def _prompt_tokens(tokenizer, prompt: Prompt, chat_template: bool) -> tuple[list[Token], bool]:
    """The prompt's tokens inside the chat template (when the tokenizer has one and `chat_template`): the
    user's text is ``prompt``, the template around it and the tool's scaffold ``template``. A chat-messages
    list (`inputs.chat`) is rendered whole; each message's content maps into `prompt_text(prompt)`."""
    use_template = bool(chat_template and getattr(tokenizer, "chat_template", None))
    text = prompt_text(prompt)
    if is_messages(prompt):
        if not use_template:
            raise InputError("a chat-messages prompt needs the model's chat template (chat_template=True and a "
                             "tokenizer that has one); pass a prompt string instead")
        messages = check_messages(prompt)
    else:
        messages = [{"role": "user", "content": prompt}]
    if use_template:
        rendered = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        pieces = content_pieces(rendered, messages)
        ids, offsets = _encode(tokenizer, rendered, add_special_tokens=False)
    else:
        pieces = [(0, 0, len(text))]
        ids, offsets = _encode(tokenizer, text, add_special_tokens=True)
    scaffold = scaffold_range(text)
    user_end = scaffold[0] if scaffold else len(text)
    tokens = []
    for tid, label, (s, e) in zip(ids, _labels(tokenizer, ids), offsets):
        piece = next((p for p in pieces if e > s and s < p[0] + p[2] and e > p[0]), None)
        if piece is None:
            tokens.append(Token(tid, label, "template", None, None, None))
            continue
        at, start, length = piece
        lo, hi = start + max(s - at, 0), start + min(e - at, length)
        first = next((c for c in range(lo, hi) if not text[c].isspace()), lo)
        tokens.append(Token(tid, label, "prompt" if first < user_end else "template", "prompt", lo, hi))
    return tokens, use_template


def build_sequence(tokenizer: Any, prompt: Prompt, response: str = "", chat_template: bool = True,
                   spans: ResponseSpans | None = None) -> TokenSequence:
    """Tokenise `prompt` (inside the chat template when it has one and `chat_template`) followed by
    `response`; roles from `spans` (detected from the response when not given). Text the tool added to
    the prompt (`scaffold_range`: the reasoning instruction) gets the template role, like the chat
    template around it: it is not the user's prompt, and evidence never counts it.

    Args:
        tokenizer: The model's tokenizer (a transformers tokenizer).
        prompt: A prompt string, or a chat-messages list (`inputs.chat`): the sequence's prompt is then its
            `prompt_text`, and `messages` keeps the list.
        response: The response text.
        chat_template: Whether the prompt goes inside the tokenizer's chat template (when it has one).
        spans: The response's reasoning and answer spans (default: detected from the response).

    Returns:
        The tokens with their roles and offsets, the texts and the spans.

    Raises:
        InputError: When the prompt is empty, or a chat-messages prompt has no chat template to render it or is
            refused by `check_messages`.
    """
    text = prompt_text(prompt)
    if not text.strip():
        raise InputError("the prompt is empty")
    tokens, use_template = _prompt_tokens(tokenizer, prompt, chat_template)
    spans = spans or detect_spans(response)
    if response:
        r_ids, r_offsets = _encode(tokenizer, response, add_special_tokens=False)
        answer = spans.answer
        for tid, label, (s, e) in zip(r_ids, _labels(tokenizer, r_ids), r_offsets):
            in_answer = answer is not None and s < answer[1] and e > answer[0]
            tokens.append(Token(tid, label, "answer" if in_answer else "reasoning", "response", s, e))
    return TokenSequence(prompt=text, response=response, tokens=tokens, chat_template=use_template, spans=spans,
                         messages=check_messages(prompt) if is_messages(prompt) else None)


_PUNCT = set(string.punctuation)

StopTokens = str | list[str]  # a preset name or a user list of token texts
STOP_PRESETS = ("paper", "punctuation", "none")
DEFAULT_STOP_TOKENS = "punctuation"  # chosen on the Qwen models' own reasoning: docs/evaluation.md, Defaults
PAPER_STOP_TOKENS = (",", ".")


def is_punctuation_token(text: str) -> bool:
    """The ``punctuation`` preset: whitespace-only or punctuation-only token text.

    Args:
        text: A token's text.

    Returns:
        True when the text, stripped, is empty or only punctuation.
    """
    stripped = text.strip()
    if not stripped:
        return True
    return all(ch in _PUNCT or unicodedata.category(ch).startswith("P") for ch in stripped)


def _in_list(words: frozenset[str]):
    def rule(text: str) -> bool:
        stripped = text.strip()
        return not stripped or stripped in words

    return rule


def stop_rule(stop_tokens: StopTokens = DEFAULT_STOP_TOKENS) -> Callable[[str], bool]:
    """The predicate ``token text -> is a stop token`` for a preset or a user list.

    - ``paper``: ``,`` and ``.`` and whitespace-only tokens, compared after stripping
      surrounding whitespace (so ``" ."`` and ``".\\n"`` are stops, ``"..."``, ``"?"`` and ``":"`` are not).
      This is the set of the authors' code (flashtrace 0.1.1), behind the paper's published numbers.
    - ``punctuation`` (default): every punctuation-only or whitespace-only token (this project's rule before
      the presets, and the default again since the evaluation on the Qwen models' own reasoning; traces
      record the preset they were made with).
    - ``none``: no stop tokens.
    - a list of token texts: those texts (compared after stripping) plus whitespace-only tokens.

    Args:
        stop_tokens: A preset name (``paper``, ``punctuation`` or ``none``) or a list of token texts.

    Returns:
        The predicate: True for a stop token's text.

    Raises:
        InputError: When `stop_tokens` is an unknown preset, or a list holding something other than strings.
    """
    if isinstance(stop_tokens, str):
        if stop_tokens == "paper":
            return _in_list(frozenset(PAPER_STOP_TOKENS))
        if stop_tokens == "punctuation":
            return is_punctuation_token
        if stop_tokens == "none":
            return lambda text: False
        raise InputError(f"stop tokens must be one of {', '.join(STOP_PRESETS)} or a list of tokens, "
                         f"got {stop_tokens!r}")
    words = [w for w in stop_tokens if isinstance(w, str)]
    if len(words) != len(stop_tokens):
        raise InputError("a stop-token list must hold strings")
    return _in_list(frozenset(w.strip() for w in words))


def is_stop_token(text: str, stop_tokens: StopTokens = DEFAULT_STOP_TOKENS) -> bool:
    """Whether `text` is a stop token under `stop_tokens` (default: `DEFAULT_STOP_TOKENS`).

    Args:
        text: A token's text.
        stop_tokens: A preset name or a list of token texts (`stop_rule`).

    Returns:
        True for a stop token.

    Raises:
        InputError: When `stop_tokens` is refused (`stop_rule`).
    """
    return stop_rule(stop_tokens)(text)


def parse_stop_tokens(spec: str) -> StopTokens:
    """A command-line value: a preset name, or a whitespace-separated list such as ``", . ?"``.

    Args:
        spec: The value as given on the command line.

    Returns:
        The preset name, or the list of token texts.

    Raises:
        InputError: When `spec` is empty or only white space.
    """
    spec = spec.strip()
    if spec in STOP_PRESETS:
        return spec
    words = spec.split()
    if not words:
        raise InputError(f"--stop-tokens takes {', '.join(STOP_PRESETS)} or a whitespace-separated list of tokens")
    return words
