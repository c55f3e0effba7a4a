"""The variable-tracking task: chains of assignments ``VAR X = VAR Y.`` among distractor chains.

One generator, two layouts of the same chains:

- ``text`` (the evaluation's default): the statements sit inside filler prose, one paragraph, padded to
  `length`; the response restates the chain, then ``So VAR <asked> = <value>.`` and ``Answer: <value>``.
- ``lines`` (the hop-graph benchmark, `benchmarks/vartrack_paths.py`): no filler, one statement per
  line; the response restates the chain from the asked variable back to the value and ends with
  ``Answer: <value>``, so the answer can only reach the value sentence through the restated chain.

Gold = the chain's statements; in the ``lines`` layout ``meta["value_line"]`` is the statement that assigns
the value.
"""

from __future__ import annotations

import random

from .textgen import Example, _build, _Builder, _chars, _interleave

VARTRACK_LAYOUTS = ("text", "lines")


def _var_names(rng: random.Random, n: int) -> list[str]:
    names: list[str] = []
    while len(names) < n:
        name = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(5))
        if name not in names:
            names.append(name)
    return names


def _lines_prompt(merged: list[tuple[str, str | None]], target: str) -> _Builder:
    b = _Builder()
    b.add("Memorize the variable assignments below.")
    for text, mark in merged:
        b.add(text, mark, sep="\n")
    b.add(f"Question: what is the value of VAR {target}?", sep="\n")
    return b


def vartrack_example(seed: int, length: int | None = None, hops: int | None = None, distractors: int = 2,
                     layout: str = "text", **_) -> Example:
    """Example `seed`: a value chain of `hops` + 1 variables (2-5 by seed when None) and `distractors`
    distractor chains, laid out as `layout` (see the module docstring; `lines` ignores `length`)."""
    if layout not in VARTRACK_LAYOUTS:
        raise ValueError(f"vartrack layout must be one of {VARTRACK_LAYOUTS}, got {layout!r}")
    rng = random.Random(f"vartrack:{seed}")
    hops = hops if hops is not None else rng.randint(2, 5)
    if not 2 <= hops <= 10:
        raise ValueError(f"vartrack hops must be between 2 and 10, got {hops}")
    chains = [hops + 1] + [rng.randint(2, max(2, hops)) + 1 for _ in range(distractors)]
    names = _var_names(rng, sum(chains))
    values = rng.sample(range(10_000, 99_999), len(chains))
    statements: list[list[tuple[str, str | None]]] = []
    chain_vars: list[list[str]] = []
    pos = 0
    for c, (size, value) in enumerate(zip(chains, values)):
        vs = names[pos:pos + size]
        pos += size
        chain_vars.append(vs)
        mark = "gold" if c == 0 else "distractor"
        statements.append([(f"VAR {vs[0]} = {value}.", mark)]
                          + [(f"VAR {vs[i]} = VAR {vs[i - 1]}.", mark) for i in range(1, size)])
    merged: list[tuple[str, str | None]] = []  # random merge keeping each chain in order
    queues = [list(s) for s in statements]
    while any(queues):
        q = rng.choice([q for q in queues if q])
        merged.append(q.pop(0))
    target = chain_vars[0][-1]
    if layout == "lines":
        b = _lines_prompt(merged, target)
    else:
        body = _interleave(rng, merged, _chars(length or 384) - 160)
        header = "Memorize and track the chain(s) of variable assignments hidden in the following text."
        b = _build(header, body, f"Question: What is the value of VAR {target}?")
    vs = chain_vars[0]
    lines = [f"VAR {vs[i]} = VAR {vs[i - 1]}." for i in range(len(vs) - 1, 0, -1)]
    lines.append(f"VAR {vs[0]} = {values[0]}.")
    if layout == "text":
        lines.append(f"So VAR {target} = {values[0]}.")
    lines.append(f"Answer: {values[0]}")
    meta = {"hops": hops, "chain": vs, "distractor_chains": distractors}
    if layout == "lines":  # the evaluation's records (text layout) keep their published meta
        meta |= {"layout": layout, "value_line": f"VAR {vs[0]} = {values[0]}."}
    return Example(b.text(), "\n".join(lines), str(values[0]), b.marks["gold"], "vartrack", meta)


__all__ = ["VARTRACK_LAYOUTS", "vartrack_example"]
