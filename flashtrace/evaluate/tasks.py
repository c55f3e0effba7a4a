"""Synthetic evaluation tasks with gold prompt spans, deterministic by seed, no downloads.

Every task returns an `Example`: a prompt, a templated reasoning chain ending in an ``Answer: ...``
line (teacher-forced, as the paper teacher-forces reasoning from an external model), the answer,
and the *gold* character ranges of the prompt that the answer depends on.

Tasks (`TASKS`):

- ``needle``: special magic numbers hidden in filler text; variants ``single``, ``multikey``
  (distractor needles with other keys), ``multivalue`` (several values for one key, all asked),
  ``multiquery`` (two keys asked). Gold = the queried needle sentences.
- ``vartrack``: chains of assignments ``VAR X = VAR Y.`` (2 to 10 hops) among distractor chains;
  asks the value of the chain's last variable. Gold = the chain's statements. Layout ``text`` (in filler
  prose, the default) or ``lines`` (one statement per line, the hop-graph benchmark's form); see `vartrack`.
- ``multihop``: a synthetic knowledge text (people → birth cities → countries → populations); a
  2-hop question with a letter count, or a 3-hop comparison of two people. Gold = the facts used.
- ``arithmetic``: a 2-4 step word problem among distractor quantities and filler sentences.
  Gold = the quantities the answer depends on (the numbers only).
- ``wordproblem`` (GSM8K-style) and ``passage`` (MoreHopQA-style): see `flashtrace.evaluate.wordtasks`.

`length` is the approximate prompt length in tokens (about 4 characters per token); the prompt is
padded with filler (or distractor facts) up to it. `make_example(task, seed)` is reproducible:
the same arguments always give the same example.
"""

from __future__ import annotations

from dataclasses import dataclass

import json
import random
from pathlib import Path
from typing import Callable

from .textgen import CharRange, Example, add_story, build_prompt, chars_for, PromptBuilder, interleave, filler_sentence
from .vartrack import VARTRACK_LAYOUTS, vartrack_example
from .wordtasks import passage_example, wordproblem_example
from ..base.errors import InputError

# ---- needle -------------------------------------------------------------------------------------

_KEY_A = ["amber", "silent", "crimson", "frozen", "gentle", "hollow", "ivory", "lucky", "misty", "rapid", "velvet",
          "wild", "golden", "quiet", "bright"]
_KEY_B = ["falcon", "harbor", "meadow", "lantern", "glacier", "orchid", "compass", "thunder", "willow", "canyon",
          "pebble", "comet", "saddle", "beacon", "fjord"]
NEEDLE_VARIANTS = ("single", "multikey", "multivalue", "multiquery")


def _needle(seed: int, length: int | None = None, variant: str | None = None, **_) -> Example:
    rng = random.Random(f"needle:{seed}")
    variant = variant or NEEDLE_VARIANTS[seed % len(NEEDLE_VARIANTS)]
    if variant not in NEEDLE_VARIANTS:
        raise InputError(f"needle variant must be one of {NEEDLE_VARIANTS}, got {variant!r}")
    keys = []
    while len(keys) < 4:
        k = f"{rng.choice(_KEY_A)}-{rng.choice(_KEY_B)}"
        if k not in keys:
            keys.append(k)
    values = rng.sample(range(1_000_000, 9_999_999), 4)
    sentence = "One of the special magic numbers for {} is: {}."
    if variant == "single":
        needles, asked = [(keys[0], values[0])], [keys[0]]
    elif variant == "multikey":
        needles, asked = [(k, v) for k, v in zip(keys, values)], [keys[0]]
    elif variant == "multivalue":
        needles, asked = [(keys[0], v) for v in values[:3]], [keys[0]]
    else:
        needles, asked = [(keys[0], values[0]), (keys[1], values[1])], keys[:2]
    rng.shuffle(needles)
    items = [(sentence.format(k, v), "gold" if k in asked else "distractor") for k, v in needles]
    body = interleave(rng, items, chars_for(length or 512) - 200)
    header = "Some special magic numbers are hidden inside the following text. Make sure to memorize them."
    question = (f"Question: What {'are all the special magic numbers' if variant == 'multivalue' else 'is the special magic number'}"
                f" for {' and for '.join(asked)} mentioned in the provided text?")
    b = build_prompt(header, body, question)
    found = [(k, v) for k, v in needles if k in asked]
    if variant == "multiquery":
        found.sort(key=lambda kv: asked.index(kv[0]))
    answer = ", ".join(str(v) for _, v in found)
    lines = [f"I look for the special magic number{'s' if len(found) > 1 else ''} for {' and '.join(asked)} in the text."]
    lines += [f'The text says: "{sentence.format(k, v)}"' for k, v in found]
    response = "\n".join(lines + [f"Answer: {answer}"])
    return Example(b.text(), response, answer, b.marks["gold"], "needle",
                   {"variant": variant, "keys": asked, "distractors": len(b.marks.get("distractor", []))})


