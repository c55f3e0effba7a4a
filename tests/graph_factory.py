"""Hop graphs built by hand for the graph tests: random ones (T0, P0.., S0.., A in text order) and small
exact ones from a list of nodes and shares."""

import networkx as nx
import numpy as np

from flashtrace.analysis.graph import HopGraph

_ROLE = {"T": "template", "P": "prompt", "S": "reasoning", "A": "answer"}


def hop_graph(ids: list[str], shares: dict[tuple[str, str], float]) -> HopGraph:
    """The graph of nodes `ids` (in text order; the role from the first letter: T, P, S, A) and edges
    ``{(src, dst): share}``."""
    graph = nx.DiGraph(answer=next(n for n in ids if n.startswith("A")))
    for order, node in enumerate(ids):
        graph.add_node(node, id=node, role=_ROLE[node[0]], text=f"text of {node}", start=order, end=order + 1,
                       order=order)
    for (src, dst), share in shares.items():
        graph.add_edge(src, dst, share=share, raw_share=share)
    return HopGraph(graph)


def random_hop_graph(seed: int, n_prompt: int = 6, n_steps: int = 4, density: float = 0.6) -> HopGraph:
    """A random hop graph: T0, P0.., S0.., A in text order; forward edges whose shares into a node sum to < 1."""
    rng = np.random.default_rng(seed)
    ids = ["T0", *(f"P{i}" for i in range(n_prompt)), *(f"S{i}" for i in range(n_steps)), "A"]
    shares = {}
    for j, dst in enumerate(ids):
        if dst[0] not in "SA":
            continue
        srcs = [s for s in ids[:j] if rng.random() < density]
        weights = rng.random(len(srcs) + 1)  # the last part stays on dst's own tokens
        shares.update({(src, dst): float(w) for src, w in zip(srcs, weights[:-1] / weights.sum())})
    return hop_graph(ids, shares)
