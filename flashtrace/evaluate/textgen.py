"""Shared pieces of the synthetic tasks: the `Example` record, a prompt builder that records the
character ranges of marked pieces, and digit-free filler text."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Callable

CharRange = tuple[int, int]
CHARS_PER_TOKEN = 4.0


@dataclass
class Example:
    """One evaluation example. `gold` holds character ranges ``[start, end)`` into `prompt`."""

    prompt: str
    response: str
    answer: str
    gold: list[CharRange]
    task: str
    meta: dict = field(default_factory=dict)

    def gold_texts(self) -> list[str]:
        """The prompt text of each gold span.

        Returns:
            The text of each gold span, in the order of `gold`.
        """
        return [self.prompt[a:b] for a, b in self.gold]

    def to_dict(self) -> dict:
        """The example as plain JSON-ready data.

        Returns:
            A dict of the example's fields (prompt, response, answer, gold, task, meta).
        """
        return asdict(self)


class PromptBuilder:
    """Joins sentences into a prompt while recording the character range of each marked piece."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.marks: dict[str, list[CharRange]] = {}

    def add(self, text: str, mark: str | None = None, sep: str = " ") -> CharRange:
        """Append `text` after `sep`; with `mark`, record its character range under that mark. Returns the range.

        Args:
            text: The piece to append.
            mark: The mark to record the piece's character range under; None records nothing.
            sep: What goes between the prompt so far and `text` (nothing before the first piece).

        Returns:
            The piece's character range ``(start, end)`` in the prompt.
        """
        if self.parts and sep:
            self.parts.append(sep)
            self.size += len(sep)
        rng = (self.size, self.size + len(text))
        self.parts.append(text)
        self.size += len(text)
        if mark:
            self.marks.setdefault(mark, []).append(rng)
        return rng

    def text(self) -> str:
        """The prompt built so far.

        Returns:
            The pieces added so far, joined with their separators.
        """
        return "".join(self.parts)


# ---- filler text: varied, digit-free sentences from small word lists ----------------------------

_SUBJECTS = ["The old bridge", "A quiet river", "The morning train", "A tall lighthouse", "The village baker",
             "A patient gardener", "The north wind", "A small library", "The city market", "A wandering poet",
             "The mountain road", "A curious child", "The harbour crane", "A painted door", "The evening choir"]
_VERBS = ["waits beside", "looks over", "drifts past", "leans toward", "hums near", "stands behind",
          "circles around", "rests under", "glows above", "follows along"]
_OBJECTS = ["the sleepy square", "a field of barley", "the stone wall", "the silver lake", "a row of lanterns",
            "the crowded pier", "an empty garden", "the winding stairs", "a wooden fence", "the distant hills",
            "the open window", "a basket of apples"]
_TAILS = ["", "", " every autumn", " without a sound", " as the light fades", " on most days", " in the rain"]


def filler_sentence(rng: random.Random) -> str:
    """A random distractor sentence drawn with `rng`.

    Args:
        rng: The random generator the words are drawn with.

    Returns:
        The sentence (digit-free).
    """
    return f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)}{rng.choice(_TAILS)}."


def chars_for(length: int) -> int:
    """The characters of about `length` tokens (`CHARS_PER_TOKEN` each).

    Args:
        length: A length in tokens.

    Returns:
        The characters, rounded down.
    """
    return int(length * CHARS_PER_TOKEN)


def interleave(rng: random.Random, items: list[tuple[str, str | None]], budget: int,
                filler: Callable[[random.Random], str] = filler_sentence) -> list[tuple[str, str | None]]:
    """Place `items` (text, mark) in order at random points of a filler stream of about `budget` characters.

    Args:
        rng: The random generator of the filler and the slots.
        items: ``(text, mark)`` pieces, kept in this order.
        budget: About how many characters the whole stream has (items included, each piece counted with one
            separator).
        filler: Draws one filler sentence with `rng`.

    Returns:
        The stream as ``(text, mark)`` pieces, filler marked None.
    """
    used = sum(len(t) + 1 for t, _ in items)
    fill: list[str] = []
    while used < budget:
        s = filler(rng)
        fill.append(s)
        used += len(s) + 1
    slots = sorted(rng.sample(range(len(fill) + len(items)), len(items)))
    out, fi, ii = [], 0, 0
    for pos in range(len(fill) + len(items)):
        if ii < len(items) and slots[ii] == pos:
            out.append(items[ii])
            ii += 1
        else:
            out.append((fill[fi], None))
            fi += 1
    return out


def add_story(b: PromptBuilder, sentences: list[list[tuple[str, str | None]]], fill_rng: random.Random,
              budget: int) -> None:
    """Append a story's sentences as one paragraph after a blank line, with a filler sentence before each at even
    odds while `budget` characters of filler remain, then filler until the budget is spent.

    Args:
        b: The builder the prompt grows in.
        sentences: The story's sentences in order, each as ``(text, mark)`` pieces (a mark records its piece).
        fill_rng: The random generator of the filler and its places.
        budget: About how many characters of filler to add.
    """
    for i, sentence in enumerate(sentences):
        sep = "\n\n" if i == 0 else " "
        if budget > 0 and fill_rng.random() < 0.5:
            filler = filler_sentence(fill_rng)
            b.add(filler, sep=sep)
            sep, budget = " ", budget - len(filler)
        for j, (text, mark) in enumerate(sentence):
            b.add(text, mark, sep=sep if j == 0 else "")
    while budget > 0:
        filler = filler_sentence(fill_rng)
        b.add(filler)
        budget -= len(filler) + 1


def build_prompt(header: str, body: list[tuple[str, str | None]], question: str) -> PromptBuilder:
    """A task prompt: `header`, a blank line, the `body` sentences (each ``(text, mark)``) as one paragraph, a blank
    line and the `question`; the builder keeps each marked sentence's range.

    Args:
        header: The prompt's first line (the instruction).
        body: The sentences, each ``(text, mark)`` (mark None: not recorded).
        question: The question, last.

    Returns:
        The builder: its ``text()`` is the prompt, its ``marks`` the marked sentences' character ranges.
    """
    b = PromptBuilder()
    b.add(header)
    first = True
    for text, mark in body:
        b.add(text, mark, sep="\n\n" if first else " ")
        first = False
    b.add(question, sep="\n\n")
    return b


__all__ = ["CharRange", "CHARS_PER_TOKEN", "Example", "filler_sentence", "PromptBuilder", "build_prompt", "chars_for",
           "interleave"]