# ---- multi-hop facts ----------------------------------------------------------------------------

_PEOPLE = ["Alric", "Brenna", "Corvin", "Dalia", "Emeric", "Fenna", "Gideon", "Halia", "Ivor", "Jessa", "Kellan",
           "Liora", "Marek", "Nessa", "Orin", "Pella", "Quill", "Rowena", "Soren", "Tamsin"]
_CITIES = ["Velmora", "Quenby", "Ashcombe", "Thornwick", "Brisa", "Calder", "Dunmere", "Elvaston", "Farrow",
           "Glenholt", "Hesket", "Irvale", "Jorwick", "Kestrel", "Lunby", "Marlow"]
_COUNTRIES = ["Zandoria", "Ostrava", "Pelland", "Kyrenia", "Valdor", "Mirethia", "Tasmor", "Ulvenia", "Norrath",
              "Belgrast"]


@dataclass(frozen=True)
class _World:
    """A multihop task's facts: where each person was born, each city's country, each country's population."""

    people: list[str]
    city_of: dict[str, str]
    country_of: dict[str, str]
    pops: dict[str, int]

    def born(self, p: str) -> str:
        return f"{p} was born in {self.city_of[p]}."

    def located(self, c: str) -> str:
        return f"{c} is a city in {self.country_of[c]}."

    def pop(self, k: str) -> str:
        return f"{k} has a population of {self.pops[k]} million."

    def home(self, p: str) -> str:
        """The country `p` was born in."""
        return self.country_of[self.city_of[p]]

    def chain(self, p: str, kind: str) -> list[str]:
        """The facts that answer for `p`: birth city, its country, and (comparing) that country's population."""
        return [self.born(p), self.located(self.city_of[p])] + ([self.pop(self.home(p))] if kind == "compare" else [])


def _world(rng: random.Random) -> _World:
    people, cities, countries = rng.sample(_PEOPLE, 12), rng.sample(_CITIES, 10), rng.sample(_COUNTRIES, 6)
    city_of = {p: rng.choice(cities) for p in people}
    country_of = {c: rng.choice(countries) for c in cities}
    return _World(people, city_of, country_of, dict(zip(countries, rng.sample(range(2, 90), len(countries)))))


def _multihop_reasoning(world: _World, kind: str, asked: list[str]) -> tuple[str, str, list[str]]:
    """The question, the answer and the templated reasoning lines of a count or compare question."""
    if kind == "count":
        p = asked[0]
        country, answer = world.home(p), str(len(world.home(p)))
        return (f"Question: How many letters are in the name of the country where {p} was born?", answer,
                world.chain(p, kind) + [f"The name {country} has {answer} letters."])
    best = max(asked, key=lambda q: world.pops[world.home(q)])
    a, c = (world.pops[world.home(q)] for q in asked)
    lines = [line for q in asked for line in world.chain(q, kind)]
    lines.append(f"{max(a, c)} million is more than {min(a, c)} million, so the answer is {best}.")
    return f"Question: Who was born in the country with the larger population, {asked[0]} or {asked[1]}?", best, lines


