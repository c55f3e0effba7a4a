"""Build the token sequence of prompt (+ chat template) + response, with roles and character offsets.

Token labels come straight from the token ids; offsets point into the original prompt or response
text (template tokens have none). The prompt is never re-tokenised from decoded text.
"""

from __future__ import annotations

import string
import unicodedata
from dataclasses import dataclass, field

from .spans import CharRange, ResponseSpans, detect_spans

ROLES = ("template", "prompt", "reasoning", "answer")


@dataclass
class Token:
    id: int
    text: str
    role: str  # template | prompt | reasoning | answer
    source: str | None  # "prompt" | "response" | None (template)
    start: int | None  # character offsets into the source text
    end: int | None


@dataclass
class Sequence:
    prompt: str
    response: str
    tokens: list[Token]
    chat_template: bool
    spans: ResponseSpans = field(default=ResponseSpans(None, None, "empty"))

    @property
    def ids(self) -> list[int]:
        return [t.id for t in self.tokens]

    def __len__(self) -> int:
        return len(self.tokens)

    def positions(self, *roles: str) -> list[int]:
        return [i for i, t in enumerate(self.tokens) if t.role in roles]

    def token_range(self, *roles: str) -> tuple[int, int] | None:
        """``[start, end)`` of the first contiguous run of tokens with these roles, or None.

        Roles run template/prompt → reasoning → answer, except that response text after the answer
        (``\\boxed{12} so that is it``) is labelled reasoning too: the reasoning span is only the run
        before the answer, so it never contains the answer."""
        pos = self.positions(*roles)
        if not pos:
            return None
        end = pos[0]
        while end < len(self.tokens) and self.tokens[end].role in roles:
            end += 1
        return pos[0], end

    @property
    def response_start(self) -> int:
        """Index of the first response token (= number of input tokens)."""
        return next((i for i, t in enumerate(self.tokens) if t.source == "response"), len(self.tokens))

    def char_range_to_tokens(self, chars: CharRange, source: str = "response") -> tuple[int, int]:
        """Token range covering the characters ``[start, end)`` of `source`."""
        lo, hi = chars
        hit = [i for i, t in enumerate(self.tokens)
               if t.source == source and t.start is not None and t.start < hi and t.end > lo]
        if not hit:
            raise ValueError(f"no {source} token covers characters {lo}:{hi}")
        return hit[0], hit[-1] + 1


def _encode(tokenizer, text: str, add_special_tokens: bool):
    enc = tokenizer(text, add_special_tokens=add_special_tokens, return_offsets_mapping=True)
    return enc["input_ids"], enc["offset_mapping"]


def _labels(tokenizer, ids: list[int]) -> list[str]:
    return [tokenizer.decode([i], clean_up_tokenization_spaces=False) for i in ids]


def build_sequence(tokenizer, prompt: str, response: str = "", chat_template: bool = True,
                   spans: ResponseSpans | None = None) -> Sequence:
    """Tokenise `prompt` (inside the chat template when it has one and `chat_template`) followed by
    `response`; roles from `spans` (detected from the response when not given)."""
    if not prompt.strip():
        raise ValueError("the prompt is empty")
    use_template = chat_template and getattr(tokenizer, "chat_template", None)
    if use_template:
        rendered = tokenizer.apply_chat_template([{"role": "user", "content": prompt}],
                                                 add_generation_prompt=True, tokenize=False)
        offset = rendered.rfind(prompt)
        ids, offsets = _encode(tokenizer, rendered, add_special_tokens=False)
    else:
        rendered, offset = prompt, 0
        ids, offsets = _encode(tokenizer, prompt, add_special_tokens=True)
    tokens = []
    for tid, label, (s, e) in zip(ids, _labels(tokenizer, ids), offsets):
        inside = offset >= 0 and e > s and s < offset + len(prompt) and e > offset
        if inside:
            tokens.append(Token(tid, label, "prompt", "prompt", max(s - offset, 0), min(e - offset, len(prompt))))
        else:
            tokens.append(Token(tid, label, "template", None, None, None))
    spans = spans or detect_spans(response)
    if response:
        r_ids, r_offsets = _encode(tokenizer, response, add_special_tokens=False)
        answer = spans.answer
        for tid, label, (s, e) in zip(r_ids, _labels(tokenizer, r_ids), r_offsets):
            in_answer = answer is not None and s < answer[1] and e > answer[0]
            tokens.append(Token(tid, label, "answer" if in_answer else "reasoning", "response", s, e))
    return Sequence(prompt=prompt, response=response, tokens=tokens, chat_template=bool(use_template), spans=spans)


_PUNCT = set(string.punctuation)


def is_stop_token(text: str) -> bool:
    """Whitespace-only or punctuation-only token text (the default stop tokens)."""
    stripped = text.strip()
    if not stripped:
        return True
    return all(ch in _PUNCT or unicodedata.category(ch).startswith("P") for ch in stripped)
