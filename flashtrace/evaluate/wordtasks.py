"""Two tasks in the style of the paper's reasoning benchmarks (issue 46), generated, deterministic by seed:

- ``wordproblem`` (GSM8K-style): a multi-step word problem with products, quotients, sums and differences,
  among *distractor quantities* of the same kind (another seller's prices, last year's figures) and filler.
  Gold = the numbers the answer depends on (as ``arithmetic``).
- ``passage`` (MoreHopQA-style): a short encyclopedic passage about invented institutions and the people who
  founded them; a question that needs two or three hops and then one more step of reasoning (an age by
  subtraction, a country through a town, the older of two founders). Gold = the sentences used.

Each returns an `Example` with a templated reasoning chain ending ``Answer: ...`` (the ``templated`` protocol);
under ``paper`` and ``own`` a model writes the reasoning and `protocols.answer_is_right` checks its answer.
"""

from __future__ import annotations

import random
from typing import Callable

from ..base.errors import InputError
from .textgen import Example, PromptBuilder, add_story, chars_for

Piece = tuple[str, "str | None"]  # (text, mark): mark "gold" records the text's range as gold

# ---- wordproblem -----------------------------------------------------------------------------------

_SELLERS = ["Mia", "Omar", "Lena", "Tariq", "Rosa", "Ivan", "Nadia", "Felix", "Priya", "Hugo"]
WORDPROBLEM_KINDS = ("stand", "bakery", "trip", "savings")


def _kind(task: str, kind: str | None, kinds: tuple[str, ...], seed: int) -> str:
    """`kind`, or the seed's when None; refused when not one of `kinds`."""
    kind = kind or kinds[seed % len(kinds)]
    if kind not in kinds:
        raise InputError(f"{task} kind must be one of {kinds}, got {kind!r}")
    return kind


def _n(value: int) -> Piece:
    return (str(value), "gold")


def _stand(rng: random.Random, name: str, other: str) -> tuple[list[list[Piece]], list[str], str, list[str], int]:
    price, sat, more = rng.randint(2, 6), rng.randint(8, 30), rng.randint(3, 15)
    sun = sat + more
    earned = (sat + sun) * price
    cost = rng.randint(5, earned - 5)
    facts = [[(f"{name} sells lemonade at ", None), _n(price), (" dollars a cup.", None)],
             [("On Saturday ", None), (f"{name} sells ", None), _n(sat), (" cups.", None)],
             [("On Sunday ", None), (f"{name} sells ", None), _n(more), (" cups more than on Saturday.", None)],
             [(f"{name} spends ", None), _n(cost), (" dollars on lemons and sugar.", None)]]
    distract = [f"{other} sells iced tea at {rng.randint(2, 9)} dollars a cup.",
                f"Last summer {name} sold {rng.randint(40, 90)} cups in a whole month.",
                f"The stand is {rng.randint(10, 60)} metres from the park gate."]
    work = [f"On Sunday: {sat} + {more} = {sun} cups.", f"Both days: {sat} + {sun} = {sat + sun} cups.",
            f"Earned: {sat + sun} x {price} = {earned} dollars.", f"Left: {earned} - {cost} = {earned - cost} dollars."]
    return facts, distract, f"How many dollars does {name} have left after paying for the lemons and sugar?", work, \
        earned - cost