def _multihop(seed: int, length: int | None = None, kind: str | None = None, **_) -> Example:
    rng = random.Random(f"multihop:{seed}")
    kind = kind or ("count", "compare")[seed % 2]
    if kind not in ("count", "compare"):
        raise InputError(f"multihop kind must be 'count' or 'compare', got {kind!r}")
    world = _world(rng)
    people = world.people
    asked = [people[0]]
    if kind == "compare":  # two people born in different countries
        asked.append(next(p for p in people[1:] if world.home(p) != world.home(people[0])))
    needed = {line for p in asked for line in world.chain(p, kind)}
    facts = list(dict.fromkeys([*map(world.born, people), *map(world.located, world.country_of),
                                *map(world.pop, world.pops)]))
    rng.shuffle(facts)
    budget = chars_for(length or 256) - 200
    items, used = [], 0
    for f in facts:  # needed facts always, distractor facts while they fit
        if f in needed or used + len(f) < budget:
            items.append((f, "gold" if f in needed else "distractor"))
            used += len(f) + 1
    body = interleave(rng, items, budget)
    question, answer, lines = _multihop_reasoning(world, kind, asked)
    b = build_prompt("Read the following facts about people, cities and countries.", body, question)
    return Example(b.text(), "\n".join(lines + [f"Answer: {answer}"]), answer, b.marks["gold"], "multihop",
                   {"kind": kind, "people": asked, "hops": 2 if kind == "count" else 3})


# ---- arithmetic word problems -------------------------------------------------------------------

_NAMES = ["Ann", "Ben", "Cleo", "Dev", "Eli", "Faye", "Gus", "Hana", "Ivan", "Jade", "Kofi", "Lena"]
_ITEMS = ["apples", "marbles", "stickers", "pencils", "cookies", "stamps", "shells", "coins"]
_DISTRACT = ["The shop down the street sells {} kinds of bread.", "Their neighbour keeps {} goldfish in a pond.",
             "The bus to school takes {} minutes.", "The park has {} benches along the path.",
             "Their cousin is {} years old.", "The library closes after {} visitors on Sundays."]


def _arithmetic(seed: int, length: int | None = None, steps: int | None = None, **_) -> Example:
    rng = random.Random(f"arithmetic:{seed}")
    steps = steps if steps is not None else rng.randint(2, 4)
    if not 2 <= steps <= 4:
        raise InputError(f"arithmetic steps must be between 2 and 4, got {steps}")
    name, friend = rng.sample(_NAMES, 2)
    item = rng.choice(_ITEMS)
    total = rng.randint(10, 40)
    sentences: list[list[tuple[str, str | None]]] = [[(f"{name} has ", None), (str(total), "gold"), (f" {item}.", None)]]
    work = []
    for _ in range(steps - 1):
        op = rng.choice(["buy", "give", "boxes"] if total > 12 else ["buy", "boxes"])
        if op == "buy":
            n = rng.randint(3, 25)
            parts = [("Then they buy ", None), (str(n), "gold"), (f" more {item}.", None)]
            work.append(f"{total} + {n} = {total + n}.")
            total += n
        elif op == "give":
            n = rng.randint(2, total - 5)
            parts = [("They give ", None), (str(n), "gold"), (f" {item} to {friend}.", None)]
            work.append(f"{total} - {n} = {total - n}.")
            total -= n
        else:
            n, each = rng.randint(2, 5), rng.randint(2, 9)
            parts = [("They receive ", None), (str(n), "gold"), (" boxes with ", None), (str(each), "gold"),
                     (f" {item} in each box.", None)]
            work.append(f"{n} x {each} = {n * each}, and {total} + {n * each} = {total + n * each}.")
            total += n * each
        sentences.append(parts)
    distract = [[(t.format(rng.randint(3, 60)), None)] for t in rng.sample(_DISTRACT, 3)]
    story = sentences + distract
    order = sorted(range(len(story)), key=lambda i: (i if i < len(sentences) else rng.uniform(0, len(sentences))))
    b = PromptBuilder()
    b.add("Solve the word problem in the text below.")
    add_story(b, [story[i] for i in order], random.Random(f"arithmetic-fill:{seed}"), chars_for(length or 200) - 250)
    b.add(f"Question: How many {item} does {name} have now?", sep="\n\n")
    response = "\n".join([f"{name} starts with {sentences[0][1][0]} {item}."] + work + [f"Answer: {total}"])
    return Example(b.text(), response, str(total), b.marks["gold"], "arithmetic", {"steps": steps, "item": item})


