"""Interventions: take prompt sentences or reasoning steps away (or replace them) and score the answer again.

Edits work on the trace's own token ids: a removed segment's tokens are cut out, a replacement's tokens
(the text tokenised on its own) take the place of the first segment named, and every other token keeps its
id and order, so the edited sequence differs from the original in exactly the edited segments. The target
(the trace's target span, the answer by default) is then scored teacher-forced at its new position: its
summed log-probability, as `DeletionScorer` scores deletions (which replace tokens instead of removing them).

Edited sequences of different lengths run as one batch, right-padded: a causal model's prediction at a
position sees only what precedes it, so the padding changes no score; only the logits that predict target
tokens are computed. `intervene` plans the standard set (each reasoning step removed; the top evidence
sentence, random sentences and the gold sentences removed) and returns an `InterventionRecord` to store
in the trace (`with_interventions`); `edit` runs one edit of the user's, optionally letting the model write
a new answer (greedy) and tracing it again.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

import torch

from ..analysis.facts import analyse
from ..analysis.interventions import DEFAULT_RANDOM, with_interventions  # noqa: F401 - re-exported
from ..analysis.schema import EditRecord, InterventionRecord, Trace
from ..analysis.segments import steps_before_target
from ..engine.estimate import check_run, generation_seconds, scoring_seconds
from ..engine.models.progress import each_layer
from ..base.errors import InputError

if TYPE_CHECKING:
    from ..analysis.schema import ModelInfo, SegmentRecord
    from ..engine.models.loading import LoadedModel

Progress = Callable[[int, int], None]  # (units done, units in all); a unit is one sequence through one layer
EDITABLE = ("prompt", "reasoning")


@dataclass(frozen=True)
class Edited:
    """An edited token sequence: its ids, where the target now lies, and where the response now starts."""

    ids: tuple[int, ...]
    target: tuple[int, int]
    response_start: int
    segments: tuple[str, ...] = ()
    replacement: str | None = None
    kind: str = "edit"


def _segment_map(trace: Trace) -> dict:
    if not trace.segments:
        raise InputError("this trace has no segments (sentences and steps); trace it again to edit it")
    return {s.id: s for s in trace.segments}


def chosen_segments(trace: Trace, segment_ids: Sequence[str]) -> list[SegmentRecord]:
    """The trace's segments named by `segment_ids` (each once, in text order), checked to be editable.

    Args:
        trace: The trace whose segments are named.
        segment_ids: The ids of the segments to edit (a repeated id counts once).

    Returns:
        The named segments, each once, in text order.

    Raises:
        InputError: When the trace has no segments, when an id is unknown, names a segment that is not a prompt
            sentence or a reasoning step, or one that overlaps the target, or when no id is given.
    """
    segments = _segment_map(trace)
    lo, hi = trace.settings.target
    chosen = []
    for seg_id in dict.fromkeys(segment_ids):
        seg = segments.get(seg_id)
        if seg is None:
            raise InputError(f"no segment {seg_id!r} in this trace")
        if seg.role not in EDITABLE:
            raise InputError(f"segment {seg_id} is {seg.role}; only prompt sentences and reasoning steps can be edited")
        if seg.start < hi and lo < seg.end:
            raise InputError(f"segment {seg_id} overlaps the target (tokens {lo}..{hi - 1}), whose log-probability "
                             "is what an edit measures")
        chosen.append(seg)
    if not chosen:
        raise InputError("name at least one segment to edit")
    return sorted(chosen, key=lambda s: s.start)


def fitted_replacement(trace: Trace, segment_ids: Sequence[str], replacement: str) -> str:
    """`replacement` with the first named segment's leading and trailing whitespace (a sentence's space
    before it, a step's line break after it) unless it has its own, so it takes the segment's place.

    Args:
        trace: The trace whose segments are named.
        segment_ids: The ids of the edited segments; the first (in text order) is the one replaced.
        replacement: The replacement text.

    Returns:
        The replacement with the segment's outer whitespace where it has none of its own (an empty replacement
            gets none).

    Raises:
        InputError: When a segment id is not editable (from `chosen_segments`).
    """
    text = chosen_segments(trace, segment_ids)[0].text
    lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()):]
    if replacement[:1].isspace() or not replacement:
        lead = ""
    if replacement[-1:].isspace() or not replacement:
        trail = ""
    return lead + replacement + trail


def edit_ids(trace: Trace, segment_ids: Sequence[str], replacement_ids: Sequence[int] | None = None,
             replacement: str | None = None, kind: str = "edit") -> Edited:
    """The trace's token ids with `segment_ids` removed, or the first of them replaced by `replacement_ids`
    (the others removed), and the target's and the response's new positions.

    Args:
        trace: The trace edited.
        segment_ids: The ids of the segments removed (or, the first in text order, replaced).
        replacement_ids: The token ids that take the first segment's place; None (or empty) removes it.
        replacement: The replacement's text, recorded in the result.
        kind: What the edit is (``edit``, ``step``, ``top``, ``random``, ``gold``, ...), recorded in the result.

    Returns:
        The edited sequence, with the target's and the response's new positions.

    Raises:
        InputError: When a segment id is not editable (from `chosen_segments`).
    """
    chosen = chosen_segments(trace, segment_ids)
    ids = [t.id for t in trace.tokens]
    insert = list(replacement_ids or [])
    cut = {p for seg in chosen for p in range(seg.start, seg.end)}
    out, shift = [], {}
    for pos, token_id in enumerate(ids):
        if pos == chosen[0].start:
            out.extend(insert)
        shift[pos] = len(out)
        if pos not in cut:
            out.append(token_id)
    shift[len(ids)] = len(out)
    lo, hi = trace.settings.target
    return Edited(tuple(out), (shift[lo], shift[lo] + hi - lo), shift[trace.response_start],
                  tuple(s.id for s in chosen), replacement, kind)


def unedited(trace: Trace) -> Edited:
    """The trace's own sequence, as an `Edited` with nothing edited.

    Args:
        trace: The trace.

    Returns:
        The trace's token ids, its target and its response start.
    """
    return Edited(tuple(t.id for t in trace.tokens), tuple(trace.settings.target), trace.response_start)


def check_model(loaded: LoadedModel, trace: Trace) -> None:
    """Refuse (InputError) a model whose vocabulary cannot hold the trace's token ids: not the model it was made with.

    Args:
        loaded: The model checked.
        trace: The trace it is to score.

    Raises:
        InputError: When a token id of the trace is beyond the model's vocabulary.
    """
    vocab = loaded.model.get_input_embeddings().weight.shape[0]
    if max(t.id for t in trace.tokens) >= vocab:
        raise InputError(f"the trace's token ids do not fit this model's vocabulary ({vocab}); load the model the "
                         f"trace was made with ({trace.model.name})")


def pad_id(loaded: LoadedModel) -> int:
    """The id that pads a batch of sequences of unequal length: the tokenizer's pad, else its EOS, else 0.

    Args:
        loaded: The model whose tokenizer is asked.

    Returns:
        The padding token id.
    """
    tok = loaded.tokenizer
    for tid in (tok.pad_token_id, tok.eos_token_id):
        if tid is not None:
            return int(tid)
    return 0


@torch.inference_mode()
def _score_batch(loaded, rows: Sequence[Edited]) -> list[float]:
    """Target log-probability of each row, right-padded into one batch."""
    width = max(len(r.ids) for r in rows)
    batch = torch.full((len(rows), width), pad_id(loaded), dtype=torch.long)  # [B, W]
    mask = torch.zeros(len(rows), width, dtype=torch.long)
    keep = torch.zeros(len(rows), width, dtype=torch.bool)  # positions whose logits predict a target token
    for b, row in enumerate(rows):
        batch[b, : len(row.ids)] = torch.tensor(row.ids)
        mask[b, : len(row.ids)] = 1
        keep[b, row.target[0] - 1: row.target[1] - 1] = True
    device = loaded.device
    logits = loaded.model(input_ids=batch.to(device), attention_mask=mask.to(device), use_cache=False,
                          logits_to_keep=keep.to(device)).logits  # [sum of target lengths, V]
    logp = torch.log_softmax(logits.float(), dim=-1).cpu()
    out, at = [], 0
    for row in rows:
        lo, hi = row.target
        wanted = torch.tensor(row.ids[lo:hi])
        out.append(float(logp[at: at + hi - lo].gather(-1, wanted[:, None]).sum(dtype=torch.float64)))
        at += hi - lo
    return out


def score(loaded: LoadedModel, rows: Sequence[Edited], batch_size: int = 8,
          progress: Progress | None = None) -> list[float]:
    """The target's summed log-probability in each edited sequence (teacher-forced).

    Args:
        loaded: The model that scores.
        rows: The edited sequences.
        batch_size: How many rows of similar length run as one batch.
        progress: `progress(done, total)` hears of every layer of every batch (a unit is one sequence through
            one layer) and may raise to stop.

    Returns:
        One log-probability per row, in the order of `rows`.

    Raises:
        InputError: When `batch_size` is below 1 or a row's target starts at the first token.
    """
    if batch_size < 1:
        raise InputError(f"batch_size must be at least 1, got {batch_size}")
    for row in rows:
        if row.target[0] < 1:
            raise InputError("the target must start after the first token")
    n_layers = len(loaded.spec.decoder_layers(loaded.model))
    order = sorted(range(len(rows)), key=lambda i: len(rows[i].ids))
    total, out = len(rows) * n_layers, [0.0] * len(rows)
    for lo in range(0, len(order), batch_size):
        chunk = order[lo: lo + batch_size]

        def on_layer(i: int, _n: int, done: int = lo * n_layers, size: int = len(chunk)) -> None:
            progress(done + size * i, total)

        with each_layer(loaded, on_layer if progress else None):
            values = _score_batch(loaded, [rows[i] for i in chunk])
        for i, value in zip(chunk, values):
            out[i] = value
    if progress:
        progress(total, total)
    return out


# --- the standard set of interventions ------------------------------------------------------------------

def step_edits(trace: Trace) -> list[Edited]:
    """One edit per reasoning step before the target: that step removed (a segment that only marks the answer,
    "Answer:", is no step: `analysis.segments.steps_before_target`).

    Args:
        trace: The trace whose steps are removed.

    Returns:
        One ``step`` edit per step, in text order.
    """
    return [edit_ids(trace, [s.id], kind="step") for s in steps_before_target(trace)]


def sentence_edits(trace: Trace, n_random: int = DEFAULT_RANDOM, seed: int = 0) -> list[Edited]:
    """Prompt-evidence removals: the top sentence of the evidence ranking (`analyse(trace).evidence()`),
    random other prompt sentences, and all gold sentences together (when the trace knows its gold).

    Args:
        trace: The trace whose prompt sentences are removed.
        n_random: How many other prompt sentences are drawn at random without replacement (fewer when there are
            fewer).
        seed: Seeds the random draw.

    Returns:
        The ``top`` edit, then the ``random`` ones, then the ``gold`` one (each where there is one).

    Raises:
        InputError: When `n_random` is negative or the trace has no prompt sentences (segments).
    """
    if n_random < 0:
        raise InputError("n_random must be at least 0")
    facts = analyse(trace)
    if facts.piece_kind != "sentence":
        raise InputError("this trace has no prompt sentences (segments); trace it again to remove sentences")
    out = []
    evidence = facts.evidence(1)
    top = evidence[0][0].key if evidence else None
    if top is not None:
        out.append(edit_ids(trace, [top], kind="top"))
    others = [p.key for p in facts.pieces if p.key != top]
    drawn = random.Random(seed).sample(others, min(n_random, len(others)))
    out += [edit_ids(trace, [key], kind="random") for key in drawn]
    gold = [p.key for p in facts.pieces if p.gold]
    if gold:
        out.append(edit_ids(trace, gold, kind="gold"))
    return out


def plan(trace: Trace, steps: bool = True, sentences: bool = True, n_random: int = DEFAULT_RANDOM,
         seed: int = 0) -> list[Edited]:
    """The edits `intervene` scores (without the unedited sequence).

    Args:
        trace: The trace edited.
        steps: Include one removal per reasoning step (`step_edits`).
        sentences: Include the prompt-sentence removals (`sentence_edits`).
        n_random: How many random prompt sentences are removed.
        seed: Seeds the random draw.

    Returns:
        The step edits, then the sentence edits.

    Raises:
        InputError: When the sentence edits cannot be made (from `sentence_edits`).
    """
    return (step_edits(trace) if steps else []) + (sentence_edits(trace, n_random, seed) if sentences else [])


def estimate_seconds(model: LoadedModel | ModelInfo, trace: Trace, n_edits: int, new_tokens: int = 0) -> float:
    """Predicted seconds to score `n_edits` edits and the unedited sequence (and to generate `new_tokens`
    after one of them).

    Args:
        model: The `LoadedModel`, or ``trace.model`` before any model is loaded.
        trace: The trace edited.
        n_edits: How many edits are scored (besides the unedited sequence).
        new_tokens: How many tokens are generated after one of them (0: none).

    Returns:
        The predicted seconds.
    """
    n = len(trace.tokens)
    seconds = scoring_seconds(model, n, n_edits + 1)
    if new_tokens:
        seconds += generation_seconds(model, n, new_tokens)
    return seconds


def check_standard_set(loaded: LoadedModel, trace: Trace, n_edits: int, batch_size: int = 8) -> None:
    """What `intervene` checks before scoring `n_edits` edits: the model is the trace's (`check_model`) and the run
    fits (`check_run`: the trace in the context, a batch of rows in memory; removals only shorten it).

    Args:
        loaded: The model that is to score.
        trace: The trace edited.
        n_edits: How many edits are to be scored.
        batch_size: How many rows run as one batch.

    Raises:
        InputError: When the model is not the trace's or the trace does not fit its context.
        ResourceError: When a batch would not fit in the memory available.
    """
    check_model(loaded, trace)
    check_run(loaded, trace.n_tokens, rows=min(batch_size, n_edits + 1), what="the trace",
              advice="load the model the trace was made with")


def intervene(loaded: LoadedModel, trace: Trace, *, steps: bool = True, sentences: bool = True,
              n_random: int = DEFAULT_RANDOM, seed: int = 0, batch_size: int = 8,
              progress: Progress | None = None) -> InterventionRecord:
    """Score the standard interventions (`plan`) on `trace` with `loaded`.

    Args:
        loaded: The model the trace was made with.
        trace: The trace edited.
        steps: Remove each reasoning step.
        sentences: Remove the top, random and gold prompt sentences.
        n_random: How many random prompt sentences are removed.
        seed: Seeds the random draw.
        batch_size: How many rows run as one batch.
        progress: `progress(done, total)` hears of every layer of every batch and may raise to stop.

    Returns:
        The record to store with `with_interventions`.

    Raises:
        InputError: When the edits cannot be made or the model is not the trace's (from `plan`,
            `check_standard_set`).
        ResourceError: When the run would not fit in memory.
    """
    edits = plan(trace, steps, sentences, n_random, seed)
    check_standard_set(loaded, trace, len(edits), batch_size)
    start = time.perf_counter()
    values = score(loaded, [unedited(trace), *edits], batch_size, progress)
    return InterventionRecord(
        before=values[0], model=trace.model.name, seed=seed if sentences else None,
        seconds=time.perf_counter() - start,
        edits=[EditRecord(kind=e.kind, segments=list(e.segments), logprob=v) for e, v in zip(edits, values[1:])])


__all__ = ["Edited", "check_model", "chosen_segments", "pad_id", "edit_ids", "fitted_replacement", "unedited", "score", "step_edits", "sentence_edits", "plan",
           "estimate_seconds", "check_standard_set", "intervene", "with_interventions", "EDITABLE", "DEFAULT_RANDOM"]
