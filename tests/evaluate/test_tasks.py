"""Task generators: gold spans at the stated offsets, answers that follow from the prompt, reproducible seeds."""

import json
import re

import pytest

from flashtrace.evaluate.tasks import NEEDLE_VARIANTS, TASKS, load_jsonl, make_example
from flashtrace.engine.inputs import detect_spans

SEEDS = range(12)


def _solve_needle(ex):
    keys = re.search(r"for (.+) mentioned", ex.prompt).group(1).split(" and for ")
    found = {k: re.findall(rf"magic numbers for {re.escape(k)} is: (\d+)\.", ex.prompt) for k in keys}
    return ", ".join(v for k in keys for v in found[k])


def _solve_vartrack(ex):
    var = re.search(r"value of VAR (\w+)\?", ex.prompt).group(1)
    assign = dict(re.findall(r"VAR (\w+) = (?:VAR )?(\w+)\.", ex.prompt))
    hops = 0
    while not assign[var].isdigit():
        var, hops = assign[var], hops + 1
    assert hops == ex.meta["hops"]
    return assign[var]


def _solve_multihop(ex):
    city = dict(re.findall(r"(\w+) was born in (\w+)\.", ex.prompt))
    country = dict(re.findall(r"(\w+) is a city in (\w+)\.", ex.prompt))
    pop = {k: int(v) for k, v in re.findall(r"(\w+) has a population of (\d+) million", ex.prompt)}
    m = re.search(r"country where (\w+) was born", ex.prompt)
    if m:
        return str(len(country[city[m.group(1)]]))
    a, b = re.search(r"population, (\w+) or (\w+)\?", ex.prompt).groups()
    return max((a, b), key=lambda p: pop[country[city[p]]])


def _solve_arithmetic(ex):
    name = re.search(r"does (\w+) have now", ex.prompt).group(1)
    total = int(re.search(rf"{name} has (\d+) ", ex.prompt).group(1))
    for m in re.finditer(r"buy (\d+) more|give (\d+) |receive (\d+) boxes with (\d+)", ex.prompt):
        buy, give, boxes, each = m.groups()
        total += int(buy) if buy else -int(give) if give else int(boxes) * int(each)
    return str(total)


def _ints(pattern, text):
    return [int(v) for v in re.search(pattern, text).groups()]


