"""Does the hop graph's strongest answer→prompt path end at the sentence that assigns the value?

Scores variable-tracking examples (the `vartrack` task, `tasks.make_example`): each is teacher-forced
through the model once and traced with step-level attribution (hops=1, target the answer); the gold is
the prompt segment that assigns the asked value. Used by `benchmarks/vartrack_paths.py` and its test.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from .tasks import Example, make_example

if TYPE_CHECKING:
    from ..analysis.schema import Trace
    from ..engine.models import LoadedModel


def make_examples(n: int = 20, seed: int = 0, layout: str = "lines") -> list[Example]:
    """Examples `seed` .. `seed + n - 1` of the evaluation's vartrack task, in `layout`.

    Args:
        n: How many examples.
        seed: The first example's seed.
        layout: The vartrack prompt layout (`vartrack.VARTRACK_LAYOUTS`).

    Returns:
        The examples, in seed order.
    """
    return [make_example("vartrack", seed + i, layout=layout) for i in range(n)]


def value_line(example: Example) -> str:
    """The prompt statement that assigns the asked value.

    Args:
        example: A vartrack example.

    Returns:
        The statement, as the prompt writes it (e.g. ``VAR X = 12345.``).
    """
    return example.meta.get("value_line") or f"VAR {example.meta['chain'][0]} = {example.answer}."


def gold_segment(trace: Trace, example: Example) -> str:
    """Id of the prompt segment holding the value assignment.

    Args:
        trace: The example's trace (with segments).
        example: The vartrack example traced.

    Returns:
        The segment's id.

    Raises:
        RuntimeError: When not exactly one prompt segment is the value's statement.
    """
    line = value_line(example)
    hits = [s.id for s in trace.segments if s.role == "prompt" and s.text.strip() == line]
    if len(hits) != 1:
        raise RuntimeError(f"expected one prompt segment {line!r}, found {hits}")
    return hits[0]


def top_segment(trace: Trace, scores: list[float]) -> str:
    """The prompt segment with the largest summed score.

    Args:
        trace: The trace whose prompt segments are compared.
        scores: One score per token of the trace (a hop's contribution, the final scores).

    Returns:
        The segment's id.
    """
    prompt = [s for s in trace.segments if s.role == "prompt"]
    return max(prompt, key=lambda s: sum(scores[s.start:s.end])).id


def path_hits(model: LoadedModel | str, examples: list[Example], k_paths: int = 3, stop_tokens: str = "paper"
              ) -> dict:
    """Trace each example (teacher-forced, hops=1, step-level, `stop_tokens` preset) and score the hop
    graph's paths.

    Args:
        model: The model that reads the examples (a `LoadedModel`, or a name to load).
        examples: Vartrack examples (`make_examples`).
        k_paths: How many strongest paths count for ``hit_top3``.
        stop_tokens: The stop-token preset of the traces.

    Returns:
        ``{"n", "stop_tokens", "hit_rate", "hit_rate_top3", "hit_rate_through_reasoning", "top_segment_rate_hop0",
        "top_segment_rate_hop1", "rows"}``: the rates over the examples, and one row per example (its tokens,
        steps, gold segment, strongest path and whether each way of finding the gold hit).
    """
    from ..analysis.graph import HopGraph
    from ..run.tracing import attribute, prepare

    rows = []
    threads = torch.get_num_threads()
    for i, ex in enumerate(examples):
        prepared = prepare(model, ex.prompt, ex.response)
        trace = attribute(prepared, target="answer", hops=1, steps=True, stop_tokens=stop_tokens)
        torch.set_num_threads(threads)  # the first proximity-kernel call can change torch's thread count
        graph = HopGraph.from_trace(trace)
        gold = gold_segment(trace, ex)
        paths = graph.strongest_paths(k_paths)
        chain = graph.strongest_paths(1, through_reasoning=True)
        hop0 = trace.hops[0].contribution
        rows.append({
            "example": i, "tokens": trace.n_tokens, "steps": len(trace.steps.vectors), "gold": gold,
            "path": list(paths[0].nodes) if paths else [], "strength": paths[0].strength if paths else 0.0,
            "hit": bool(paths) and paths[0].end == gold,
            "hit_top3": any(p.end == gold for p in paths),
            "chain_path": list(chain[0].nodes) if chain else [],
            "hit_through_reasoning": bool(chain) and chain[0].end == gold,
            "gold_depth": graph.hop_depths()[gold],
            "top_segment_hop0": top_segment(trace, hop0) == gold,
            "top_segment_hop1": top_segment(trace, trace.scores.final) == gold,
            "steps_s": trace.timings["steps_s"],
        })
    n = len(rows)
    return {
        "n": n,
        "stop_tokens": stop_tokens,
        "hit_rate": sum(r["hit"] for r in rows) / n,
        "hit_rate_top3": sum(r["hit_top3"] for r in rows) / n,
        "hit_rate_through_reasoning": sum(r["hit_through_reasoning"] for r in rows) / n,
        "top_segment_rate_hop0": sum(r["top_segment_hop0"] for r in rows) / n,
        "top_segment_rate_hop1": sum(r["top_segment_hop1"] for r in rows) / n,
        "rows": rows,
    }


__all__ = ["make_examples", "value_line", "gold_segment", "top_segment", "path_hits"]
