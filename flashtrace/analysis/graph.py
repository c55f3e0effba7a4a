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

A node's *influence* on the answer is the sum over all paths from it to the answer of the products of
their shares (1 for the answer itself). The answer's attribution flows back along the edges and stops on
the inputs, so the influences of the input segments (template and prompt) add up to the share of the
answer's attribution that reaches the input. `HopGraph.pruned` keeps what explains most of it: the
smallest set of inputs holding a given fraction of the input influence (the rest folded into one "other
context" node) and the edges carrying a given fraction of the influence that flows along them, with
their true shares (no renormalisation), so the most influential evidence is shown by construction.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from itertools import islice

import networkx as nx
import numpy as np

from .limits import check_graph_threshold
from .schema import Trace

_SINK = "__prompt__"
NODE_FIELDS = ("id", "role", "text", "start", "end", "order")
INPUT_ROLES = ("template", "prompt")
OTHER = "other"  # id of the node that stands for the folded input segments (role "other")
MAX_IN_EDGES = 64  # a node keeps its strongest incoming edges: the graph grows linearly with the steps


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
        self.pruning: dict | None = None  # the arguments of `pruned`, on a graph it returned

    # --- construction ------------------------------------------------------------------------------
    @classmethod
    def from_trace(cls, trace: Trace, threshold: float = 0.0) -> "HopGraph":
        """Build the graph of a trace made with ``attribute(..., steps=True)``.

        `threshold` τ in ``[0, 1)``: edges with share below τ are dropped and each node's surviving
        incoming shares are rescaled to keep its incoming total. Edge attributes: ``share`` (after
        renormalisation) and ``raw_share`` (before). A node keeps at most `MAX_IN_EDGES` incoming edges, its
        strongest, so the graph is bounded by construction (800 one-token steps gave 959,600 edges); the share
        the others carried is the node's ``undrawn_share`` (not rescaled onto the kept edges).
        """
        check_graph_threshold(threshold)
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
            sources = np.nonzero(kept)[0]
            if len(sources) > MAX_IN_EDGES:
                strongest = np.sort(sources[np.argsort(-raw[sources], kind="stable")[:MAX_IN_EDGES]])
                graph.nodes[dst.id]["undrawn_share"] = float((raw[sources].sum() - raw[strongest].sum()) * scale)
                sources = strongest
            for src in sources:
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

    # --- influence -------------------------------------------------------------------------------
    def influence(self) -> dict[str, float]:
        """``{node: influence}``: for each node, the sum over all paths from it to the answer of the product
        of their shares (the answer: 1; a node with no path: 0). A node attribute ``influence`` (set by
        `pruned`, from the full graph) takes precedence over what the edges here give."""
        if all("influence" in data for _, data in self.graph.nodes(data=True)):
            return {n: float(i) for n, i in self.graph.nodes(data="influence")}
        out = dict.fromkeys(self.graph.nodes, 0.0)
        if self.answer is None:
            return out
        out[self.answer] = 1.0
        for node in reversed(list(nx.topological_sort(self.graph))):  # every successor is done before node
            if node != self.answer:
                out[node] = sum(share * out[dst] for _, dst, share in self.graph.out_edges(node, data="share"))
        return out

    def evidence(self, k: int | None = None) -> list[tuple[str, float]]:
        """Prompt segments with positive influence, most influential first: ``[(id, influence)]``."""
        influence = self.influence()
        ranked = sorted(((n, influence[n]) for n in self.nodes("prompt") if influence[n] > 0),
                        key=lambda kv: (-kv[1], self.graph.nodes[kv[0]]["order"]))
        return ranked if k is None else ranked[:k]

    def strongest_path_to(self, node: str) -> HopPath | None:
        """The path from the answer back to `node` with the largest product of shares (None: no path)."""
        if self.answer is None or node not in self.graph:
            return None
        best: dict[str, tuple[float, str | None]] = {self.answer: (1.0, None)}  # node -> (strength, next hop)
        for n in reversed(list(nx.topological_sort(self.graph))):
            options = [(share * best[dst][0], dst) for _, dst, share in self.graph.out_edges(n, data="share")
                       if dst in best]
            if n != self.answer and options:
                best[n] = max(options, key=lambda o: o[0])
        if node not in best or node == self.answer:
            return None
        nodes = [node]
        while nodes[-1] != self.answer:
            nodes.append(best[nodes[-1]][1])
        return HopPath(tuple(reversed(nodes)), best[node][0])

    def step_sources(self, k: int = 2) -> dict[str, list[str]]:
        """``{step: [prompt ids]}``: for each reasoning step and the answer, the `k` prompt segments its
        edges give the largest shares (largest first)."""
        out = {}
        for dst in self.nodes("reasoning") + self.nodes("answer"):
            incoming = [(src, share) for src, share in self.incoming(dst).items()
                        if self.graph.nodes[src]["role"] == "prompt" and share > 0]
            out[dst] = [src for src, _ in sorted(incoming, key=lambda kv: -kv[1])[:k]]
        return out

    def pruned(self, node_threshold: float = 0.8, edge_threshold: float = 0.98, max_inputs: int | None = 12,
               fold: bool = True, step_sources: int = 2) -> "HopGraph":
        """The graph reduced to what explains the answer (influences from this graph).

        Inputs (template and prompt segments), at most `max_inputs` of them: the most influential prompt
        segment; the `step_sources` prompt segments each step and the answer draws on most (every step's
        first choice before any second choice), so the evidence read along the chain stays; then the most
        influential others until the kept inputs hold `node_threshold` of all input influence. The rest
        fold into one node `OTHER` (role ``"other"``, attribute ``folded``: their ids) whose edge into a
        node carries the sum of their shares; a single leftover input is kept rather than folded. With
        ``fold=False`` every input is kept. Reasoning steps and the answer are always kept.

        Edges: those from each step's kept sources and the strongest edge out of every node, then the
        others by the influence they carry (share × the influence of their target) until `edge_threshold`
        of it all is carried. Shares are not renormalised; every node keeps its full-graph ``influence``
        as an attribute (the folded node: the sum of its members').
        """
        if not 0 < node_threshold <= 1 or not 0 < edge_threshold <= 1:
            raise ValueError("node and edge thresholds must be in (0, 1]")
        influence = self.influence()
        inputs = [n for n in self.nodes() if self.graph.nodes[n]["role"] in INPUT_ROLES]
        sources = self.step_sources(step_sources)
        cap = len(inputs) if max_inputs is None or not fold else max_inputs
        rounds = [[srcs[r] for srcs in sources.values() if r < len(srcs)] for r in range(step_sources)]
        ranked = sorted(inputs, key=lambda n: (-influence[n], self.graph.nodes[n]["order"]))
        keep: list[str] = []
        for node in [*[n for n, _ in self.evidence(1)], *(n for r in rounds for n in r)]:
            if node not in keep and len(keep) < cap:
                keep.append(node)
        held, total = sum(influence[n] for n in keep), sum(influence[n] for n in inputs)
        for node in ranked:
            if len(keep) >= cap or held >= node_threshold * total * (1 - 1e-9):
                break
            if node not in keep:
                keep.append(node)
                held += influence[node]
        folded = [n for n in inputs if n not in set(keep)] if fold else []
        if len(folded) == 1:
            folded = []
        graph = nx.DiGraph(**self.graph.graph)
        for node, data in self.graph.nodes(data=True):
            if node not in folded:
                graph.add_node(node, **{**data, "influence": influence[node]})
        if folded:
            members = [self.graph.nodes[n] for n in folded]
            graph.add_node(OTHER, id=OTHER, role="other", text=f"other context ({len(folded)} sentences)",
                           start=min(m["start"] for m in members), end=max(m["end"] for m in members),
                           order=max(m["order"] for m in members), folded=folded,
                           influence=sum(influence[n] for n in folded))
        flows: dict[tuple[str, str], float] = {}
        shares: dict[tuple[str, str], float] = {}
        for src, dst, share in self.graph.edges(data="share"):
            key = (OTHER if src in folded else src, dst)
            shares[key] = shares.get(key, 0.0) + share
            flows[key] = flows.get(key, 0.0) + share * influence[dst]
        chosen = {(src, dst) for dst, srcs in sources.items() for src in srcs if src not in folded}
        strongest_out: dict[str, tuple[str, str]] = {}
        for key, flow in flows.items():
            if flow > 0 and (key[0] not in strongest_out or flow > flows[strongest_out[key[0]]]):
                strongest_out[key[0]] = key
        chosen |= set(strongest_out.values())
        carried, budget = sum(flows[e] for e in chosen), edge_threshold * sum(flows.values()) * (1 - 1e-9)
        for key in sorted(flows, key=lambda e: -flows[e]):
            if carried >= budget or flows[key] <= 0:
                break
            if key not in chosen:
                chosen.add(key)
                carried += flows[key]
        for key in chosen:
            graph.add_edge(*key, share=shares[key], raw_share=shares[key])
        out = HopGraph(graph, self.threshold)
        out.pruning = {"node_threshold": node_threshold, "edge_threshold": edge_threshold,
                       "max_inputs": max_inputs, "fold": fold, "step_sources": step_sources}
        return out

    # --- serialisation -----------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """Node-link data (networkx ``node_link_data`` with key ``edges``) plus the threshold (and the pruning)."""
        out = {"threshold": self.threshold, "graph": nx.node_link_data(self.graph, edges="edges")}
        if self.pruning is not None:
            out["pruning"] = self.pruning
        return out

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
        out = cls(graph, threshold)
        out.pruning = data.get("pruning")
        return out

    @classmethod
    def from_json(cls, text: str | bytes) -> "HopGraph":
        return cls.from_dict(json.loads(text))


__all__ = ["HopGraph", "HopPath", "INPUT_ROLES", "OTHER", "incoming_shares"]