def _solve_wordproblem(ex):
    """Each kind solved from its sentences alone; the distractor quantities match none of these patterns."""
    p = ex.prompt
    if "lemonade" in p:
        (price,), (sat,), (more,), (cost,) = (_ints(r"lemonade at (\d+) dollars", p), _ints(r"Saturday \w+ sells (\d+)", p),
                                              _ints(r"sells (\d+) cups more", p), _ints(r"spends (\d+) dollars", p))
        return str((2 * sat + more) * price - cost)
    if "rolls" in p:
        trays, each = _ints(r"bakes (\d+) trays of rolls, with (\d+)", p)
        (sold,), (box,) = _ints(r"morning \w+'s bakery sells (\d+)", p), _ints(r"boxes of (\d+) rolls", p)
        assert (trays * each - sold) % box == 0
        return str((trays * each - sold) // box)
    if "kilometres per hour" in p:
        v1, h1 = _ints(r"drives at (\d+) kilometres per hour for (\d+) hours", p)
        h2, v2 = _ints(r"drives (\d+) more hours at (\d+)", p)
        return str(v1 * h1 + v2 * h2)
    (start,), (weekly, weeks), (price,) = (_ints(r"has (\d+) dollars saved", p), _ints(r"saves (\d+) dollars every "
                                          r"week for (\d+) weeks", p), _ints(r"bell for (\d+) dollars", p))
    return str(start + weekly * weeks - price)


def _solve_passage(ex):
    """Founder, birth year and town, and the town's country read from the passage's sentences."""
    founder = {org: (int(year), name) for org, year, name in
               re.findall(r"The ([A-Z][\w ]+?), in \w+, was founded in (\d+) by (\w+ \w+)\.", ex.prompt)}
    born = {name: (int(year), town) for name, year, town in re.findall(r"(\w+ \w+) was born in (\d+) in (\w+)\.",
                                                                          ex.prompt)}
    land = dict(re.findall(r"(\w+) is a town in (\w+)\.", ex.prompt))
    question = ex.prompt.rsplit("Question: ", 1)[1]
    if m := re.match(r"How old was the founder of the (.+) when", question):
        year, name = founder[m.group(1)]
        return str(year - born[name][0])
    if m := re.match(r"In which country was the founder of the (.+) born", question):
        return land[born[founder[m.group(1)][1]][1]]
    a, b = re.match(r"Who was born first, the founder of the (.+) or the founder of the (.+)\?", question).groups()
    return min((founder[a][1], founder[b][1]), key=lambda name: born[name][0])


SOLVERS = {"needle": _solve_needle, "vartrack": _solve_vartrack, "multihop": _solve_multihop,
           "arithmetic": _solve_arithmetic, "wordproblem": _solve_wordproblem, "passage": _solve_passage}


def test_task_names():
    assert set(TASKS) == {"needle", "vartrack", "multihop", "arithmetic", "wordproblem", "passage"}


@pytest.mark.parametrize("task", list(TASKS))
def test_answer_follows_from_prompt(task):
    for seed in SEEDS:
        ex = make_example(task, seed, length=300)
        assert SOLVERS[task](ex) == ex.answer, (task, seed)
        spans = detect_spans(ex.response)
        assert ex.response[slice(*spans.answer)] == ex.answer
        assert spans.reasoning is not None


@pytest.mark.parametrize("task", list(TASKS))
def test_gold_spans_in_prompt(task):
    for seed in SEEDS:
        ex = make_example(task, seed, length=300)
        assert ex.gold and ex.task == task
        for (a, b), text in zip(ex.gold, ex.gold_texts()):
            assert 0 <= a < b <= len(ex.prompt) and text == ex.prompt[a:b] and text.strip() == text
        joined = " ".join(ex.gold_texts())
        if task == "needle":
            for value in ex.answer.split(", "):
                assert value in joined
            assert all(k in joined for k in ex.meta["keys"])
        elif task == "vartrack":
            assert len(ex.gold) == ex.meta["hops"] + 1 and ex.answer in joined
            assert all(f"VAR {v} " in joined for v in ex.meta["chain"])
        elif task == "multihop":
            assert len(ex.gold) == (2 if ex.meta["kind"] == "count" else 6)
            assert all(p in joined for p in ex.meta["people"])
        elif task == "wordproblem":  # gold = every number the reasoning starts from, and nothing else
            inputs, results = set(), set()
            for a, op, b, c in re.findall(r"(\d+) ([-+x/]) (\d+) = (\d+)", ex.response):
                assert c == str({"+": int(a) + int(b), "-": int(a) - int(b), "x": int(a) * int(b),
                                 "/": int(a) // int(b)}[op])
                inputs |= {a, b} - results
                results.add(c)
            assert set(ex.gold_texts()) == inputs
        elif task == "passage":  # gold = the sentences the question's hops read, and nothing else
            assert len(ex.gold) == {"age": 2, "country": 3, "older": 4}[ex.meta["kind"]]
            assert all(re.search(r"was founded in|was born in|is a town in", t) for t in ex.gold_texts())
        else:
            assert all(t.isdigit() for t in ex.gold_texts())
            assert ex.response.splitlines()[0].split(" starts with ")[1].split()[0] == ex.gold_texts()[0]


@pytest.mark.parametrize("task", list(TASKS))
def test_seeds_reproduce_and_differ(task):
    a, b, c = make_example(task, 3, length=300), make_example(task, 3, length=300), make_example(task, 4, length=300)
    assert a == b
    assert a.prompt != c.prompt


@pytest.mark.parametrize("length", [256, 1024, 4096])
def test_length_scales(length):
    ex = make_example("needle", 0, length=length)
    assert 0.6 * length < len(ex.prompt) / 4 < 1.3 * length


def test_options_and_errors():
    for v in NEEDLE_VARIANTS:
        ex = make_example("needle", 0, variant=v)
        assert ex.meta["variant"] == v
        assert len(ex.gold) == {"single": 1, "multikey": 1, "multivalue": 3, "multiquery": 2}[v]
    assert make_example("vartrack", 0, hops=10).meta["hops"] == 10
    assert make_example("arithmetic", 1, steps=4).meta["steps"] == 4
    assert make_example("multihop", 0, kind="compare").meta["kind"] == "compare"
    assert make_example("wordproblem", 0, kind="trip").meta["kind"] == "trip"
    assert make_example("passage", 0, kind="older").meta["kind"] == "older"
    with pytest.raises(ValueError, match="wordproblem kind"):
        make_example("wordproblem", 0, kind="stocks")
    with pytest.raises(ValueError, match="passage kind"):
        make_example("passage", 0, kind="date")
    with pytest.raises(ValueError, match="unknown task"):
        make_example("nope", 0)
    with pytest.raises(ValueError, match="hops"):
        make_example("vartrack", 0, hops=11)


def test_vartrack_layouts_lay_out_the_same_chains():
    """One generator: the `lines` layout (the hop-graph benchmark's) holds the same chains and answer as the
    evaluation's `text` layout, one statement per line, no filler, no closing "So" line."""
    for seed in SEEDS:
        text, lines = make_example("vartrack", seed), make_example("vartrack", seed, layout="lines")
        assert lines.answer == text.answer and lines.meta["chain"] == text.meta["chain"]
        assert lines.gold_texts() == text.gold_texts() and _solve_vartrack(lines) == lines.answer
        statements = re.findall(r"VAR \w+ = (?:VAR )?\w+\.", text.prompt)
        assert lines.prompt.splitlines()[1:-1] == statements  # header, statements, question
        assert lines.meta["value_line"] == lines.gold_texts()[0] and lines.meta["value_line"] in lines.prompt.splitlines()
        assert text.response.splitlines()[-2].startswith("So VAR ") and not lines.response.count("So VAR")
        assert lines.response.splitlines() == [s for s in text.response.splitlines() if not s.startswith("So VAR ")]
    with pytest.raises(ValueError, match="layout"):
        make_example("vartrack", 0, layout="table")


def _solve_locker_codes(ex) -> str:
    """The asked person's code, followed through the prompt's sentences alone."""
    given = dict(re.findall(r"(\w+)'s locker code is (\d+)\.", ex.prompt))
    copied = dict(re.findall(r"(\w+)'s locker code is the same as (\w+)'s\.", ex.prompt))
    name = re.search(r"What is (\w+)'s locker code\?", ex.prompt).group(1)
    while name in copied:
        name = copied[name]
    return given[name]


def test_vartrack_in_words_is_a_chain_of_people_without_variable_jargon():
    for seed in SEEDS:
        ex = make_example("vartrack", seed, length=200, layout="words")
        assert "VAR" not in ex.prompt and _solve_locker_codes(ex) == ex.answer
        chain = ex.meta["chain"]
        assert ex.gold_texts()[0] == f"{chain[0]}'s locker code is {ex.answer}." == ex.meta["value_line"]
        assert ex.gold_texts()[1:] == [f"{b}'s locker code is the same as {a}'s." for a, b in zip(chain, chain[1:])]
        assert ex.response.splitlines()[-1] == f"Answer: {ex.answer}"
    with pytest.raises(ValueError, match="at most 40 people"):
        make_example("vartrack", 0, layout="words", hops=10, distractors=4)


def test_load_jsonl(tmp_path):
    path = tmp_path / "ex.jsonl"
    rows = [{"prompt": "Paris is in France. Rome is in Italy. Where is Rome?", "response": "Answer: Italy",
             "gold_text": ["Rome is in Italy."]},
            {"prompt": "abc def", "response": "x\nAnswer: y", "gold": [[4, 7]], "answer": "y"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    exs = load_jsonl(path)
    assert exs[0].gold_texts() == ["Rome is in Italy."] and exs[0].task == "jsonl"
    assert exs[1].gold_texts() == ["def"] and exs[1].answer == "y"
    path.write_text(json.dumps({"prompt": "abc", "response": "r", "gold": [[0, 9]]}))
    with pytest.raises(ValueError, match="outside the prompt"):
        load_jsonl(path)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_jsonl(path)


@pytest.mark.parametrize("task", ["wordproblem", "passage"])
def test_paper_style_tasks_cycle_through_their_kinds_and_hold_distractors(task):
    """GSM8K- and MoreHopQA-style tasks: every kind appears over four seeds, and the prompt holds numbers the answer
    does not use (distractor quantities, other founders' years) beside the gold ones."""
    examples = [make_example(task, seed) for seed in range(4)]
    assert len({ex.meta["kind"] for ex in examples}) == (4 if task == "wordproblem" else 3)
    for ex in examples:
        outside = "".join(" " if any(a <= i < b for a, b in ex.gold) else c for i, c in enumerate(ex.prompt))
        assert len(re.findall(r"\d+", outside)) >= 3, ex.prompt


@pytest.mark.parametrize("task", ["wordproblem", "passage"])
def test_the_checker_takes_the_templated_answer_and_refuses_another(task):
    """`answer_is_right` (the own/paper protocols' checker) accepts each example's templated response and refuses the
    same response with a different answer."""
    from flashtrace.evaluate.protocols import answer_is_right

    for seed in SEEDS:
        ex = make_example(task, seed)
        assert answer_is_right(ex.response, ex.prompt, ex.answer)
        wrong = ex.response.rsplit("Answer: ", 1)[0] + "Answer: " + ("999" if ex.answer.isdigit() else "Nobody")
        assert not answer_is_right(wrong, ex.prompt, ex.answer)
