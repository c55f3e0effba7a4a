"""What the Hop graph page and the HTML export say about the graph (`flashtrace.analysis.graph_words`): the
captions are the specification users read, so each is checked word for word from the facts it states."""

from types import SimpleNamespace

import numpy as np

from flashtrace.analysis.facts import GraphFacts
from flashtrace.analysis.graph_words import graph_words, path_words

PIECES = [SimpleNamespace(text="Ann has 3 apples."), SimpleNamespace(text="She buys 4 more apples at the market "
                                                                           "on a sunny afternoon in town.")]
SAME = ("Node sizes follow the step graph: each reasoning step is attributed on its own and the answer's "
        "attribution is followed along every path. That is a different quantity from the trace's hop scores, "
        "which rank the evidence on every page; here the two differ by up to 12.5 points per sentence (as shares "
        "of the prompt's attribution)")


def _facts(difference: float, top: int | None, final_top: int | None, same_top: bool):
    graph = GraphFacts(influence={}, shares=np.zeros(2), top=top, difference=difference, same_top=same_top)
    return SimpleNamespace(graph=graph, pieces=PIECES, final=SimpleNamespace(top=final_top))


def test_no_graph_no_caption():
    assert graph_words(SimpleNamespace(graph=None)) == ""


def test_a_graph_that_equals_the_scores_says_so():
    agreeing = ("The graph's prompt influences equal the trace's final scores per sentence (within 1e-6), so both "
                "rank the evidence the same way.")
    assert graph_words(_facts(1e-6, 0, 0, True)) == agreeing
    assert graph_words(_facts(2e-6, 0, 0, True)) != agreeing  # past the tolerance it is a different quantity


def test_a_different_graph_names_how_far_and_whether_the_top_sentence_agrees():
    assert graph_words(_facts(0.125, 0, 0, True)) == SAME + " and agree on the top sentence."
    assert graph_words(_facts(0.125, None, 1, False)) == SAME + " and agree on the top sentence."  # no graph top
    assert graph_words(_facts(0.125, 1, None, False)) == SAME + " and agree on the top sentence."  # no score top
    assert graph_words(_facts(0.125, 1, 0, False)) == (
        SAME + ": the graph puts “She buys 4 more … on a sunny afternoon in town.” first, the hop scores "
        "“Ann has 3 apples.”.")  # a long sentence shortened in the middle, as every caption quotes
    assert graph_words(_facts(0.125, 0, 1, False)).endswith(
        ": the graph puts “Ann has 3 apples.” first, the hop scores “She buys 4 more … on a sunny afternoon in "
        "town.”.")  # both sides quoted to the same length


def test_paths_that_all_skip_the_reasoning_are_explained_and_others_are_not():
    direct = [SimpleNamespace(hops=1), None, SimpleNamespace(hops=1)]
    assert path_words(direct) == (
        "The dotted paths run straight from the answer to the prompt, skipping the reasoning: for these "
        "sentences the answer's own attribution lands on them directly more strongly than any chain through "
        "a reasoning step carries it (a path's strength is the product of its edges' shares, so every step "
        "in between can only weaken it).")
    assert path_words([SimpleNamespace(hops=1), SimpleNamespace(hops=2)]) == ""
    assert path_words([None, None]) == path_words([]) == ""