TASKS: dict[str, Callable[..., Example]] = {
    "needle": _needle,
    "vartrack": vartrack_example,
    "multihop": _multihop,
    "arithmetic": _arithmetic,
    "wordproblem": wordproblem_example,
    "passage": passage_example,
}


def make_example(task: str, seed: int, length: int | None = None, **options: int | str | None) -> Example:
    """Build example `seed` of `task` ("needle", "vartrack", "multihop", "arithmetic").

    Args:
        task: The task family, a key of `TASKS`.
        seed: The example's seed (the same arguments always give the same example).
        length: Approximate prompt length in tokens (task default when None).
        **options: Task options: needle ``variant``; vartrack ``hops`` (2-10), ``distractors``, ``layout``
            ("text"/"lines"); multihop ``kind`` ("count"/"compare"); arithmetic ``steps`` (2-4). Unset options
            vary with the seed.

    Returns:
        The example: prompt, templated reasoning and answer, the answer, and the gold character ranges.

    Raises:
        InputError: When `task` is unknown; the task raises it for an option out of range.
    """
    try:
        build = TASKS[task]
    except KeyError:
        raise InputError(f"unknown task '{task}'; available: {', '.join(TASKS)}") from None
    return build(seed, length=length, **options)


def load_jsonl(path: str | Path) -> list[Example]:
    """Read user examples, one JSON object per line: ``prompt``, ``response`` (required), optional
    ``answer``, ``gold`` (list of ``[start, end]`` character ranges in the prompt) or ``gold_text``
    (list of prompt substrings; the first occurrence of each is used), ``task`` and ``meta``.

    Args:
        path: The JSON Lines file (blank lines are skipped).

    Returns:
        The examples, in file order (each example's ``meta`` gets its ``line`` number).

    Raises:
        InputError: When a line is not valid JSON, lacks a non-empty ``prompt`` or ``response``, has a
            ``gold_text`` not in the prompt or a ``gold`` range outside it, or the file has no example.
    """
    examples = []
    for lineno, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
        prompt, response = row.get("prompt"), row.get("response")
        if not isinstance(prompt, str) or not isinstance(response, str) or not prompt.strip() or not response.strip():
            raise InputError(f"{path}:{lineno}: 'prompt' and 'response' must be non-empty strings")
        gold = [tuple(int(x) for x in g) for g in row.get("gold", [])]
        for text in row.get("gold_text", []):
            at = prompt.find(text)
            if at < 0:
                raise InputError(f"{path}:{lineno}: gold_text {text[:40]!r} is not in the prompt")
            gold.append((at, at + len(text)))
        for a, b in gold:
            if not 0 <= a < b <= len(prompt):
                raise InputError(f"{path}:{lineno}: gold range {a}:{b} is outside the prompt (0..{len(prompt)})")
        examples.append(Example(prompt, response, str(row.get("answer", "")), gold, str(row.get("task", "jsonl")),
                                dict(row.get("meta", {}), line=lineno)))
    if not examples:
        raise InputError(f"{path}: no examples")
    return examples


__all__ = ["Example", "TASKS", "NEEDLE_VARIANTS", "VARTRACK_LAYOUTS", "make_example", "load_jsonl", "filler_sentence"]
