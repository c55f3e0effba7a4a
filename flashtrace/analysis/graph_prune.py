"""`HopGraph.pruned`: the hop graph reduced to what explains the answer, small enough to draw.

Three choices, each its own function: which inputs stay (the rest fold into `OTHER`), which reasoning
steps stay (runs of the others fold into "N more steps" nodes), and which edges stay (by the influence
they carry, at most `MAX_EDGES`). Edges between folded nodes are summed over all edges of the full graph
in one vector pass, so pruning a graph of a million edges takes a fraction of a second.
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np

from ..base.errors import InputError

INPUT_ROLES = ("template", "prompt")
OTHER = "other"  # id of the node that stands for the folded input segments (role "other")
STEPS_ROLE = "steps"  # role of a node that stands for a folded run of reasoning steps
MAX_STEPS = 40  # reasoning steps drawn at most (the most influential); runs of the others fold
MAX_EDGES = 300  # edges drawn at most


def _priority(g, sources: dict, step_sources: int) -> list[str]:
    """The inputs kept first, in order: the top prompt segment, then each step's first source, then each
    step's second source, and so on."""
    rounds = [[srcs[r] for srcs in sources.values() if r < len(srcs)] for r in range(step_sources)]
    return list(dict.fromkeys([*[n for n, _ in g.evidence(1)], *(n for r in rounds for n in r)]))


def choose_inputs(g: Any, influence: dict, sources: dict, node_threshold: float, max_inputs: int | None,
                  fold: bool, step_sources: int) -> list[str]:
    """The inputs folded into `OTHER`; kept: the top prompt segment, each step's first sources then its second
    ones, then by influence until `node_threshold` of the input influence is held (see `HopGraph.pruned`).

    Args:
        g: The full graph, a `HopGraph` (`flashtrace.analysis.graph.HopGraph`, which imports this module, hence `Any`).
        influence: ``{node: influence}`` of the full graph (`HopGraph.influence`).
        sources: ``{step: [prompt ids]}``, each step's and the answer's top sources (`HopGraph.step_sources`).
        node_threshold: The fraction of all input influence the kept inputs must hold, in (0, 1].
        max_inputs: The most inputs kept (None: no cap).
        fold: Whether to fold at all (False: nothing is folded).
        step_sources: How many sources of each step are kept first (the first ones of all steps, then the second
            ones, ...).

    Returns:
        The ids of the inputs to fold (empty when `fold` is False or only one would be folded:
            a single leftover input is shown rather than folded).
    """
    inputs = [n for n in g.nodes() if g.graph.nodes[n]["role"] in INPUT_ROLES]
    if not fold:
        return []
    cap = len(inputs) if max_inputs is None else max_inputs
    keep = _priority(g, sources, step_sources)[:cap]
    held, total = sum(influence[n] for n in keep), sum(influence[n] for n in inputs)
    for node in sorted(inputs, key=lambda n: (-influence[n], g.graph.nodes[n]["order"])):
        if len(keep) >= cap or held >= node_threshold * total * (1 - 1e-9):
            break
        if node not in keep:
            keep.append(node)
            held += influence[node]
    folded = [n for n in inputs if n not in set(keep)]
    return folded if len(folded) != 1 else []  # a single leftover input is shown rather than folded


def step_runs(g: Any, influence: dict, max_steps: int | None) -> list[list[str]]:
    """Runs (two or more in a row) of the reasoning steps left out when only the `max_steps` most
    influential are drawn; [] when they all fit.

    Args:
        g: The full graph, a `HopGraph` (`flashtrace.analysis.graph.HopGraph`, which imports this module, hence `Any`).
        influence: ``{node: influence}`` of the full graph (`HopGraph.influence`).
        max_steps: The most reasoning steps drawn (None: all).

    Returns:
        The runs of left-out steps, each a list of step ids in text order (a single left-out step is no run).
    """
    steps = g.nodes("reasoning")
    if max_steps is None or len(steps) <= max_steps:
        return []
    kept = set(sorted(steps, key=lambda n: (-influence[n], g.graph.nodes[n]["order"]))[:max_steps])
    runs, run = [], []
    for node in [*steps, None]:
        if node is not None and node not in kept:
            run.append(node)
            continue
        if len(run) > 1:
            runs.append(run)
        run = []
    return runs


