"""What the Hop graph page and the HTML export say about the graph, in words (plain text): what its influences
measure against the trace's own scores, and why drawn evidence paths skip the reasoning when they all do."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .facts import OF_PROMPT, TraceFacts
from .text import points, quote

if TYPE_CHECKING:
    from .graph import HopPath


def graph_words(facts: TraceFacts) -> str:
    """What the hop graph's influences measure, and how far they are from the trace's own scores (which
    rank the evidence on every page); empty for a trace without a graph.

    Args:
        facts: The trace's facts (`analyse`), with its graph facts.

    Returns:
        The sentences, or an empty string for a trace without a graph.
    """
    g = facts.graph
    if g is None:
        return ""
    if g.agrees:
        return ("The graph's prompt influences equal the trace's final scores per sentence (within 1e-6), so both "
                "rank the evidence the same way.")
    text = ("Node sizes follow the step graph: each reasoning step is attributed on its own and the answer's "
            "attribution is followed along every path. That is a different quantity from the trace's hop scores, "
            f"which rank the evidence on every page; here the two differ by up to {points(g.difference)} per "
            f"sentence (as shares {OF_PROMPT})")
    if g.same_top or g.top is None or facts.final.top is None:
        return text + " and agree on the top sentence."
    return (text + f": the graph puts {quote(facts.pieces[g.top].text, 50)} first, the hop scores "
            f"{quote(facts.pieces[facts.final.top].text, 50)}.")


def path_words(paths: list[HopPath | None]) -> str:
    """Why the drawn evidence paths skip the reasoning, when they all do.

    Args:
        paths: `HopPath`s from the answer, or None where a sentence is not reached at this setting.

    Returns:
        The sentence when every drawn path goes straight from the answer to the prompt (one hop), else an empty
            string.
    """
    shown = [p for p in paths if p is not None]
    if not shown or any(p.hops > 1 for p in shown):
        return ""
    return ("The dotted paths run straight from the answer to the prompt, skipping the reasoning: for these "
            "sentences the answer's own attribution lands on them directly more strongly than any chain through "
            "a reasoning step carries it (a path's strength is the product of its edges' shares, so every step "
            "in between can only weaken it).")


__all__ = ["graph_words", "path_words"]
