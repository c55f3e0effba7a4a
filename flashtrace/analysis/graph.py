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

At scale (a long chain of thought: a thousand steps over a long prompt is about a million edges), every
computation runs on all edges held as arrays (`flashtrace.analysis.graph_edges.Edges`), in time linear
in them. The networkx ``graph`` holds every edge up to `EDGE_BUDGET`; beyond it, each node's strongest
incoming edges (at most `KEEP_EDGES`, fewer once they carry `KEEP_MASS` of its incoming share; the node
says how much they carry) — what a drawing or a path search can use. Influence, evidence, depths,
strongest paths to a node, incoming shares and `to_dict` always use every edge. The pruned graph folds
long runs of reasoning steps too, so a drawing has a bounded number of nodes and edges.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from itertools import islice

import networkx as nx
import numpy as np

from .graph_edges import Edges
from .graph_prune import INPUT_ROLES, OTHER, STEPS_ROLE, prune
from .limits import check_graph_threshold
from .schema import Trace
from ..base.errors import InputError
from ..base.live_cache import LiveCache

_SINK = "__prompt__"
NODE_FIELDS = ("id", "role", "text", "start", "end", "order")
EDGE_BUDGET = 20_000  # up to this many edges, `HopGraph.graph` holds them all
KEEP_EDGES, KEEP_MASS = 8, 0.95  # beyond it: each node's strongest incoming edges, until they carry this much
_GRAPHS: LiveCache["HopGraph"] = LiveCache()
_BUILT = _GRAPHS.entries  # (id of a live trace, threshold) -> its graph


@dataclass(frozen=True)
class HopPath:
    """A path from the answer back to a prompt segment (``nodes[0]`` is the answer)."""

    nodes: tuple[str, ...]
    strength: float  # product of the edge shares along the path

    @property
    def end(self) -> str:
        """The last node of the path."""
        return self.nodes[-1]

    @property
    def hops(self) -> int:
        """The number of edges the path takes."""
        return len(self.nodes) - 1


def incoming_shares(vector: np.ndarray, bounds: list[tuple[int, int]], before: int) -> np.ndarray:
    """Share of ``vector`` ``[N]`` on each of the first `before` segments.

    Args:
        vector: An attribution vector over all positions, ``[N]``.
        bounds: The segments' token ranges ``(start, end)``, in order.
        before: How many of the first segments to measure.

    Returns:
        The share of `vector`'s total on each of the first `before` segments, clipped at 0 (zeros when the total
            is not positive).
    """
    total = float(vector.sum())
    if total <= 0:
        return np.zeros(before)
    cum = np.concatenate([[0.0], np.cumsum(vector, dtype=np.float64)])  # [N + 1]
    lo = np.array([b[0] for b in bounds[:before]], dtype=np.int64)
    hi = np.array([b[1] for b in bounds[:before]], dtype=np.int64)
    return np.clip((cum[hi] - cum[lo]) / total, 0.0, None)


def _trace_rows(trace: Trace, threshold: float) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``{target index: (sources, shares, raw shares)}``: every edge of the trace's graph at `threshold`."""
    bounds = [(s.start, s.end) for s in trace.segments]
    cum_lo, cum_hi = np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])
    rows = {}
    for index, dst in enumerate(trace.segments):
        vector = trace.steps.vectors.get(dst.id)
        if vector is None or index == 0:
            continue
        cum = np.concatenate([[0.0], np.cumsum(np.asarray(vector, dtype=np.float64))])  # [N + 1]
        total = cum[-1]
        if total <= 0:
            continue
        raw = np.clip((cum[cum_hi[:index]] - cum[cum_lo[:index]]) / total, 0.0, None)  # [index]
        kept = np.nonzero((raw > 0) & (raw >= threshold))[0]
        if kept.size:
            rows[index] = (kept, raw[kept] * (raw.sum() / raw[kept].sum()), raw[kept])
    return rows