def _folded_node(g, members: list[str], influence: dict, node_id: str, role: str, text: str) -> tuple:
    data = [g.graph.nodes[n] for n in members]
    order = max(d["order"] for d in data) if role == "other" else min(d["order"] for d in data)
    return node_id, {"id": node_id, "role": role, "text": text, "start": min(d["start"] for d in data),
                     "end": max(d["end"] for d in data), "order": order, "folded": members,
                     "influence": sum(influence[n] for n in members)}


def drawn_nodes(g: Any, influence: dict, folded: list[str], runs: list[list[str]]) -> tuple[nx.DiGraph, dict]:
    """The pruned graph's nodes, and ``{full node: drawn node}`` (folded nodes map to their group).

    Args:
        g: The full graph, a `HopGraph` (`flashtrace.analysis.graph.HopGraph`, which imports this module, hence `Any`).
        influence: ``{node: influence}`` of the full graph, stored on each drawn node.
        folded: The inputs folded into `OTHER` (`choose_inputs`).
        runs: The runs of reasoning steps folded into one node each (`step_runs`).

    Returns:
        The drawn graph (nodes only, no edges yet) and ``{full node: drawn node}``.
    """
    graph = nx.DiGraph(**g.graph.graph)
    into = {n: n for n in g.graph.nodes}
    groups = []
    if folded:
        groups.append(_folded_node(g, folded, influence, OTHER, "other", f"other context ({len(folded)} sentences)"))
    for run in runs:
        node_id = f"{run[0]}–{run[-1]}"
        groups.append(_folded_node(g, run, influence, node_id, STEPS_ROLE, f"{len(run)} more steps ({node_id})"))
    for node_id, data in groups:
        into.update(dict.fromkeys(data["folded"], node_id))
    for node, data in g.graph.nodes(data=True):
        if into[node] == node:
            graph.add_node(node, **{**data, "influence": influence[node]})
    graph.add_nodes_from(groups)
    return graph, into


