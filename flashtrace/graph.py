"""The recursive hop graph: prompt segments → reasoning steps → answer, built from a trace's step vectors.

Nodes are the trace's segments. For every segment ``dst`` that has a step vector (each reasoning
step and the answer), an edge ``src → dst`` from each earlier segment carries ``share``: the fraction
of dst's attribution (over all positions) that lands on src's tokens. Edges always point forward in
the text, so the graph is a DAG; the part of dst's attribution on its own tokens is not an edge, so
the incoming shares of a node sum to at most 1.

A threshold τ drops edges whose share is below τ and rescales the surviving incoming edges of each
node so that together they keep the node's incoming total (renormalisation). Paths from the answer
back to the prompt are the recursive hops made visible: a path's strength is the product of its shares,
and a prompt segment's hop depth is its shortest path length (in edges) from the answer.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from itertools import islice

import networkx as nx
import numpy as np

from .trace import Trace

_SINK = "__prompt__"
NODE_FIELDS = ("id", "role", "text", "start", "end", "order")


@dataclass(frozen=True)
class HopPath:
    """A path from the answer back to a prompt segment (``nodes[0]`` is the answer)."""

    nodes: tuple[str, ...]
    strength: float  # product of the edge shares along the path

    @property
    def end(self) -> str:
        return self.nodes[-1]

    @property
    def hops(self) -> int:
        return len(self.nodes) - 1


def incoming_shares(vector: np.ndarray, bounds: list[tuple[int, int]], before: int) -> np.ndarray:
    """Share of ``vector`` ``[N]`` on each of the first `before` segments (`bounds`: token ranges in order)."""
    total = float(vector.sum())
    if total <= 0:
        return np.zeros(before)
    cum = np.concatenate([[0.0], np.cumsum(vector, dtype=np.float64)])  # [N + 1]
    lo = np.array([b[0] for b in bounds[:before]], dtype=np.int64)
    hi = np.array([b[1] for b in bounds[:before]], dtype=np.int64)
    return np.clip((cum[hi] - cum[lo]) / total, 0.0, None)


class HopGraph:
    """A networkx ``DiGraph`` of segments with ``share`` on each edge src → dst (see the module docstring)."""

    def __init__(self, graph: nx.DiGraph, threshold: float = 0.0):
        self.graph = graph
        self.threshold = threshold

    # --- construction ------------------------------------------------------------------------------
    @classmethod
    def from_trace(cls, trace: Trace, threshold: float = 0.0) -> "HopGraph":
        """Build the graph of a trace made with ``attribute(..., steps=True)``.

        `threshold` τ in ``[0, 1)``: edges with share below τ are dropped and each node's surviving
        incoming shares are rescaled to keep its incoming total. Edge attributes: ``share`` (after
        renormalisation) and ``raw_share`` (before).
        """
        if not 0 <= threshold < 1:
            raise ValueError(f"threshold must be in [0, 1), got {threshold}")
        if trace.segments is None or trace.steps is None:
            raise ValueError("this trace has no step-level attribution; make it with attribute(..., steps=True)")
        graph = nx.DiGraph(answer=next((s.id for s in trace.segments if s.role == "answer"), None))
        bounds = [(s.start, s.end) for s in trace.segments]
        for seg in trace.segments:
            graph.add_node(seg.id, **{f: getattr(seg, f) for f in NODE_FIELDS})
        for index, dst in enumerate(trace.segments):
            vector = trace.steps.vectors.get(dst.id)
            if vector is None:
                continue
            raw = incoming_shares(np.asarray(vector, dtype=np.float64), bounds, index)  # [index]
            kept = (raw > 0) & (raw >= threshold)
            if not kept.any():
                continue
            scale = raw.sum() / raw[kept].sum()
            for src in np.nonzero(kept)[0]:
                graph.add_edge(trace.segments[src].id, dst.id, share=float(raw[src] * scale),
                               raw_share=float(raw[src]))
        return cls(graph, threshold)

    # --- views -------------------------------------------------------------------------------------
    @property
    def answer(self) -> str | None:
        """Id of the answer node (None when the trace has no answer span)."""
        return self.graph.graph.get("answer")

    def nodes(self, role: str | None = None) -> list[str]:
        """Node ids in text order, optionally only those with `role`."""
        ids = sorted(self.graph.nodes, key=lambda n: self.graph.nodes[n]["order"])
        return [n for n in ids if role is None or self.graph.nodes[n]["role"] == role]

    def strongest_paths(self, k: int = 5, through_reasoning: bool = False) -> list[HopPath]:
        """The `k` paths from the answer back to any prompt segment with the largest product of shares,
        strongest first (Yen's k-shortest paths on ``-log share``). `through_reasoning`: only paths that
        pass through at least one reasoning step (no direct answer → prompt edge)."""
        prompt = set(self.nodes("prompt"))
        if self.answer is None or not prompt or k <= 0:
            return []
        back = nx.DiGraph()
        back.add_nodes_from(self.graph.nodes)
        for src, dst, share in self.graph.edges(data="share"):
            if through_reasoning and dst == self.answer and src in prompt:
                continue
            back.add_edge(dst, src, cost=max(0.0, -math.log(share)))
        back.add_edges_from(((p, _SINK) for p in prompt), cost=0.0)
        if not nx.has_path(back, self.answer, _SINK):
            return []
        paths = islice(nx.shortest_simple_paths(back, self.answer, _SINK, weight="cost"), k)
        out = []
        for path in paths:
            nodes = tuple(path[:-1])
            strength = math.prod(self.graph.edges[b, a]["share"] for a, b in zip(nodes, nodes[1:]))
            out.append(HopPath(nodes, strength))
        return sorted(out, key=lambda p: -p.strength)

    def hop_depths(self) -> dict[str, int | None]:
        """Each prompt segment's hop depth: the fewest edges from the answer back to it (None: unreachable)."""
        reached = {}
        if self.answer is not None:
            reached = nx.single_source_shortest_path_length(self.graph.reverse(copy=False), self.answer)
        return {p: reached.get(p) for p in self.nodes("prompt")}

    def incoming(self, node: str) -> dict[str, float]:
        """``{src: share}`` of the edges into `node`."""
        return {src: share for src, _, share in self.graph.in_edges(node, data="share")}

    # --- serialisation -----------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """Node-link data (networkx ``node_link_data`` with key ``edges``) plus the threshold."""
        return {"threshold": self.threshold, "graph": nx.node_link_data(self.graph, edges="edges")}

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, data: dict) -> "HopGraph":
        """Inverse of `to_dict`; raises ValueError on malformed data."""
        try:
            graph = nx.node_link_graph(data["graph"], directed=True, multigraph=False, edges="edges")
            threshold = float(data["threshold"])
        except (KeyError, TypeError, nx.NetworkXError) as exc:
            raise ValueError(f"not a hop graph: {exc!r}") from None
        for node in graph.nodes:
            graph.nodes[node]["id"] = node
            missing = [f for f in NODE_FIELDS if f not in graph.nodes[node]]
            if missing:
                raise ValueError(f"hop graph node {node!r} lacks {missing}")
        if any(not isinstance(s, (int, float)) or not 0 <= s <= 1 for *_, s in graph.edges(data="share", default=-1)):
            raise ValueError("hop graph edges need a share between 0 and 1")
        return cls(graph, threshold)

    @classmethod
    def from_json(cls, text: str | bytes) -> "HopGraph":
        return cls.from_dict(json.loads(text))


__all__ = ["HopGraph", "HopPath", "incoming_shares"]
