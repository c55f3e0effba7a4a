"""Does the hop graph's strongest answer→prompt path end at the sentence that assigns the value?

Scores variable-tracking examples (the `vartrack` task, `tasks.make_example`): each is teacher-forced
through the model once and traced with step-level attribution (hops=1, target the answer); the gold is
the prompt segment that assigns the asked value. Used by `benchmarks/vartrack_paths.py` and its test.
"""

from __future__ import annotations

import torch

from .tasks import Example, make_example


def make_examples(n: int = 20, seed: int = 0, layout: str = "lines") -> list[Example]:
    """Examples `seed` .. `seed + n - 1` of the evaluation's vartrack task, in `layout`."""
    return [make_example("vartrack", seed + i, layout=layout) for i in range(n)]


def value_line(example: Example) -> str:
    """The prompt statement that assigns the asked value."""
    return example.meta.get("value_line") or f"VAR {example.meta['chain'][0]} = {example.answer}."


def gold_segment(trace, example: Example) -> str:
    """Id of the prompt segment holding the value assignment."""
    line = value_line(example)
    hits = [s.id for s in trace.segments if s.role == "prompt" and s.text.strip() == line]
    if len(hits) != 1:
        raise RuntimeError(f"expected one prompt segment {line!r}, found {hits}")
    return hits[0]


def top_segment(trace, scores: list[float]) -> str:
    """The prompt segment with the largest summed score."""
    prompt = [s for s in trace.segments if s.role == "prompt"]
    return max(prompt, key=lambda s: sum(scores[s.start:s.end])).id


def path_hits(model, examples: list[Example], k_paths: int = 3, stop_tokens: str = "paper") -> dict:
    """Trace each example (teacher-forced, hops=1, step-level, `stop_tokens` preset) and score the hop
    graph's paths."""
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