class HopGraph:
    """A networkx ``DiGraph`` of segments with ``share`` on each edge src → dst (see the module docstring)."""

    def __init__(self, graph: nx.DiGraph, threshold: float = 0.0, edges: Edges | None = None):
        self.graph = graph
        self.threshold = threshold
        self.pruning: dict | None = None  # the arguments of `pruned`, on a graph it returned
        self._text_order = sorted(graph.nodes, key=lambda n: (graph.nodes[n]["order"], str(n)))
        if edges is None:  # any graph: number the nodes in a topological order, text order among equals
            self._ids = list(nx.lexicographical_topological_sort(graph, key=lambda n: (graph.nodes[n]["order"], str(n))))
            self._index = {n: i for i, n in enumerate(self._ids)}
            triples = [(self._index[a], self._index[b], d.get("share", 0.0), d.get("raw_share", d.get("share", 0.0)))
                       for a, b, d in graph.edges(data=True)]
            src, dst, share, raw = (np.array(c) for c in zip(*triples)) if triples else (np.zeros(0, int),) * 4
            edges = Edges.from_triples(len(self._ids), src.astype(np.int64), dst.astype(np.int64), share, raw)
        else:  # from a trace: the text order is topological
            self._ids = self._text_order
            self._index = {n: i for i, n in enumerate(self._ids)}
        self.edges = edges

    # --- construction ------------------------------------------------------------------------------
    @classmethod
    def from_trace(cls, trace: Trace, threshold: float = 0.0) -> "HopGraph":
        """Build the graph of a trace made with ``attribute(..., steps=True)``.

        `threshold` τ in ``[0, 1)``: edges with share below τ are dropped and each node's surviving
        incoming shares are rescaled to keep its incoming total. Edge attributes: ``share`` (after
        renormalisation) and ``raw_share`` (before). Past `EDGE_BUDGET` edges, ``graph`` keeps each node's
        strongest incoming ones (node attributes ``kept_share`` and ``incoming_share`` say how much of its
        incoming share they carry); the computations use all of them.

        Args:
            trace: The recording, with segments and step vectors (``attribute(..., steps=True)``).
            threshold: The edge threshold τ in ``[0, 1)`` (0 keeps every edge with a positive share).

        Returns:
            The trace's graph at `threshold`, built once per trace object and threshold (every view reads the
                same graph while the trace lives).

        Raises:
            InputError: When `threshold` is outside ``[0, 1)`` (`limits.check_graph_threshold`), or the trace
                has no step-level attribution (no segments or no step vectors).
        """
        check_graph_threshold(threshold)
        if trace.segments is None or trace.steps is None:
            raise InputError("this trace has no step-level attribution; make it with attribute(..., steps=True)")
        # one build per trace and threshold (a Trace is immutable): every view reads the same graph
        return _GRAPHS.get(trace, (id(trace), float(threshold)), lambda: cls._build(trace, threshold))

    @classmethod
    def _build(cls, trace: Trace, threshold: float) -> "HopGraph":
        graph = nx.DiGraph(answer=next((s.id for s in trace.segments if s.role == "answer"), None))
        graph.add_nodes_from((seg.id, {f: getattr(seg, f) for f in NODE_FIELDS}) for seg in trace.segments)
        edges = Edges.from_rows(len(trace.segments), _trace_rows(trace, threshold))
        ids = [s.id for s in trace.segments]
        keep = np.ones(edges.count, dtype=bool)
        if edges.count > EDGE_BUDGET:
            keep = edges.strongest_into(KEEP_EDGES, KEEP_MASS)
            for j in np.nonzero(np.diff(edges.indptr))[0]:
                sl = edges.into(j)
                graph.nodes[ids[j]].update(incoming_share=float(edges.share[sl].sum()),
                                           kept_share=float(edges.share[sl][keep[sl]].sum()))
        dst = edges.dst()
        graph.add_edges_from((ids[edges.src[e]], ids[dst[e]], {"share": float(edges.share[e]), "raw_share": float(edges.raw[e])})
                             for e in np.nonzero(keep)[0])
        return cls(graph, threshold, edges)

    # --- views -------------------------------------------------------------------------------------
    @property
    def answer(self) -> str | None:
        """Id of the answer node (None when the trace has no answer span)."""
        return self.graph.graph.get("answer")

    def nodes(self, role: str | None = None) -> list[str]:
        """Node ids in text order, optionally only those with `role`.

        Args:
            role: The node role to keep (``"prompt"``, ``"template"``, ``"reasoning"``, ``"answer"``; on a pruned
                graph also `OTHER` and `STEPS_ROLE`), or None for every node.

        Returns:
            The ids of the matching nodes, in text order.
        """
        return [n for n in self._text_order if role is None or self.graph.nodes[n]["role"] == role]

    def strongest_paths(self, k: int = 5, through_reasoning: bool = False) -> list[HopPath]:
        """The `k` paths from the answer back to any prompt segment with the largest product of shares,
        strongest first (Yen's k-shortest paths on ``-log share``, over the edges ``graph`` holds).
        `through_reasoning`: only paths that pass through at least one reasoning step (no direct answer →
        prompt edge).

        Args:
            k: How many paths to return (0 or less: none).
            through_reasoning: Whether to keep only paths through at least one reasoning step.

        Returns:
            Up to `k` paths, strongest first; empty when the graph has no answer, no prompt segment, or no path
                from the answer to the prompt.
        """
        prompt = set(self.nodes("prompt"))
        if self.answer is None or not prompt or k <= 0:
            return []
        back = nx.DiGraph()
        back.add_nodes_from(self.graph.nodes)
        for src, dst, share in self.graph.edges(data="share"):
            if share <= 0 or (through_reasoning and dst == self.answer and src in prompt):
                continue  # an edge that carries nothing (a graph file may hold one) is on no path
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
        """Each prompt segment's hop depth: the fewest edges from the answer back to it (None: unreachable).

        Returns:
            ``{prompt segment id: depth}`` for every prompt segment, in text order (every depth None when the
                graph has no answer).
        """
        depth = self.edges.depths(self._index[self.answer]) if self.answer is not None else None
        return {p: (int(depth[self._index[p]]) if depth is not None and np.isfinite(depth[self._index[p]]) else None)
                for p in self.nodes("prompt")}

    def incoming(self, node: str) -> dict[str, float]:
        """``{src: share}`` of the edges into `node`.

        Args:
            node: The id of the target node.

        Returns:
            The share of each edge into `node`, keyed by its source id (every edge, not only those ``graph``
                holds).
        """
        sl = self.edges.into(self._index[node])
        return {self._ids[i]: float(s) for i, s in zip(self.edges.src[sl], self.edges.share[sl])}

    def share(self, src: str, dst: str) -> float:
        """The share of the edge src → dst (0 when there is none).

        Args:
            src: The id of the source node.
            dst: The id of the target node.

        Returns:
            The edge's share, 0.0 when there is no edge src → dst.
        """
        sl = self.edges.into(self._index[dst])
        hit = np.nonzero(self.edges.src[sl] == self._index[src])[0]
        return float(self.edges.share[sl][hit[0]]) if hit.size else 0.0

    def outgoing(self, node: str) -> dict[str, float]:
        """``{dst: share}`` of the edges out of `node`.

        Args:
            node: The id of the source node.

        Returns:
            The share of each edge out of `node`, keyed by its target id.
        """
        targets, shares = self.edges.out_of(self._index[node])
        return {self._ids[j]: float(s) for j, s in zip(targets, shares)}

    # --- influence -------------------------------------------------------------------------------
    def influence(self) -> dict[str, float]:
        """``{node: influence}``: for each node, the sum over all paths from it to the answer of the product
        of their shares (the answer: 1; a node with no path: 0). A node attribute ``influence`` (set by
        `pruned`, from the full graph) takes precedence over what the edges here give.

        Returns:
            The influence on the answer of every node, keyed by node id (all 0.0 when the graph has no answer).
        """
        if all("influence" in data for _, data in self.graph.nodes(data=True)):
            return {n: float(i) for n, i in self.graph.nodes(data="influence")}
        if self.answer is None:
            return dict.fromkeys(self.graph.nodes, 0.0)
        values = self.edges.influence(self._index[self.answer])
        return {n: float(values[i]) for i, n in enumerate(self._ids)}

    def evidence(self, k: int | None = None) -> list[tuple[str, float]]:
        """Prompt segments with positive influence, most influential first: ``[(id, influence)]``.

        Args:
            k: How many segments to keep (None: all with positive influence).

        Returns:
            ``(id, influence)`` pairs, most influential first (ties: text order).
        """
        influence = self.influence()
        ranked = sorted(((n, influence[n]) for n in self.nodes("prompt") if influence[n] > 0),
                        key=lambda kv: (-kv[1], self.graph.nodes[kv[0]]["order"]))
        return ranked if k is None else ranked[:k]

    def strongest_path_to(self, node: str) -> HopPath | None:
        """The path from the answer back to `node` with the largest product of shares (None: no path).

        Args:
            node: The id of the node the path ends at.

        Returns:
            The strongest path, or None when there is no path, the graph has no answer, `node` is not in the
                graph, or `node` is the answer.
        """
        if self.answer is None or node not in self.graph or node == self.answer:
            return None
        best, nxt = self.edges.strongest(self._index[self.answer])
        at = self._index[node]
        if best[at] <= 0:
            return None
        nodes = [node]
        while nodes[-1] != self.answer:
            nodes.append(self._ids[nxt[self._index[nodes[-1]]]])
        return HopPath(tuple(reversed(nodes)), float(best[at]))

    def step_sources(self, k: int = 2) -> dict[str, list[str]]:
        """``{step: [prompt ids]}``: for each reasoning step and the answer, the `k` prompt segments its
        edges give the largest shares (largest first).

        Args:
            k: How many prompt sources to keep per step.

        Returns:
            For each reasoning step and the answer (in text order), the ids of up to `k` prompt segments with a
                positive share into it, largest share first.
        """
        is_prompt = np.array([self.graph.nodes[n]["role"] == "prompt" for n in self._ids], dtype=bool)
        out = {}
        for dst in self.nodes("reasoning") + self.nodes("answer"):
            sl = self.edges.into(self._index[dst])
            src, share = self.edges.src[sl], self.edges.share[sl]
            usable = is_prompt[src] & (share > 0)
            src, share = src[usable], share[usable]
            order = np.argsort(-share, kind="stable")[:k]
            out[dst] = [self._ids[i] for i in src[order]]
        return out

    def pruned(self, node_threshold: float = 0.8, edge_threshold: float = 0.98, max_inputs: int | None = 12,
               fold: bool = True, step_sources: int = 2, max_steps: int | None = None,
               max_edges: int | None = None) -> "HopGraph":
        """The graph reduced to what explains the answer (influences from this graph).

        Inputs (template and prompt segments), at most `max_inputs` of them: the most influential prompt
        segment; the `step_sources` prompt segments each step and the answer draws on most (every step's
        first choice before any second choice), so the evidence read along the chain stays; then the most
        influential others until the kept inputs hold `node_threshold` of all input influence. The rest
        fold into one node `OTHER` (role ``"other"``, attribute ``folded``: their ids) whose edge into a
        node carries the sum of their shares; a single leftover input is kept rather than folded. With
        ``fold=False`` every input and step is kept. The answer is always kept, and the reasoning steps up
        to `max_steps` (default `graph_prune.MAX_STEPS`): beyond it, the most influential steps stay and
        each run of the others folds into one node of role `STEPS_ROLE` ("N more steps", ``folded``).

        Edges: those from each step's kept sources and the strongest edge out of every node, then the
        others by the influence they carry (share × the influence of their target) until `edge_threshold`
        of it all is carried, at most `max_edges` (default `graph_prune.MAX_EDGES`). Shares are not
        renormalised; every node keeps its full-graph ``influence`` as an attribute (a folded node: the
        sum of its members').

        Args:
            node_threshold: The fraction of all input influence the kept inputs hold, in ``(0, 1]``.
            edge_threshold: The fraction of the influence carried along the edges that the kept edges carry, in
                ``(0, 1]``.
            max_inputs: The most inputs kept (None: no cap).
            fold: Whether inputs and runs of steps fold (False: every input and step is kept).
            step_sources: How many top prompt sources of each step and the answer are kept.
            max_steps: The most reasoning steps kept (None: `graph_prune.MAX_STEPS`).
            max_edges: The most edges kept (None: `graph_prune.MAX_EDGES`).

        Returns:
            A new graph of the kept nodes and edges, its ``pruning`` set to the arguments it was pruned with.

        Raises:
            InputError: When `node_threshold` or `edge_threshold` is outside ``(0, 1]`` (`graph_prune.prune`).
        """
        graph, pruning = prune(self, node_threshold, edge_threshold, max_inputs, fold, step_sources, max_steps,
                               max_edges)
        out = HopGraph(graph, self.threshold)
        out.pruning = pruning
        return out

    # --- serialisation -----------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """Node-link data (networkx ``node_link_data`` with key ``edges``, every edge) plus the threshold (and
        the pruning).

        Returns:
            ``{"threshold": τ, "graph": node-link data}``, plus ``"pruning"`` (the arguments of `pruned`) on a
                pruned graph; plain JSON-ready data.
        """
        dst = self.edges.dst()
        data = {"directed": True, "multigraph": False, "graph": dict(self.graph.graph),
                "nodes": [{**self.graph.nodes[n], "id": n} for n in self._ids],
                "edges": [{"share": float(self.edges.share[e]), "raw_share": float(self.edges.raw[e]),
                           "source": self._ids[self.edges.src[e]], "target": self._ids[dst[e]]}
                          for e in range(self.edges.count)]}
        out = {"threshold": self.threshold, "graph": data}
        if self.pruning is not None:
            out["pruning"] = self.pruning
        return out

    def to_json(self, indent: int | None = None) -> str:
        """The graph as JSON text (`to_dict`; NaN and infinity refused).

        Args:
            indent: The JSON indent (None: one line).

        Returns:
            The JSON text of `to_dict`.

        Raises:
            ValueError: When a number is NaN or infinite (``json.dumps`` with ``allow_nan=False``).
        """
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, data: dict) -> "HopGraph":
        """Inverse of `to_dict`; raises ValueError on malformed data.

        Args:
            data: The data `to_dict` wrote (``threshold``, ``graph`` and optionally ``pruning``).

        Returns:
            The graph, its ``pruning`` restored.

        Raises:
            InputError: When `data` is not a hop graph (a ValueError): a missing or malformed ``graph`` or
                ``threshold``, a node without one of `NODE_FIELDS`, or an edge whose share is not a number
                between 0 and 1.
        """
        try:
            graph = nx.node_link_graph(data["graph"], directed=True, multigraph=False, edges="edges")
            threshold = float(data["threshold"])
        except (KeyError, TypeError, nx.NetworkXError) as exc:
            raise InputError(f"not a hop graph: {exc!r}") from None
        for node in graph.nodes:
            graph.nodes[node]["id"] = node
            missing = [f for f in NODE_FIELDS if f not in graph.nodes[node]]
            if missing:
                raise InputError(f"hop graph node {node!r} lacks {missing}")
        if any(not isinstance(s, (int, float)) or not 0 <= s <= 1 for *_, s in graph.edges(data="share", default=-1)):
            raise InputError("hop graph edges need a share between 0 and 1")
        out = cls(graph, threshold)
        out.pruning = data.get("pruning")
        return out

    @classmethod
    def from_json(cls, text: str | bytes) -> "HopGraph":
        """Read a graph written by `to_json`.

        Args:
            text: The JSON text.

        Returns:
            The graph (`from_dict`).

        Raises:
            ValueError: When `text` is not JSON (``json.JSONDecodeError``), or not a hop graph (`InputError`).
        """
        return cls.from_dict(json.loads(text))


__all__ = ["HopGraph", "HopPath", "INPUT_ROLES", "OTHER", "STEPS_ROLE", "EDGE_BUDGET", "incoming_shares"]
