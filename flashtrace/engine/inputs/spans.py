"""Detect the reasoning and answer spans of a response (character ranges into the response text).

Rules, first match wins for the answer: the last ``\\boxed{…}``; the rest of the line after the last
"Answer:" (or "answer is:", "final answer:"); the text
after ``</think>``; else the last non-empty line. Reasoning is the text inside ``<think>…</think>``
when present, otherwise everything before the answer line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CharRange = tuple[int, int]

_ANSWER_MARK = re.compile(r"\b(?:final\s+)?answer\s*(?:is)?\s*[:：]", re.I)
_BOXED = re.compile(r"\\boxed\{")


@dataclass(frozen=True)
class ResponseSpans:
    """The character ranges of the reasoning and the answer in a response, and the rule that found them."""
    reasoning: CharRange | None
    answer: CharRange | None
    rule: str  # which rule found the answer


def _strip(text: str, start: int, end: int) -> CharRange | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


def _last_boxed(text: str, lo: int, hi: int) -> CharRange | None:
    found = None
    for match in _BOXED.finditer(text, lo, hi):
        depth, i = 1, match.end()
        while i < hi and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        if depth == 0:
            found = _strip(text, match.end(), i - 1) or found
    return found


def _after_last_mark(text: str, lo: int, hi: int) -> CharRange | None:
    """The rest of the line after the last "Answer:" mark that has text after it ("The answer is: Answer: 32"
    gives "32")."""
    found = None
    for mark in _ANSWER_MARK.finditer(text, lo, hi):
        end = text.find("\n", mark.end(), hi)
        found = _strip(text, mark.end(), hi if end < 0 else end) or found
    return found


_WORD = re.compile(r"\w+(?:[.,:/'’]\w+)*")  # a word or a number (3.5, 1,000, 3:45, 12/25, Tom's)
_NUMBER = re.compile(r"[-−]?\d+(?:[.,:/]\d+)*%?")
# words an answer line restating the question wraps its value in (lower case); never a value on their own
_FILLER = frozenset("so thus therefore hence the a an is are was were be will would it he she they there this that "
                    "now then total altogether in all of".split())


def _forms(word: str) -> set[str]:
    """A word case-folded, with and without a plural or verb ending ("lives", "live" and "liv" share "live"), so
    the question's "live" holds the answer's "lives"."""
    word = word.casefold()
    return {word} | {word[: -len(end)] for end in ("s", "es", "d", "ed", "ing")
                     if word.endswith(end) and len(word) - len(end) >= 3}


def is_question(sentence: str) -> bool:
    """Whether a prompt sentence is a question (it ends in "?"): what was asked, not what supplies the answer.

    Args:
        sentence: A sentence of the prompt.

    Returns:
        True when the sentence, stripped, ends in "?".
    """
    return sentence.strip().endswith("?")


def asked_text(prompt: str) -> str:
    """What the prompt asks: its sentences that end in "?" (`is_question`; the question, without a passage before
    it), else its last non-empty line.

    Args:
        prompt: The prompt text.

    Returns:
        The questions joined by a space, else the last non-empty line ("" for a blank prompt).
    """
    questions = re.findall(r"[^.!?\n]*\?", prompt)
    if questions:
        return " ".join(q.strip() for q in questions)
    lines = [line for line in prompt.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def answer_value(response: str, answer: CharRange | None, prompt: str) -> CharRange | None:
    """The answer's value inside the answer span, when the answer line restates the question ("Tom has 15 marbles
    now." gives "15"): the last number in it, else the run of words from the first to the last one that neither
    the question (`asked_text`) nor `_FILLER` holds. None when there is no answer or the value is the whole answer
    ("Answer: 7", "\\boxed{Paris}"), so the answer span is its own value.

    Args:
        response: The response text.
        answer: The answer span's characters in `response`, or None.
        prompt: The prompt text (its question's words are not the value).

    Returns:
        ``(start, end)`` of the value in `response`, or None.
    """
    if answer is None:
        return None
    lo, hi = answer
    numbers = list(_NUMBER.finditer(response, lo, hi))
    if numbers:
        found = (numbers[-1].start(), numbers[-1].end())
    else:
        asked = set().union(*(_forms(w) for w in _WORD.findall(asked_text(prompt))))
        new = [m for m in _WORD.finditer(response, lo, hi)
               if not _forms(m.group()) & asked and m.group().casefold() not in _FILLER]
        if not new:
            return None
        found = (new[0].start(), new[-1].end())
    return None if found == _strip(response, lo, hi) else found


def answer_guess(spans: ResponseSpans, response: str, reached_limit: bool = False) -> str | None:
    """One sentence saying that the answer span is a guess (the last-line rule: no ``\\boxed{}``, no "Answer:",
    no ``</think>`` in `response`), naming the line taken and what to do; None when a rule found the answer or
    the response is one line that was not cut.

    Args:
        spans: The response's spans, as `detect_spans` found them.
        response: The response text.
        reached_limit: The response was generated and cut at ``max_new_tokens``.

    Returns:
        The sentence, or None when the answer span is not a guess.
    """
    if spans.rule != "last-line" or spans.answer is None:
        return None
    if not reached_limit and spans.answer == _strip(response, 0, len(response)):
        return None  # a one-line response is its own answer
    line = response[spans.answer[0]:spans.answer[1]]
    shown = line if len(line) <= 60 else line[:57] + "..."
    why = ("generation stopped at max_new_tokens before the model wrote an answer: raise max_new_tokens"
           if reached_limit else 'the response has no answer line (\\boxed{}, "Answer:" or </think>)')
    return (f"the answer target is a guess, the response's last line {shown!r}: {why}, or choose the target "
            "yourself (the response, or a character range)")


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def detect_spans(response: str) -> ResponseSpans:
    """Find the reasoning and answer character ranges of `response`.

    Args:
        response: The response text.

    Returns:
        The reasoning and answer ranges (None where there is none) and the rule that found the answer
        (``"boxed"``, ``"answer-line"``, ``"after-think"``, ``"last-line"`` or ``"empty"``).
    """
    lo, hi = 0, len(response)
    think_open, think_close = response.find("<think>"), response.find("</think>")
    reasoning = None
    if think_close >= 0:
        inner_start = think_open + len("<think>") if 0 <= think_open < think_close else 0
        reasoning = _strip(response, inner_start, think_close)
        lo = think_close + len("</think>")
    answer, rule = _last_boxed(response, lo, hi), "boxed"
    if answer is None:
        answer, rule = _after_last_mark(response, lo, hi), "answer-line"
    if answer is None and think_close >= 0:
        answer, rule = _strip(response, lo, hi), "after-think"
    if answer is None:
        whole = _strip(response, lo, hi)
        if whole is None:
            return ResponseSpans(reasoning, None, "empty")
        start = _line_start(response, whole[1])
        answer, rule = _strip(response, start, whole[1]), "last-line"
    if think_close < 0:
        reasoning = _strip(response, 0, _line_start(response, answer[0]))
    return ResponseSpans(reasoning, answer, rule)
