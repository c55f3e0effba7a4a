"""Every edge of a hop graph as arrays, and the computations over all of them in time linear in the edges.

Nodes are numbered in text order (0 .. n-1) and every edge points forward (src < dst), so the graph is a
DAG whose topological order is the numbering. The edges are kept grouped by target (compressed rows):
the edges into node ``j`` are ``indptr[j]:indptr[j+1]``. Influence, hop depths and strongest paths are
one backward sweep over the targets, a vector operation per target, never a Python loop per edge: a
trace with a thousand reasoning steps over a long prompt (about a million edges) takes well under a second.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Edges:
    """The edges of a hop graph with ``n`` nodes, grouped by target (see the module docstring)."""

    indptr: np.ndarray  # [n + 1] int64
    src: np.ndarray  # [E] int32: the source node of each edge
    share: np.ndarray  # [E] float64: share after renormalisation (what paths and influence use)
    raw: np.ndarray  # [E] float64: share before renormalisation

    @property
    def n(self) -> int:
        """The number of nodes."""
        return self.indptr.shape[0] - 1

    @property
    def count(self) -> int:
        """The number of edges."""
        return int(self.src.shape[0])

    @classmethod
    def from_rows(cls, n: int, rows: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]) -> "Edges":
        """From ``{target: (sources, shares, raw shares)}`` (any order of targets).

        Args:
            n: The number of nodes.
            rows: ``{target: (sources, shares, raw shares)}``: for each target node with incoming edges, three
                parallel arrays (the source node, the share after renormalisation and the share before), in any
                order of targets; the edges of a target stay in the order given.

        Returns:
            The edges, grouped by target.
        """
        counts = np.zeros(n + 1, dtype=np.int64)
        for j, (src, _, _) in rows.items():
            counts[j + 1] = src.shape[0]
        indptr = np.cumsum(counts)
        src = np.empty(indptr[-1], dtype=np.int32)
        share, raw = np.empty(indptr[-1]), np.empty(indptr[-1])
        for j, (s, sh, r) in rows.items():
            lo, hi = indptr[j], indptr[j + 1]
            src[lo:hi], share[lo:hi], raw[lo:hi] = s, sh, r
        return cls(indptr, src, share, raw)

    @classmethod
    def from_triples(cls, n: int, src: np.ndarray, dst: np.ndarray, share: np.ndarray, raw: np.ndarray) -> "Edges":
        """From parallel arrays of sources, targets, shares and raw shares.

        Args:
            n: The number of nodes.
            src: ``[E]`` integers: the source node of each edge.
            dst: ``[E]`` integers: the target node of each edge.
            share: ``[E]`` the share of each edge after renormalisation.
            raw: ``[E]`` the share of each edge before renormalisation.

        Returns:
            The edges, grouped by target (a target's edges in the order given).
        """
        order = np.argsort(dst, kind="stable")
        counts = np.bincount(dst, minlength=n)  # `dst`: integers (an empty int array gives n zeros)
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return cls(indptr, src[order].astype(np.int32), share[order].astype(np.float64), raw[order].astype(np.float64))

    def into(self, j: int) -> slice:
        """The slice of the edge arrays holding the edges into node `j`.

        Args:
            j: The target node's number.

        Returns:
            ``indptr[j]:indptr[j+1]``, to index `src`, `share` and `raw` with.
        """
        return slice(int(self.indptr[j]), int(self.indptr[j + 1]))

    def dst(self) -> np.ndarray:
        """``[E]`` the target node of each edge.

        Returns:
            The target node's number of each edge, parallel to `src`.
        """
        return np.repeat(np.arange(self.n), np.diff(self.indptr))

    def targets(self) -> np.ndarray:
        """Nodes with at least one incoming edge, last first (the order of a backward sweep).

        Returns:
            The numbers of those nodes, in decreasing order.
        """
        return np.nonzero(np.diff(self.indptr))[0][::-1]

    def influence(self, answer: int) -> np.ndarray:
        """``[n]`` the sum over all paths from each node to `answer` of the product of shares (answer: 1).

        Args:
            answer: The answer node's number.

        Returns:
            Each node's influence on `answer` (0 for a node with no path to it).
        """
        out = np.zeros(self.n)
        out[answer] = 1.0
        for j in self.targets():
            if out[j] != 0.0:  # every path out of j is summed into out[j] already: later nodes come first
                sl = self.into(j)
                out[self.src[sl]] += self.share[sl] * out[j]  # a target's sources are distinct
        return out

    def depths(self, answer: int) -> np.ndarray:
        """``[n]`` the fewest edges from each node forward to `answer` (inf: no path).

        Args:
            answer: The answer node's number.

        Returns:
            Each node's hop depth as a float (0 for `answer`, inf for a node with no path to it).
        """
        out = np.full(self.n, np.inf)
        out[answer] = 0.0
        for j in self.targets():
            if np.isfinite(out[j]):
                src = self.src[self.into(j)]
                out[src] = np.minimum(out[src], out[j] + 1)
        return out

    def strongest(self, answer: int) -> tuple[np.ndarray, np.ndarray]:
        """``(strength [n], next [n])``: for each node, the largest product of shares along a path to `answer`
        and the node that path goes to next (-1: none). Ties keep the earlier target.

        Args:
            answer: The answer node's number.

        Returns:
            ``(strength, next)``: per node, the strongest path's product of shares (1 for `answer`, 0 with no
                path) and the next node on it (-1: none).
        """
        best, nxt = np.zeros(self.n), np.full(self.n, -1)
        best[answer] = 1.0
        for j in self.targets():  # later targets first, so on a tie (>=) the earlier target wins
            if best[j] <= 0.0:
                continue
            sl = self.into(j)
            cand, src = self.share[sl] * best[j], self.src[sl]
            better = (cand >= best[src]) & (src != answer)
            best[src[better]], nxt[src[better]] = cand[better], j
        return best, nxt

    def out_of(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """``(targets, shares)`` of the edges out of node `i`.

        Args:
            i: The source node's number.

        Returns:
            Two parallel arrays: the target node of each edge out of `i` (in increasing order) and its share.
        """
        hit = np.nonzero(self.src == i)[0]
        return np.searchsorted(self.indptr, hit, side="right") - 1, self.share[hit]

    def strongest_into(self, limit: int, mass: float) -> np.ndarray:
        """``[E]`` bool: each target's strongest incoming edges, at most `limit`, fewer once they carry `mass`
        of its incoming share. Ties: the edge listed first (from `from_rows`: the earlier source) is kept first.

        Args:
            limit: The most incoming edges kept per target.
            mass: The fraction of a target's incoming share after which no more of its edges are kept (0..1).

        Returns:
            ``[E]`` a bool mask over the edges, True for each kept edge.
        """
        keep = np.zeros(self.count, dtype=bool)
        for j in np.nonzero(np.diff(self.indptr))[0]:
            sl = self.into(j)
            share = self.share[sl]
            order = np.argsort(-share, kind="stable")[:limit]
            carried = np.cumsum(share[order])
            enough = int(np.searchsorted(carried, mass * share.sum() * (1 - 1e-12))) + 1
            keep[sl.start + order[:enough]] = True
        return keep


__all__ = ["Edges"]
