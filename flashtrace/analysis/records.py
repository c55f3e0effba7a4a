"""The records of interventions a `Trace` may carry (`flashtrace.run.interventions`, `flashtrace.run.resample`):
each edit's segments and the target's log-probability after it, and resampled continuations per reasoning step.
Validated as strictly as the rest of the trace (`flashtrace.analysis.schema` re-exports them)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from .limits import MAX_TEXT, MAX_TOKENS

MAX_EDITS = 1_000  # interventions stored in one trace


class StrictModel(BaseModel):
    """A trace record: unknown fields, NaN and infinities are refused; immutable once made (a changed record is a
    copy: ``record.model_copy(update={...})``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True, strict=True)


EditKind = Literal["step", "top", "random", "gold", "edit"]


class EditRecord(StrictModel):
    """One intervention: the segments removed (or, with `replacement`, the first replaced by that text and the
    others removed) and the target's teacher-forced log-probability afterwards (summed over its tokens).
    `kind`: ``step`` (one reasoning step removed), ``top`` (the top evidence sentence), ``random`` (a random
    prompt sentence), ``gold`` (the gold sentences), ``edit`` (the user's choice). `answer`: the answer the
    model generated greedily after the edit, when asked for."""

    kind: EditKind
    segments: list[Annotated[str, Field(min_length=1, max_length=20)]] = Field(min_length=1, max_length=MAX_TOKENS,
                                                                               fail_fast=True)
    replacement: str | None = Field(default=None, max_length=MAX_TEXT)
    logprob: float
    answer: str | None = Field(default=None, max_length=MAX_TEXT)


class ResampledStep(StrictModel):
    """One reasoning step resampled (`flashtrace.run.resample`): per continuation sampled after the step
    (`kept`) or in its place (`removed`), the original target's teacher-forced log-probability after it, and
    whether the continuation's own answer matched the original one."""

    step: str = Field(min_length=1, max_length=20)
    kept: list[float] = Field(max_length=MAX_EDITS, fail_fast=True)
    removed: list[float] = Field(max_length=MAX_EDITS, fail_fast=True)
    kept_match: list[bool] = Field(max_length=MAX_EDITS, fail_fast=True)
    removed_match: list[bool] = Field(max_length=MAX_EDITS, fail_fast=True)


class ResampleRecord(StrictModel):
    """`n` resampled continuations per reasoning step: how they were drawn (seed, temperature, top-p, at most
    `max_new_tokens` each), the seconds they took, and the results per step."""

    n: int = Field(ge=1, le=MAX_EDITS)
    seed: int
    max_new_tokens: int = Field(ge=1)
    temperature: float | None = Field(default=None, gt=0)
    top_p: float | None = Field(default=None, gt=0, le=1)
    seconds: float = Field(ge=0)
    steps: list[ResampledStep] = Field(max_length=MAX_EDITS, fail_fast=True)


class InterventionRecord(StrictModel):
    """Interventions on a trace (`flashtrace.run.interventions`): the target's log-probability unedited
    (`before`) and after each edit, with the model, the random seed and the seconds they took; `resampled`
    (optional, absent in older files): the steps' resampled continuations."""

    before: float
    edits: list[EditRecord] = Field(max_length=MAX_EDITS, fail_fast=True)
    model: str = Field(max_length=500)
    seed: int | None = None
    seconds: float = Field(ge=0)
    resampled: ResampleRecord | None = None


__all__ = ["MAX_EDITS", "StrictModel", "EditKind", "EditRecord", "ResampledStep", "ResampleRecord",
           "InterventionRecord"]
