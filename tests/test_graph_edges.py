"""The hop graph's edge arrays (`Edges`) on graphs small enough to check by hand: both constructors build the
same arrays, strongest paths and their ties, nodes with no path, edges out of a node, and the edges a node
keeps when the drawn graph is thinned (at most `limit`, fewer once they carry `mass` of its share)."""

import numpy as np
import pytest

from flashtrace.analysis.graph_edges import Edges


def _edges(n, triples):
    """`Edges` from ``[(src, dst, share)]`` in that order; each raw share is half the share."""
    src, dst, share = (np.array(c) for c in zip(*triples))
    return Edges.from_triples(n, src, dst, share.astype(float), share / 2)


def test_rows_and_triples_build_the_same_arrays():
    rows = {3: (np.array([0, 2]), np.array([0.25, 0.5]), np.array([0.125, 0.25])),
            1: (np.array([0]), np.array([1.0]), np.array([0.5]))}
    for edges in (Edges.from_rows(5, rows), _edges(5, [(0, 3, 0.25), (0, 1, 1.0), (2, 3, 0.5)])):
        assert edges.n == 5 and edges.count == 3  # node 4 has no edge at all and still counts
        assert edges.indptr.tolist() == [0, 0, 1, 1, 3, 3]
        assert edges.src.tolist() == [0, 0, 2] and edges.dst().tolist() == [1, 3, 3]
        assert edges.share.tolist() == [1.0, 0.25, 0.5] and edges.raw.tolist() == [0.5, 0.125, 0.25]
        assert edges.into(3) == slice(1, 3) and edges.targets().tolist() == [3, 1]


def test_a_graph_without_edges():
    empty = Edges.from_triples(3, *(np.zeros(0, dtype=np.int64),) * 2, np.zeros(0), np.zeros(0))
    assert empty.n == 3 and empty.count == 0 and empty.dst().tolist() == []
    assert empty.influence(2).tolist() == [0.0, 0.0, 1.0] and empty.depths(2).tolist() == [np.inf, np.inf, 0.0]


def test_edges_into_each_target_keep_their_given_order():
    sources = [7, 3, 11, 0, 5, 19, 2, 13, 1, 17, 4, 9, 15, 6, 8, 10, 12, 14, 16, 18]
    edges = _edges(21, [(s, 20 - i % 2, 0.05) for i, s in enumerate(sources)])  # into 20 and 19 in turn
    assert edges.src.tolist() == sources[1::2] + sources[::2]  # ties of a target: first given, first kept


@pytest.fixture
def chain():
    """0 → 1 → 5 and 0 → 2 → 5 (answer 5) with equal strength 0.5; 3 → 4 leads nowhere."""
    return _edges(6, [(0, 1, 1.0), (0, 2, 1.0), (3, 4, 1.0), (1, 5, 0.5), (2, 5, 0.5)])


def test_strongest_paths_ties_and_nodes_without_a_path(chain):
    best, nxt = chain.strongest(5)
    assert best.tolist() == [0.5, 0.5, 0.5, 0.0, 0.0, 1.0]
    assert nxt.tolist() == [1, 5, 5, -1, -1, -1]  # the tie at node 0 keeps the earlier target; -1: no next node
    assert chain.influence(5).tolist() == [1.0, 0.5, 0.5, 0.0, 0.0, 1.0]  # both paths out of node 0 count
    assert chain.depths(5).tolist() == [2.0, 1.0, 1.0, np.inf, np.inf, 0.0]


def test_edges_out_of_a_node(chain):
    for node, targets, shares in ((0, [1, 2], [1.0, 1.0]), (3, [4], [1.0]), (2, [5], [0.5]), (5, [], [])):
        found, share = chain.out_of(node)
        assert found.tolist() == targets and share.tolist() == shares


def test_kept_edges_stop_once_they_carry_the_mass():
    # shares into node 4 total 0.5; 0.75 of it is 0.375 = 0.25 + 0.125, reached exactly by the two strongest
    edges = _edges(5, [(0, 4, 0.0625), (1, 4, 0.25), (2, 4, 0.125), (3, 4, 0.0625)])
    assert edges.src[edges.strongest_into(8, 0.75)].tolist() == [1, 2]
    assert edges.src[edges.strongest_into(8, 0.76)].tolist() == [0, 1, 2]  # past it: one more, of the tie the earlier
    assert edges.src[edges.strongest_into(8, 1.0)].tolist() == [0, 1, 2, 3]
    assert edges.src[edges.strongest_into(1, 1.0)].tolist() == [1]  # at most `limit`


def test_kept_edges_on_ties_are_the_earliest_sources():
    edges = _edges(13, [(s, 12, 0.1 if s % 2 else 0.05) for s in range(12)] + [(0, 3, 1.0)])
    keep = edges.strongest_into(3, 0.9)  # six edges of 0.1 into node 12: the first three are drawn
    assert edges.src[keep].tolist() == [0, 1, 3, 5] and edges.dst()[keep].tolist() == [3, 12, 12, 12]
