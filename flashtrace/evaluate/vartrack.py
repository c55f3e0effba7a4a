"""The variable-tracking task: chains of assignments ``VAR X = VAR Y.`` among distractor chains.

One generator, two layouts of the same chains:

- ``text`` (the evaluation's default): the statements sit inside filler prose, one paragraph, padded to
  `length`; the response restates the chain, then ``So VAR <asked> = <value>.`` and ``Answer: <value>``.
- ``words``: the same chains told about people in plain prose ("Ana's locker code is 67209.", "Ben's locker
  code is the same as Ana's."), inside filler prose like ``text``: no variable-name jargon, for a model that
  writes its own reasoning (`flashtrace eval --protocol own` or ``paper``).
- ``lines`` (the hop-graph benchmark, `benchmarks/vartrack_paths.py`): no filler, one statement per
  line; the response restates the chain from the asked variable back to the value and ends with
  ``Answer: <value>``, so the answer can only reach the value sentence through the restated chain.

Gold = the chain's statements; in the ``lines`` layout ``meta["value_line"]`` is the statement that assigns
the value.
"""

from __future__ import annotations

import random

from .textgen import Example, build_prompt, PromptBuilder, chars_for, interleave
from ..base.errors import InputError

VARTRACK_LAYOUTS = ("text", "lines", "words")
_PEOPLE = ["Ana", "Ben", "Cleo", "Dev", "Eli", "Faye", "Gus", "Hana", "Ivo", "Jade", "Kai", "Lena", "Milo", "Nora",
           "Omar", "Pia", "Quinn", "Rosa", "Sami", "Tara", "Uma", "Vik", "Wren", "Yara", "Zane", "Abel", "Bea",
           "Cruz", "Dina", "Emil", "Flor", "Gael", "Ines", "Jon", "Kira", "Leo", "Mina", "Nils", "Orla", "Pablo"]


def _var_names(rng: random.Random, n: int) -> list[str]:
    names: list[str] = []
    while len(names) < n:
        name = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(5))
        if name not in names:
            names.append(name)
    return names


def _people(rng: random.Random, n: int) -> list[str]:
    return rng.sample(_PEOPLE, n)


def _said(layout: str, name: str, value: int | None = None, source: str | None = None) -> str:
    """One assignment as `layout` writes it: a value given, or copied from `source`."""
    if layout == "words":
        return f"{name}'s locker code is {value}." if source is None else f"{name}'s locker code is the same as {source}'s."
    return f"VAR {name} = {value}." if source is None else f"VAR {name} = VAR {source}."


def _lines_prompt(merged: list[tuple[str, str | None]], target: str) -> PromptBuilder:
    b = PromptBuilder()
    b.add("Memorize the variable assignments below.")
    for text, mark in merged:
        b.add(text, mark, sep="\n")
    b.add(f"Question: what is the value of VAR {target}?", sep="\n")
    return b


def _chains(rng: random.Random, hops: int, distractors: int, layout: str):
    """``(statements merged in a random order keeping each chain's, each chain's names, their values)``: the value
    chain first (marked gold), then the distractor chains."""
    chains = [hops + 1] + [rng.randint(2, max(2, hops)) + 1 for _ in range(distractors)]
    if layout == "words" and sum(chains) > len(_PEOPLE):
        raise InputError(f"the words layout names at most {len(_PEOPLE)} people; use fewer hops or distractors")
    names = _people(rng, sum(chains)) if layout == "words" else _var_names(rng, sum(chains))
    values = rng.sample(range(10_000, 99_999), len(chains))
    queues, chain_vars, pos = [], [], 0
    for c, (size, value) in enumerate(zip(chains, values)):
        vs = names[pos:pos + size]
        pos += size
        chain_vars.append(vs)
        mark = "gold" if c == 0 else "distractor"
        queues.append([(_said(layout, vs[0], value), mark)]
                      + [(_said(layout, vs[i], source=vs[i - 1]), mark) for i in range(1, size)])
    merged: list[tuple[str, str | None]] = []
    while any(queues):
        q = rng.choice([q for q in queues if q])
        merged.append(q.pop(0))
    return merged, chain_vars, values


_HEADERS = {"words": ("Some people at the gym share their locker codes. Keep track of who has which code.",
                      "Question: What is {}'s locker code?"),
            "text": ("Memorize and track the chain(s) of variable assignments hidden in the following text.",
                     "Question: What is the value of VAR {}?")}
_CLOSING = {"text": "So VAR {} = {}.", "words": "So {}'s locker code is {}."}


def vartrack_example(seed: int, length: int | None = None, hops: int | None = None, distractors: int = 2,
                     layout: str = "text", **_: object) -> Example:
    """Example `seed`: a value chain of `hops` + 1 variables (2-5 by seed when None) and `distractors`
    distractor chains, laid out as `layout` (see the module docstring; `lines` ignores `length`).

    Args:
        seed: The example's seed (the same arguments always give the same example).
        length: Approximate prompt length in tokens (None: 384); the ``lines`` layout ignores it.
        hops: The value chain's hops, 2-10 (None: 2-5 by seed).
        distractors: How many distractor chains.
        layout: One of `VARTRACK_LAYOUTS`: ``text``, ``lines`` or ``words``.
        **_: Other tasks' options, ignored.

    Returns:
        The example; its gold is the value chain's statements.

    Raises:
        InputError: When `layout` is unknown, `hops` is outside 2-10, or the ``words`` layout would need more
            people than it has names for.
    """
    if layout not in VARTRACK_LAYOUTS:
        raise InputError(f"vartrack layout must be one of {VARTRACK_LAYOUTS}, got {layout!r}")
    rng = random.Random(f"vartrack:{seed}")
    hops = hops if hops is not None else rng.randint(2, 5)
    if not 2 <= hops <= 10:
        raise InputError(f"vartrack hops must be between 2 and 10, got {hops}")
    merged, chain_vars, values = _chains(rng, hops, distractors, layout)
    vs, target = chain_vars[0], chain_vars[0][-1]
    if layout == "lines":
        b = _lines_prompt(merged, target)
    else:
        header, question = _HEADERS[layout]
        b = build_prompt(header, interleave(rng, merged, chars_for(length or 384) - 160), question.format(target))
    lines = [_said(layout, vs[i], source=vs[i - 1]) for i in range(len(vs) - 1, 0, -1)]
    lines.append(_said(layout, vs[0], values[0]))
    if layout in _CLOSING:
        lines.append(_CLOSING[layout].format(target, values[0]))
    lines.append(f"Answer: {values[0]}")
    meta = {"hops": hops, "chain": vs, "distractor_chains": distractors}
    if layout != "text":  # the evaluation's records (text layout) keep their published meta
        meta |= {"layout": layout, "value_line": _said(layout, vs[0], values[0])}
    return Example(b.text(), "\n".join(lines), str(values[0]), b.marks["gold"], "vartrack", meta)


__all__ = ["VARTRACK_LAYOUTS", "vartrack_example"]