def edge_flows(g: Any, influence: dict, into: dict, graph: nx.DiGraph
               ) -> tuple[list[tuple[str, str]], np.ndarray, np.ndarray]:
    """``(pairs [(src, dst)], shares, flows)`` of the drawn edges, summed over every edge of the full graph.

    A drawn edge's flow is the influence it carries (share × the influence of its target); its share is the
    sum of its members' shares, into a folded run of steps weighted by the members' influence.

    Args:
        g: The full graph, a `HopGraph` (`flashtrace.analysis.graph.HopGraph`, which imports this module, hence `Any`).
        influence: ``{node: influence}`` of the full graph.
        into: ``{full node: drawn node}`` (`drawn_nodes`).
        graph: The drawn graph's nodes (`drawn_nodes`).

    Returns:
        The drawn edges as ``(src, dst)`` pairs, and their shares and flows, one per pair.
    """
    ids = list(graph.nodes)
    index = {n: i for i, n in enumerate(ids)}
    full = g.edges
    node_of = np.array([index[into[n]] for n in g._ids], dtype=np.int64)  # full index -> drawn index
    infl = np.array([influence[n] for n in g._ids])
    members = np.bincount(node_of, minlength=len(ids))[node_of]
    group_infl = np.bincount(node_of, weights=infl, minlength=len(ids))[node_of]
    weight = np.where(group_infl > 0, infl / np.where(group_infl > 0, group_infl, 1.0), 1.0 / members)  # singles: 1
    dst = full.dst()
    src_d, dst_d = node_of[full.src], node_of[dst]
    inner = src_d != dst_d
    key = src_d[inner] * len(ids) + dst_d[inner]
    if len(ids) ** 2 <= 4 * key.shape[0] + 1_000_000:  # few drawn nodes: count by key, no sort
        present = np.bincount(key, minlength=len(ids) ** 2) > 0
        keys = np.nonzero(present)[0]
        where = np.cumsum(present)[key] - 1
    else:
        keys, where = np.unique(key, return_inverse=True)
    shares = np.bincount(where, weights=(full.share * weight[dst])[inner])
    flows = np.bincount(where, weights=(full.share * infl[dst])[inner])
    pairs = [(ids[k // len(ids)], ids[k % len(ids)]) for k in keys.tolist()]
    return pairs, shares, flows


def _strongest_out(pairs, flows) -> set[int]:
    """The edge with the largest flow out of each node."""
    strongest: dict[str, int] = {}
    for i, (src, _) in enumerate(pairs):
        if flows[i] > 0 and (src not in strongest or flows[i] > flows[strongest[src]]):
            strongest[src] = i
    return set(strongest.values())


def choose_edges(pairs: list[tuple[str, str]], flows: np.ndarray, sources: dict, folded: set, edge_threshold: float,
                 max_edges: int) -> list[int]:
    """Indices into `pairs`: each step's kept sources, the strongest edge out of every node, then the others by
    flow until `edge_threshold` of the flow is carried or `max_edges` are chosen.

    Args:
        pairs: The drawn edges, ``(src, dst)`` (`edge_flows`).
        flows: The influence each edge of `pairs` carries (`edge_flows`).
        sources: ``{step: [prompt ids]}`` of the drawn steps; their edges are kept first (unless the source is
            folded).
        folded: The folded input ids.
        edge_threshold: The fraction of all flow the chosen edges must carry, in (0, 1].
        max_edges: The most edges chosen (the kept sources and strongest edges are chosen even beyond it).

    Returns:
        The chosen indices into `pairs`, ascending.
    """
    at = {pair: i for i, pair in enumerate(pairs)}
    chosen = {at[(src, dst)] for dst, srcs in sources.items() for src in srcs if (src, dst) in at and src not in folded}
    chosen |= _strongest_out(pairs, flows)
    carried, budget = float(sum(flows[i] for i in chosen)), edge_threshold * float(flows.sum()) * (1 - 1e-9)
    for i in np.argsort(-flows, kind="stable").tolist():
        if carried >= budget or flows[i] <= 0 or len(chosen) >= max_edges:
            break
        if i not in chosen:
            chosen.add(i)
            carried += float(flows[i])
    return sorted(chosen)


def prune(g: Any, node_threshold: float, edge_threshold: float, max_inputs: int | None, fold: bool, step_sources: int,
          max_steps: int | None, max_edges: int | None) -> tuple[nx.DiGraph, dict]:
    """The pruned graph of `g` (a `HopGraph`) and the arguments it was pruned with (`HopGraph.pruned` says
    what is kept).

    Args:
        g: The full graph, a `HopGraph` (`flashtrace.analysis.graph.HopGraph`, which imports this module, hence `Any`).
        node_threshold: The fraction of the input influence the kept inputs hold, in (0, 1].
        edge_threshold: The fraction of the flow the kept edges carry, in (0, 1].
        max_inputs: The most inputs kept (None: no cap).
        fold: Whether inputs and runs of steps fold (False: every input and step is kept).
        step_sources: How many top prompt sources of each step and the answer are kept.
        max_steps: The most reasoning steps drawn (None: `MAX_STEPS`).
        max_edges: The most edges drawn (None: `MAX_EDGES`).

    Returns:
        The pruned graph (edges with ``share`` and ``raw_share``) and ``{argument: value}`` it was pruned with
            (`max_steps` and `max_edges` filled in).

    Raises:
        InputError: When a threshold is outside (0, 1].
    """
    if not 0 < node_threshold <= 1 or not 0 < edge_threshold <= 1:
        raise InputError("node and edge thresholds must be in (0, 1]")
    max_steps = MAX_STEPS if max_steps is None else max_steps
    max_edges = MAX_EDGES if max_edges is None else max_edges
    influence = g.influence()
    sources = g.step_sources(step_sources)
    folded = choose_inputs(g, influence, sources, node_threshold, max_inputs, fold, step_sources)
    graph, into = drawn_nodes(g, influence, folded, step_runs(g, influence, max_steps if fold else None))
    pairs, shares, flows = edge_flows(g, influence, into, graph)
    for i in choose_edges(pairs, flows, {d: s for d, s in sources.items() if into[d] == d}, set(folded),
                          edge_threshold, max_edges):
        graph.add_edge(*pairs[i], share=float(shares[i]), raw_share=float(shares[i]))
    return graph, {"node_threshold": node_threshold, "edge_threshold": edge_threshold, "max_inputs": max_inputs,
                   "fold": fold, "step_sources": step_sources, "max_steps": max_steps, "max_edges": max_edges}


__all__ = ["INPUT_ROLES", "OTHER", "STEPS_ROLE", "prune", "choose_inputs", "step_runs", "drawn_nodes", "edge_flows", "choose_edges", "MAX_STEPS", "MAX_EDGES"]