def _bakery(rng: random.Random, name: str, other: str) -> tuple[list[list[Piece]], list[str], str, list[str], int]:
    trays, each, box = rng.randint(3, 9), rng.randint(6, 12), rng.choice([4, 5, 6])
    total = trays * each
    boxes = rng.randint(2, (total - 2) // box)
    sold = total - boxes * box
    facts = [[(f"{name}'s bakery bakes ", None), _n(trays), (" trays of rolls, with ", None), _n(each),
              (" rolls on each tray.", None)],
             [(f"In the morning {name}'s bakery sells ", None), _n(sold), (" rolls.", None)],
             [(f"The rest of {name}'s rolls are packed into boxes of ", None), _n(box), (" rolls each.", None)]]
    distract = [f"{other}'s bakery across the road bakes {rng.randint(3, 9)} trays of muffins.",
                f"Each loaf of bread costs {rng.randint(2, 7)} dollars.",
                f"Yesterday the bakery baked {rng.randint(10, 15)} trays of rolls."]
    work = [f"Rolls baked: {trays} x {each} = {total}.", f"Left after the morning: {total} - {sold} = {total - sold}.",
            f"Boxes: {total - sold} / {box} = {boxes}."]
    return facts, distract, f"How many boxes of rolls does {name}'s bakery fill?", work, boxes


def _trip(rng: random.Random, name: str, other: str) -> tuple[list[list[Piece]], list[str], str, list[str], int]:
    v1, h1, v2, h2 = rng.randint(40, 90), rng.randint(2, 4), rng.randint(30, 80), rng.randint(2, 3)
    facts = [[(f"{name} drives at ", None), _n(v1), (" kilometres per hour for ", None), _n(h1), (" hours.", None)],
             [(f"After a break, {name} drives ", None), _n(h2), (" more hours at ", None), _n(v2),
              (" kilometres per hour.", None)]]
    distract = [f"The break lasts {rng.randint(15, 50)} minutes.",
                f"The car's tank holds {rng.randint(35, 60)} litres of fuel.",
                f"{other} drove {rng.randint(100, 300)} kilometres the day before."]
    work = [f"First part: {v1} x {h1} = {v1 * h1} km.", f"Second part: {v2} x {h2} = {v2 * h2} km.",
            f"Total: {v1 * h1} + {v2 * h2} = {v1 * h1 + v2 * h2} km."]
    return facts, distract, f"How many kilometres does {name} drive in all?", work, v1 * h1 + v2 * h2


def _savings(rng: random.Random, name: str, other: str) -> tuple[list[list[Piece]], list[str], str, list[str], int]:
    start, weekly, weeks = rng.randint(10, 60), rng.randint(5, 20), rng.randint(3, 8)
    saved = start + weekly * weeks
    price = rng.randint(10, saved - 5)
    facts = [[(f"{name} has ", None), _n(start), (" dollars saved.", None)],
             [(f"{name} saves ", None), _n(weekly), (" dollars every week for ", None), _n(weeks),
              (" weeks.", None)],
             [(f"Then {name} buys a bicycle bell for ", None), _n(price), (" dollars.", None)]]
    distract = [f"{other} saves {rng.randint(5, 20)} dollars a week.",
                f"The same bell cost {rng.randint(10, 40)} dollars last year.",
                f"The shop is {rng.randint(2, 9)} blocks from {name}'s home."]
    work = [f"Saved over the weeks: {weekly} x {weeks} = {weekly * weeks}.",
            f"Before buying: {start} + {weekly * weeks} = {saved}.", f"After buying: {saved} - {price} = {saved - price}."]
    return facts, distract, f"How many dollars does {name} have after buying the bell?", work, saved - price


_PROBLEMS: dict[str, Callable[..., tuple[list[list[Piece]], list[str], str, list[str], int]]] = {
    "stand": _stand, "bakery": _bakery, "trip": _trip, "savings": _savings}


def wordproblem_example(seed: int, length: int | None = None, kind: str | None = None, **_: object) -> Example:
    """A GSM8K-style word problem: facts in story order, distractor quantities and filler between them.

    Args:
        seed: Picks the kind (when not given), the names and every number.
        length: About how many prompt tokens (filler pads to it); None: about 200.
        kind: One of `WORDPROBLEM_KINDS`; None picks one by seed.
        **_: Other tasks' options, ignored.

    Returns:
        The example; gold = the numbers the answer depends on, meta = kind and the reasoning's steps.

    Raises:
        InputError: When `kind` is not one of `WORDPROBLEM_KINDS`.
    """
    kind = _kind("wordproblem", kind, WORDPROBLEM_KINDS, seed)
    rng = random.Random(f"wordproblem:{seed}")
    name, other = rng.sample(_SELLERS, 2)
    facts, distract, question, work, answer = _PROBLEMS[kind](rng, name, other)
    pieces: list[list[Piece]] = [facts[0]]  # the story's first fact first, then facts in order with the rest between
    rest = [[(d, None)] for d in distract]
    rng.shuffle(rest)
    for fact in facts[1:]:
        if rest and rng.random() < 0.6:
            pieces.append(rest.pop())
        pieces.append(fact)
    pieces += rest
    b = PromptBuilder()
    b.add("Solve the word problem below. Some of the numbers are not needed.")
    add_story(b, pieces, random.Random(f"wordproblem-fill:{seed}"), chars_for(length or 200) - 300)
    b.add(f"Question: {question}", sep="\n\n")
    return Example(b.text(), "\n".join(work + [f"Answer: {answer}"]), str(answer), b.marks["gold"], "wordproblem",
                   {"kind": kind, "steps": len(work)})


# ---- passage ---------------------------------------------------------------------------------------

_ORGS = ["Harlow Institute", "Brennan Library", "Castell Observatory", "Vane Botanical Garden", "Orrin Conservatory",
         "Tamsin Museum", "Ludow Academy", "Merrow Theatre", "Ashcombe Archive", "Kelby Orchestra"]
_FOUNDERS = [("Mira", "she"), ("Edwin", "he"), ("Clara", "she"), ("Jonas", "he"), ("Beatrix", "she"), ("Aldo", "he"),
             ("Ines", "she"), ("Rupert", "he"), ("Sofia", "she"), ("Tobias", "he")]
_SURNAMES = ["Marsh", "Weyland", "Orme", "Pritchard", "Lisle", "Darrow", "Fenwick", "Hale", "Quayle", "Strand"]
_TOWNS = ["Weyford", "Ostwick", "Pellham", "Rudby", "Sallow", "Tinmouth", "Ambry", "Corran"]
_LANDS = ["Zandoria", "Kyrenia", "Valdor", "Mirethia", "Tasmor"]
_SUBJECTS = ["botany", "law", "music", "astronomy", "medicine", "history"]
PASSAGE_KINDS = ("age", "country", "older")


def _people(rng: random.Random, n: int) -> tuple[list[dict], dict[str, str]]:
    """`n` founders (name, pronoun, birth year and town, a later move, their institution and its founding year)
    and the country of every town."""
    firsts, lasts, born = rng.sample(_FOUNDERS, n), rng.sample(_SURNAMES, n), rng.sample(range(1820, 1900), n)
    people = [{"name": f"{f} {s}", "pron": p, "born": b, "town": home, "moved": b + rng.randint(18, 40),
               "to": rng.choice([t for t in _TOWNS if t != home]), "subject": rng.choice(_SUBJECTS), "org": org,
               "founded": b + rng.randint(25, 60)}
              for (f, p), s, b, org, home in zip(firsts, lasts, born, rng.sample(_ORGS, n), rng.choices(_TOWNS, k=n))]
    return people, {t: rng.choice(_LANDS) for t in _TOWNS}


def _org_paragraph(p: dict, rng: random.Random) -> list[tuple[str, str]]:
    return [(f"The {p['org']}, in {rng.choice(_TOWNS)}, was founded in {p['founded']} by {p['name']}.", "founded"),
            (f"It holds {rng.randint(2, 90)} thousand items and employs {rng.randint(5, 80)} people.", "other")]


def _person_paragraph(p: dict) -> list[tuple[str, str]]:
    return [(f"{p['name']} was born in {p['born']} in {p['town']}.", "born"),
            (f"{p['pron'].capitalize()} studied {p['subject']} and in {p['moved']} moved to {p['to']}.", "other")]


def _passage_question(kind: str, people: list[dict], lands: dict[str, str]
                      ) -> tuple[str, str, list[str], set[tuple[int, str]]]:
    """The question, answer, templated reasoning and the (person, sentence kind) pairs it uses."""
    a, b = people[0], people[1]
    if kind == "age":
        age = a["founded"] - a["born"]
        return (f"How old was the founder of the {a['org']} when it was founded?", str(age),
                [f"The {a['org']} was founded in {a['founded']} by {a['name']}.", f"{a['name']} was born in {a['born']}.",
                 f"{a['founded']} - {a['born']} = {age}."], {(0, "founded"), (0, "born")})
    if kind == "country":
        land = lands[a["town"]]
        return (f"In which country was the founder of the {a['org']} born?", land,
                [f"The {a['org']} was founded by {a['name']}.", f"{a['name']} was born in {a['town']}.",
                 f"{a['town']} is a town in {land}."], {(0, "founded"), (0, "born"), (0, "town")})
    older = a if a["born"] < b["born"] else b
    return (f"Who was born first, the founder of the {a['org']} or the founder of the {b['org']}?", older["name"],
            [f"The {a['org']} was founded by {a['name']}, born in {a['born']}.",
             f"The {b['org']} was founded by {b['name']}, born in {b['born']}.",
             f"{min(a['born'], b['born'])} is earlier than {max(a['born'], b['born'])}."],
            {(0, "founded"), (0, "born"), (1, "founded"), (1, "born")})


def _paragraphs(rng: random.Random, people: list[dict], lands: dict[str, str], used: set[tuple[int, str]], kind: str,
                budget: int) -> list[list[Piece]]:
    """The passage's paragraphs in a shuffled order: the ones the answer needs (their used sentences marked gold), two
    others always and more while `budget` characters allow."""
    paragraphs = []
    for i, p in enumerate(people):
        paragraphs += [[(t, "gold" if (i, k) in used else None) for t, k in _org_paragraph(p, rng)],
                       [(t, "gold" if (i, k) in used else None) for t, k in _person_paragraph(p)]]
    towns = sorted({p["town"] for p in people} | {p["to"] for p in people})
    paragraphs.append([(f"{t} is a town in {lands[t]}.",
                        "gold" if kind == "country" and t == people[0]["town"] else None) for t in towns])
    keep = {i for i, par in enumerate(paragraphs) if any(m for _, m in par)}
    others = sorted(set(range(len(paragraphs))) - keep, key=lambda _: rng.random())
    for n, i in enumerate(others):  # two distractor paragraphs always, more while they fit
        if n < 2 or sum(len(t) + 1 for j in keep | {i} for t, _ in paragraphs[j]) <= budget:
            keep.add(i)
    return [paragraphs[i] for i in sorted(keep, key=lambda _: rng.random())]


def passage_example(seed: int, length: int | None = None, kind: str | None = None, **_: object) -> Example:
    """A MoreHopQA-style question over a short passage about invented institutions and their founders.

    Args:
        seed: Picks the kind (when not given), the people, places and years.
        length: About how many prompt tokens; paragraphs about other institutions and people fill it (the ones
            the answer needs and two others always stay). None: about 300.
        kind: ``age`` (founder's age at the founding: founder, birth year, a subtraction), ``country`` (founder,
            birth town, the town's country) or ``older`` (two founders' birth years compared); None picks by seed.
        **_: Other tasks' options, ignored.

    Returns:
        The example; gold = the sentences the answer uses, meta = kind and hops.

    Raises:
        InputError: When `kind` is not one of `PASSAGE_KINDS`.
    """
    kind = _kind("passage", kind, PASSAGE_KINDS, seed)
    rng = random.Random(f"passage:{seed}")
    people, lands = _people(rng, 6)
    question, answer, lines, used = _passage_question(kind, people, lands)
    order = _paragraphs(rng, people, lands, used, kind, chars_for(length or 300) - 250)
    b = PromptBuilder()
    b.add("Read the passage and answer the question.")
    for paragraph in order:
        for j, (text, mark) in enumerate(paragraph):
            b.add(text, mark, sep="\n\n" if j == 0 else " ")
    b.add(f"Question: {question}", sep="\n\n")
    return Example(b.text(), "\n".join(lines + [f"Answer: {answer}"]), answer, b.marks["gold"], "passage",
                   {"kind": kind, "hops": {"age": 2, "country": 3, "older": 2}[kind]})


__all__ = ["WORDPROBLEM_KINDS", "PASSAGE_KINDS", "wordproblem_example", "passage_example"]
