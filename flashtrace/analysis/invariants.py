"""What a `Trace` must satisfy beyond its field types (`schema.Trace` runs `check_trace` after parsing).

Per-token vectors (scores, every hop's weights, raw and contribution, every step vector) have one value
a token, none negative and none above `MAX_SCORE` (float32's largest: every sum a view takes stays
finite); spans and the target lie inside the tokens; hops are numbered 0, 1, 2, ...; and, within `REL_TOL`
(values rounded to 6 significant digits pass): ``scores.final = Σ_k hops[k].contribution``,
``scores.prompt`` sums to 1 over the prompt tokens (or is all zero) and is zero elsewhere, a token's
character ``start <= end``, the target lies in the response; segments tile the tokens in order with unique
ids; ``extra`` is bounded. Each check raises ``ValueError`` with a message naming the field.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .limits import MAX_EXTRA_DEPTH, MAX_EXTRA_NODES, MAX_SCORE, REL_TOL
from ..base.errors import InputError

# The functions take a `schema.Trace` (and its records) but do not import schema, which imports them.


def check_trace(tr: Any) -> None:
    """Every check above, cheapest first.

    Args:
        tr: The trace to check, a `schema.Trace` (typed `Any`: schema imports this module).

    Raises:
        InputError: When the trace breaks any of the checks (the message names the field); also when it has step
            vectors but no segments.
    """
    n = len(tr.tokens)
    if tr.steps is not None and tr.segments is None:
        raise InputError("steps needs segments: a step vector belongs to a segment")
    if tr.segments is not None:
        check_segments(tr.segments, n, tr.steps)
    check_interventions(tr)
    check_vectors(_vectors(tr), n)
    check_ranges(tr, n)
    check_sums(tr)
    check_tokens(tr)
    check_extra(tr.extra)


def _vectors(tr) -> dict[str, list[float]]:
    vectors = {"scores.final": tr.scores.final, "scores.prompt": tr.scores.prompt}
    for hop in tr.hops:
        vectors.update({f"hops[{hop.k}].{name}": getattr(hop, name) for name in ("weights", "raw", "contribution")})
    if tr.steps is not None:
        vectors.update({f"steps.vectors[{key}]": vec for key, vec in tr.steps.vectors.items()})
    return vectors


def check_vectors(vectors: dict[str, list[float]], n: int) -> None:
    """Raise ValueError unless each named score vector has `n` values, none negative, none above float32's largest.

    Args:
        vectors: ``{field name: vector}``, the name used in the error message.
        n: The number of tokens of the trace.

    Raises:
        InputError: When a vector's length is not `n`, or it holds a negative value or one above `MAX_SCORE`.
    """
    for name, vec in vectors.items():
        if len(vec) != n:
            raise InputError(f"{name} has {len(vec)} values but the trace has {n} tokens")
        if not vec:
            continue
        values = np.asarray(vec, dtype=np.float64)  # one pass in C: a 10,000-token trace has 10M step values
        if values.min() < 0:
            raise InputError(f"{name} has negative values")
        if values.max() > MAX_SCORE:
            raise InputError(f"{name} has values above {MAX_SCORE:.4g} (float32's largest)")


def check_prompt_runs(tr: Any) -> None:
    """``spans.prompt_ranges`` (one run of prompt tokens per chat message) are ordered, disjoint and inside
    ``spans.prompt``.

    Args:
        tr: The trace to check, a `schema.Trace` (typed `Any`: schema imports this module).

    Raises:
        InputError: When the runs are out of order, overlap, or leave ``spans.prompt`` (or it is missing).
    """
    runs, cover = tr.spans.prompt_ranges or [], tr.spans.prompt
    for (lo, hi), after in zip(runs, [*runs[1:], None]):
        if not (cover is not None and cover[0] <= lo < hi <= cover[1]) or (after is not None and after[0] < hi):
            raise InputError(f"spans.prompt_ranges {[list(r) for r in runs][:5]} must be ordered, disjoint runs "
                             f"inside spans.prompt {cover and list(cover)}")


def check_ranges(tr: Any, n: int) -> None:
    """Spans (the answer's value inside the answer) and the target inside the tokens; hops numbered in order, at
    most ``settings.hops + 1``.

    Args:
        tr: The trace to check, a `schema.Trace` (typed `Any`: schema imports this module).
        n: The number of tokens of the trace.

    Raises:
        InputError: When a span or the target lies outside the tokens, the value outside the answer, the prompt
            runs are malformed (`check_prompt_runs`), or the hops are missing, out of order or too many.
    """
    for name in ("prompt", "reasoning", "answer", "value"):
        rng = getattr(tr.spans, name)
        if rng is not None and not 0 <= rng[0] < rng[1] <= n:
            raise InputError(f"spans.{name} {list(rng)} is outside the {n} tokens")
    check_prompt_runs(tr)
    value, answer = tr.spans.value, tr.spans.answer
    if value is not None and not (answer is not None and answer[0] <= value[0] and value[1] <= answer[1]):
        raise InputError(f"spans.value {list(value)} is not inside spans.answer {answer and list(answer)}")
    lo, hi = tr.settings.target
    if not 0 <= lo < hi <= n:
        raise InputError(f"settings.target {[lo, hi]} is outside the {n} tokens")
    if [h.k for h in tr.hops] != list(range(len(tr.hops))):
        raise InputError("hops must be numbered 0, 1, 2, ... in order")
    if not tr.hops:
        raise InputError("a trace has at least one hop record (hop 0)")
    if len(tr.hops) > tr.settings.hops + 1:
        raise InputError(f"the trace has {len(tr.hops)} hop records but settings.hops is {tr.settings.hops} "
                         f"(at most {tr.settings.hops + 1})")


def _close(a: float, b: float, scale: float) -> bool:
    return abs(a - b) <= REL_TOL * scale + 1e-12


def check_sums(tr: Any) -> None:
    """``scores.final`` is the sum of the hops' contributions; ``scores.prompt`` sums to 1 on the prompt.

    Args:
        tr: The trace to check, a `schema.Trace` (typed `Any`: schema imports this module).

    Raises:
        InputError: When a final score is not the sum of its hop contributions, or ``scores.prompt`` neither sums
            to 1 over the prompt tokens nor is all zero, or is non-zero outside them (all within `REL_TOL`).
    """
    final = tr.scores.final
    scale = max(final, default=0.0)
    for i, value in enumerate(final):
        parts = [hop.contribution[i] for hop in tr.hops]
        if not _close(value, math.fsum(parts), max(scale, sum(parts))):
            raise InputError(f"scores.final[{i}] is {value:.6g} but the hop contributions sum to "
                             f"{math.fsum(parts):.6g}; the final score must be their sum")
    prompt = [i for i, t in enumerate(tr.tokens) if t.role == "prompt"]
    total = math.fsum(tr.scores.prompt[i] for i in prompt)
    if math.fsum(tr.scores.prompt) > 0 and not _close(total, 1.0, 1.0):
        raise InputError(f"scores.prompt sums to {total:.6g} over the prompt tokens; it must sum to 1")
    if not _close(math.fsum(tr.scores.prompt), total, 1.0):
        raise InputError("scores.prompt is non-zero outside the prompt tokens")


def check_tokens(tr: Any) -> None:
    """Character offsets in order; the target in the response.

    Args:
        tr: The trace to check, a `schema.Trace` (typed `Any`: schema imports this module).

    Raises:
        InputError: When a token starts after its end, or the target starts before the response (or there is no
            response).
    """
    for i, tok in enumerate(tr.tokens):
        if tok.start is not None and tok.end is not None and tok.start > tok.end:
            raise InputError(f"tokens[{i}] starts at character {tok.start} after its end {tok.end}")
    lo, hi = tr.settings.target
    response = [i for i, t in enumerate(tr.tokens) if t.role in ("reasoning", "answer")]
    if not response or lo < response[0]:
        raise InputError(f"settings.target {[lo, hi]} starts in the prompt; the target must lie in the response"
                         + (f" (tokens {response[0]}..{len(tr.tokens) - 1})" if response else ""))


def check_segments(segments: list, n: int, steps: Any) -> None:
    """Segments are in order, tile the ``n`` tokens exactly and have unique ids; step ids are segments.

    Args:
        segments: The trace's `SegmentRecord`s.
        n: The number of tokens of the trace.
        steps: The trace's step vectors, a `schema.StepRecord` (typed `Any`: schema imports this module), or None.

    Raises:
        InputError: When the segments are out of order, leave gaps or overlap, do not end at token `n`, repeat an
            id, or a step vector names no segment.
    """
    pos = 0
    for i, seg in enumerate(segments):
        if seg.order != i:
            raise InputError(f"segments[{i}].order is {seg.order}; segments must be listed in order 0, 1, 2, ...")
        if seg.start != pos or seg.end <= seg.start:
            raise InputError(f"segments[{i}] covers tokens {seg.start}..{seg.end}; segments must tile the tokens "
                             f"without gaps or overlaps (expected a start at {pos})")
        pos = seg.end
    if pos != n:
        raise InputError(f"segments end at token {pos} but the trace has {n} tokens")
    ids = [seg.id for seg in segments]
    if len(set(ids)) != len(ids):
        raise InputError("segment ids must be unique")
    if steps is not None and not set(steps.vectors) <= set(ids):
        unknown = sorted(set(steps.vectors) - set(ids))[:3]
        raise InputError(f"steps.vectors names segments that do not exist: {unknown}")


def check_interventions(tr: Any) -> None:
    """Every segment an intervention names is a prompt sentence or reasoning step of the trace.

    Args:
        tr: The trace to check, a `schema.Trace` (typed `Any`: schema imports this module).

    Raises:
        InputError: When an edit names a segment that is no prompt sentence or reasoning step, or a resampled step
            is no reasoning step or does not hold ``n`` continuations of each kind.
    """
    if tr.interventions is None:
        return
    editable = {seg.id for seg in tr.segments or [] if seg.role in ("prompt", "reasoning")}
    for i, edit in enumerate(tr.interventions.edits):
        unknown = [s for s in edit.segments if s not in editable]
        if unknown:
            raise InputError(f"interventions.edits[{i}] names {unknown[:3]}, which are not prompt sentences or "
                             "reasoning steps of this trace")
    _check_resampled(tr)


def _check_resampled(tr) -> None:
    """Every resampled step is a reasoning step of the trace, with `n` continuations of each kind."""
    resampled = tr.interventions.resampled
    steps = {seg.id for seg in tr.segments or [] if seg.role == "reasoning"}
    for i, row in enumerate(resampled.steps if resampled else []):
        if row.step not in steps:
            raise InputError(f"interventions.resampled.steps[{i}] names {row.step!r}, which is not a reasoning step "
                             "of this trace")
        lengths = {len(row.kept), len(row.removed), len(row.kept_match), len(row.removed_match)}
        if lengths != {resampled.n}:
            raise InputError(f"interventions.resampled.steps[{i}] holds {sorted(lengths)} continuations, not n = "
                             f"{resampled.n}")


def check_extra(extra: dict) -> None:
    """`extra` is free-form but bounded: at most `MAX_EXTRA_DEPTH` levels and `MAX_EXTRA_NODES` values
    (so whatever loads can also be saved back), counted before the children are visited.

    Args:
        extra: The trace's free-form ``extra`` data.

    Raises:
        InputError: When it is nested deeper than `MAX_EXTRA_DEPTH` levels or holds more than `MAX_EXTRA_NODES`
            values.
    """
    stack, count = [(extra, 1)], 1
    while stack:
        value, depth = stack.pop()
        if depth > MAX_EXTRA_DEPTH:
            raise InputError(f"extra is nested deeper than {MAX_EXTRA_DEPTH} levels")
        count += len(value)
        if count > MAX_EXTRA_NODES:
            raise InputError(f"extra holds more than {MAX_EXTRA_NODES:,} values")
        children = value.values() if isinstance(value, dict) else value
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
