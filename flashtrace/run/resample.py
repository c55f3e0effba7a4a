"""Step influence by resampling: for each reasoning step, `n` continuations sampled from that point, with the
step kept (sampled after it) and with it removed (sampled in its place), and what they do to the answer.

Teacher-forced removal (`interventions.step_edits`) keeps every later step as written; a model that relies on
a step may simply restate it later, or a later step may carry the answer on its own. Resampling lets the model
write the rest of its reasoning itself. For step S (tokens ``[start, end)``) the two contexts are the trace's
token ids up to ``end`` (kept) and up to ``start`` (removed); each gets `n` continuations (seeded, the same
seeds for both, so the only difference is the step). A continuation is cut where it writes its own answer
marker (the trace's text just before the target, "Answer:" in the task templates); the trace's own marker and
target tokens are appended and the target is scored teacher-forced (`interventions.score`). The continuation's
own answer (its text after the marker, on that line; without a marker, anywhere in it; when the context
already ends after the marker, its first line) *matches* when it equals the original answer once case, outer
spaces and final punctuation are set aside.

`intervene_and_resample` runs the standard set (`interventions.intervene`) and, with ``n > 0``, this too,
storing it in the record's `resampled`; with ``n = 0`` it is exactly the teacher-forced path.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch

from ..analysis.schema import ResampledStep, ResampleRecord, Trace
from ..engine.estimate import check_run, generation_seconds, scoring_seconds
from ..analysis.interventions import DEFAULT_TEMPERATURE, DEFAULT_TOP_P
from ..analysis.schema import InterventionRecord
from ..analysis.segments import is_answer_marker
from .interventions import Edited, Progress, check_model, pad_id, intervene, score, step_edits
from ..base.errors import InputError

if TYPE_CHECKING:
    from ..analysis.schema import ModelInfo
    from ..engine.models.loading import LoadedModel

SLACK_TOKENS = 16  # new tokens beyond the original reasoning-and-answer length, by default

StepProgress = Callable[[int, int], None]  # (continuation batches done, in all); two batches per step


def _norm(text: str) -> str:
    return text.strip().strip(".,;:!?\"'").strip().casefold()


def answer_tail(trace: Trace) -> int:
    """Where the appended tail starts: the reasoning segment just before the target when it holds only an
    answer marker ("Answer:"), else the target itself.

    Args:
        trace: The trace resampled.

    Returns:
        The token position where the tail (the marker, if any, and the target) starts.
    """
    lo = trace.settings.target[0]
    for seg in trace.segments or []:
        if seg.role == "reasoning" and seg.end == lo and is_answer_marker(seg.text):
            return seg.start
    return lo


def default_tokens(trace: Trace) -> int:
    """The default budget: the original response up to the end of its target, plus `SLACK_TOKENS`.

    Args:
        trace: The trace resampled.

    Returns:
        The number of new tokens a continuation may have.
    """
    return trace.settings.target[1] - trace.response_start + SLACK_TOKENS


def _cut(tokenizer, ids: list[int], stop: set[int], marker: str) -> tuple[list[int], str]:
    """The continuation up to (not including) its answer marker line, and its own answer text."""
    ids = ids[: next((i for i, t in enumerate(ids) if t in stop), len(ids))]
    text = tokenizer.decode(ids, skip_special_tokens=True)
    if not marker:
        return ids, text
    at = text.find(marker)
    if at < 0:
        return ids, ""
    answer = text[at + len(marker):].split("\n", 1)[0]
    keep = 0
    while keep < len(ids) and len(tokenizer.decode(ids[: keep + 1], skip_special_tokens=True)) <= at:
        keep += 1
    return ids[:keep], answer


@torch.inference_mode()
def _sample(loaded, context: Sequence[int], n: int, seed: int, max_new_tokens: int, temperature, top_p) -> list[list[int]]:
    """`n` sampled continuations of `context` (one batch, seeded; the global RNG left as it was)."""
    ids = torch.tensor([list(context)], device=loaded.device)
    cuda = [loaded.device] if loaded.device.type == "cuda" else []
    options = {k: v for k, v in (("temperature", temperature), ("top_p", top_p)) if v is not None}
    with torch.random.fork_rng(devices=cuda):
        torch.manual_seed(seed)
        out = loaded.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                                    do_sample=True, num_return_sequences=n, pad_token_id=pad_id(loaded), **options)
    return [row.tolist() for row in out[:, ids.shape[1]:]]


def _rows(loaded, trace: Trace, context: Sequence[int], samples: list[list[int]]) -> tuple[list[Edited], list[bool]]:
    """The sequences to score (context + cut continuation + the trace's marker and target) and the matches."""
    ids = [t.id for t in trace.tokens]
    tail_at, (lo, hi) = answer_tail(trace), trace.settings.target
    tok = loaded.tokenizer
    marker = tok.decode(ids[tail_at:lo], skip_special_tokens=True).strip()
    wanted = _norm(tok.decode(ids[lo:hi], skip_special_tokens=True))
    stop = {t for t in (tok.eos_token_id, tok.pad_token_id) if t is not None}
    rows, matches = [], []
    for sample in samples:  # a context ends at a step, never after the marker (the marker is no step)
        kept, own = _cut(tok, sample, stop, marker)
        seq = list(context) + kept + ids[tail_at:hi]
        rows.append(Edited(tuple(seq), (len(seq) - (hi - lo), len(seq)), trace.response_start, kind="resample"))
        matches.append(_norm(own) == wanted if marker else wanted in _norm(own))
    return rows, matches


def check_resampling(loaded: LoadedModel, trace: Trace, n: int, max_new_tokens: int | None = None,
                     batch_size: int = 8) -> int:
    """The new-token budget of `resample_steps`, once the run is known to fit (`check_run`: the trace and the budget
    in the context, `n` continuations sampled side by side in memory).

    Args:
        loaded: The model that is to resample.
        trace: The trace resampled.
        n: How many continuations per context.
        max_new_tokens: The new-token budget; None (or 0) for `default_tokens`.
        batch_size: How many rows are scored as one batch.

    Returns:
        The new-token budget.

    Raises:
        InputError: When `n` is below 1, the model is not the trace's, or the trace and the budget do not fit
            its context.
        ResourceError: When the sampled continuations would not fit in memory.
    """
    if n < 1:
        raise InputError(f"n must be at least 1 to resample, got {n}")
    check_model(loaded, trace)
    budget = max_new_tokens or default_tokens(trace)
    check_run(loaded, trace.n_tokens, new_tokens=budget, rows=max(n, batch_size), what="the trace",
              advice="resample fewer new tokens (max_new_tokens, --resample-tokens)")
    return budget


def resample_steps(loaded: LoadedModel, trace: Trace, n: int, *, seed: int = 0, max_new_tokens: int | None = None,
                   temperature: float | None = DEFAULT_TEMPERATURE, top_p: float | None = DEFAULT_TOP_P,
                   batch_size: int = 8, progress: StepProgress | None = None) -> ResampleRecord:
    """`n` continuations per reasoning step before the target, with the step kept and removed (see the module
    docstring).

    Args:
        loaded: The model the trace was made with.
        trace: The trace resampled.
        n: How many continuations per context.
        seed: Seeds step i's continuations with ``seed + i`` (the same for its kept and removed contexts).
        max_new_tokens: The new-token budget; None for `default_tokens`.
        temperature: The sampling temperature; None for the model's generation default.
        top_p: The nucleus-sampling mass; None for the model's generation default.
        batch_size: How many rows are scored as one batch.
        progress: `progress(done, total)` hears of each batch of continuations (two per step) and may raise
            to stop.

    Returns:
        The record: per step, the target's log-probabilities and answer matches with the step kept and removed.

    Raises:
        InputError: When the resampling is refused (from `check_resampling`).
        ResourceError: When it would not fit in memory.
    """
    budget = check_resampling(loaded, trace, n, max_new_tokens, batch_size)
    ids = [t.id for t in trace.tokens]
    steps = [e.segments[0] for e in step_edits(trace)]
    seg = {s.id: s for s in trace.segments or []}
    start, out, total = time.perf_counter(), [], 2 * len(steps)
    for i, step in enumerate(steps):
        results = []
        for j, context in enumerate((ids[: seg[step].end], ids[: seg[step].start])):
            samples = _sample(loaded, context, n, seed + i, budget, temperature, top_p)
            rows, matches = _rows(loaded, trace, context, samples)
            results.append((score(loaded, rows, batch_size), matches))
            if progress:
                progress(2 * i + j + 1, total)
        (kept, kept_match), (removed, removed_match) = results
        out.append(ResampledStep(step=step, kept=kept, removed=removed, kept_match=kept_match,
                                 removed_match=removed_match))
    return ResampleRecord(n=n, seed=seed, max_new_tokens=budget, temperature=temperature, top_p=top_p,
                          seconds=time.perf_counter() - start, steps=out)


def intervene_and_resample(loaded: LoadedModel, trace: Trace, n: int = 0, *,
                           resample_options: dict[str, Any] | None = None,
                           resample_progress: StepProgress | None = None, progress: Progress | None = None,
                           **options: Any) -> InterventionRecord:
    """`interventions.intervene(loaded, trace, **options)`; with `n` > 0 (and the steps not left out), also
    `resample_steps` with `n` continuations, stored in the record's `resampled`.

    Args:
        loaded: The model the trace was made with.
        trace: The trace edited.
        n: How many continuations per context to resample (0: the teacher-forced standard set only).
        resample_options: Keyword arguments of `resample_steps` (seed, max_new_tokens, temperature, top_p,
            batch_size); the seed and batch size default to the options' own.
        resample_progress: Hears of each batch of continuations, as `resample_steps`'s `progress`.
        progress: Hears of the standard set's scoring, as `interventions.intervene`'s `progress`.
        **options: Keyword arguments of `interventions.intervene` (steps, sentences, n_random, seed, batch_size).

    Returns:
        The standard set's record, with the resampling in `resampled` (and its seconds added) when it ran.

    Raises:
        InputError: When `n` is negative, or the resampling (checked before the standard set's minutes, not after)
            or the standard set is refused.
        ResourceError: When the run would not fit in memory.
    """
    if n < 0:
        raise InputError(f"n must be at least 0, got {n}")
    chosen = {"seed": options.get("seed", 0), "batch_size": options.get("batch_size", 8), **(resample_options or {})}
    resampling = bool(n) and options.get("steps", True)
    if resampling:  # refused before the standard set's minutes, not after
        check_resampling(loaded, trace, n, chosen.get("max_new_tokens"), chosen["batch_size"])
    record = intervene(loaded, trace, progress=progress, **options)
    if not resampling:
        return record
    resampled = resample_steps(loaded, trace, n, progress=resample_progress, **chosen)
    return record.model_copy(update={"resampled": resampled, "seconds": record.seconds + resampled.seconds})


def estimate_resample_seconds(model: LoadedModel | ModelInfo, trace: Trace, n: int,
                              max_new_tokens: int | None = None) -> float:
    """Predicted seconds of `resample_steps`: per step two contexts, each `n` continuations (counted one after
    another: an upper bound for the batched sampling) and their scoring.

    Args:
        model: The `LoadedModel`, or ``trace.model`` before any model is loaded (as `estimate_seconds` takes).
        trace: The trace resampled.
        n: How many continuations per context.
        max_new_tokens: The new-token budget; None (or 0) for `default_tokens`.

    Returns:
        The predicted seconds; 0 when `n` is below 1.
    """
    if n < 1:
        return 0.0
    budget = max_new_tokens or default_tokens(trace)
    steps = len(step_edits(trace))
    n_tokens = len(trace.tokens)
    per_context = n * generation_seconds(model, n_tokens, budget) + scoring_seconds(model, n_tokens + budget, n)
    return 2 * steps * per_context


__all__ = ["check_resampling", "resample_steps", "intervene_and_resample", "estimate_resample_seconds", "answer_tail", "default_tokens", "DEFAULT_TEMPERATURE",
           "DEFAULT_TOP_P"]
