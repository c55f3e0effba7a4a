"""A gallery the model writes itself (``flashtrace gallery --spec FILE``): one JSON spec file lists the tasks (a
natural-language prompt, the facts its answer needs marked as gold, the right answer); a built-in model
generates its own reasoning and answer for each (greedy, settings recorded), the answer's value is traced with
`HOPS` hops and step vectors, and each trace stores whether the model was right, the Story's faithfulness check
and the interventions. An entry with an ``edit`` is an honest failure: the named prompt sentence is removed (or
replaced), the model answers again, and the edited trace is written beside the original, linked both ways
(``extra["edited_from"]`` / ``extra["edited_versions"]``, as the library's pairs), with the answer's
log-probability before and after and the new answer.

The spec is data: it is parsed and validated (`GallerySpecFile`), never executed.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..analysis.limits import GALLERY_HOP0, GALLERY_STOP_TOKENS, HOP0_SPANS, MAX_HOPS
from ..analysis.diff import answer_text
from ..analysis.schema import Trace
from ..analysis.failure import edit_result
from ..store.gallery import write_index
from ..store.pairs import EDITED_FROM, EDITED_VERSIONS
from ..base.errors import InputError
from .protocols import normal_answer

if TYPE_CHECKING:
    from ..engine.models import LoadedModel

HOPS = 3
NAME = r"^[a-z0-9][a-z0-9-]{0,60}$"


class Edit(BaseModel):
    """The edit that proves a failure: remove the prompt sentence holding `sentence`, or put `replacement` in its
    place."""

    model_config = ConfigDict(extra="forbid")
    sentence: str = Field(min_length=1, max_length=2000)
    replacement: str | None = Field(default=None, max_length=2000)


class Task(BaseModel):
    """One gallery task: what the model is asked, the facts its answer needs (each a piece of the prompt's text),
    the right answer (the answer's value must equal it, case and edge punctuation aside) and how to generate."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=NAME)
    title: str = Field(min_length=1, max_length=120)
    description: str = Field(min_length=1, max_length=600)
    kind: str = Field(min_length=1, max_length=40)  # word problem, multi-hop, schedule, logic, long document, ...
    model: str = "qwen2.5-coder-1.5b"
    prompt: str = Field(min_length=1, max_length=20_000)
    gold: list[str] = Field(min_length=1)
    answer: str = Field(min_length=1, max_length=200)
    max_new_tokens: int = Field(default=384, ge=16, le=2048)
    reasoning_instruction: bool = True
    hops: int = Field(default=HOPS, ge=0, le=MAX_HOPS)
    hop0: str = GALLERY_HOP0
    edit: Edit | None = None

    @field_validator("hop0")
    @classmethod
    def _known_hop0(cls, value: str) -> str:
        if value not in HOP0_SPANS:
            raise InputError(f"hop0 must be one of {', '.join(HOP0_SPANS)}")
        return value

    @model_validator(mode="after")
    def _pieces_are_in_the_prompt(self) -> "Task":
        for piece in [*self.gold, *([self.edit.sentence] if self.edit else [])]:
            if self.prompt.count(piece) != 1:
                raise InputError(f"{self.name}: {piece[:60]!r} must occur exactly once in the prompt")
        return self

    def gold_ranges(self) -> list[list[int]]:
        """The gold facts as ``[start, end]`` character ranges of the prompt.

        Returns:
            One ``[start, end]`` character range of the prompt per gold fact, in the order of ``gold``.
        """
        return [[self.prompt.index(g), self.prompt.index(g) + len(g)] for g in self.gold]


class GallerySpecFile(BaseModel):
    """The whole spec: tasks with distinct names."""

    model_config = ConfigDict(extra="forbid")
    tasks: list[Task] = Field(min_length=1)

    @model_validator(mode="after")
    def _distinct(self) -> "GallerySpecFile":
        names = [t.name for t in self.tasks]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise InputError(f"task names used twice: {', '.join(twice)}")
        return self


def load_spec(path: Path) -> GallerySpecFile:
    """Read and check a spec file (ValueError naming the file and the problem).

    Args:
        path: The JSON spec file.

    Returns:
        The validated spec.

    Raises:
        InputError: When the file cannot be read, is not JSON, or does not validate as a `GallerySpecFile`
            (an `InputError` is a ValueError); the message names the file and the problem.
    """
    try:
        return GallerySpecFile.model_validate(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read the gallery spec {path}: {exc}") from None
    except ValueError as exc:
        raise InputError(f"the gallery spec {path} is not valid: {exc}") from None


value_text = answer_text  # the text of the trace's target: here the answer's value


def is_right(trace: Trace, answer: str) -> bool:
    """Whether the traced answer's value is `answer` (case, spaces, thousands commas and edge punctuation aside).

    Args:
        trace: The trace whose target (the answer's value) is compared.
        answer: The right answer.

    Returns:
        True when the two agree once normalised (`protocols.normal_answer`).
    """
    return normal_answer(value_text(trace)) == normal_answer(answer)


def _segment_of(trace: Trace, sentence: str) -> str:
    found = [s.id for s in trace.segments or [] if s.role == "prompt" and sentence.strip() in s.text]
    if len(found) != 1:
        raise InputError(f"the edit's sentence {sentence[:60]!r} is in {len(found)} prompt sentences of the trace")
    return found[0]


def _finish(loaded, trace: Trace, task: Task, right: bool, extra: dict) -> Trace:
    """The trace as the gallery ships it: rounded, with its task record, faithfulness check and interventions."""
    from ..run.interventions import intervene
    from .faithfulness import FAITHFULNESS_KEY, faithfulness_check
    from .gallery import round_floats

    data = round_floats(json.loads(trace.to_json()))
    data["extra"] = {**data["extra"], **extra,
                     "gallery": {"task": task.kind, "description": task.description, "gold": task.gold_ranges(),
                                 "spec": task.model_dump(exclude_none=True), "right_answer": task.answer,
                                 "correct": right}}
    rounded = Trace.from_dict(data)
    data["extra"][FAITHFULNESS_KEY] = round_floats(faithfulness_check(loaded, rounded))
    data["interventions"] = round_floats(intervene(loaded, rounded).model_dump())
    return Trace.from_dict(data)


def build_task(task: Task, loaded: LoadedModel, progress: Callable[[int, int], None] | None = None) -> list[Trace]:
    """The task's trace (the model's own response, generated greedily), and for an entry with an edit the
    edited trace after it, linked both ways.

    Args:
        task: The gallery task.
        loaded: The `LoadedModel` that writes the response and is traced (the task's `model`).
        progress: Hears of the original trace's attribution progress as (units done, units in all).

    Returns:
        ``[original]``, or ``[original, edited]`` for a task with an edit, each as the gallery ships it (rounded,
        with its task record, faithfulness check and interventions).

    Raises:
        InputError: When the model writes nothing after the edit, or the edit's sentence is not in exactly one
            prompt sentence of the trace.
    """
    from ..run.rerun import edit
    from ..run.tracing import attribute, prepare

    prepared = prepare(loaded, task.prompt, generate=True, max_new_tokens=task.max_new_tokens,
                       reasoning_instruction=task.reasoning_instruction, hops=task.hops)
    trace = attribute(prepared, target="value", hops=task.hops, hop0=task.hop0, stop_tokens=GALLERY_STOP_TOKENS,
                      steps=True, title=task.title, progress=progress)
    original = _finish(loaded, trace, task, is_right(trace, task.answer), {})
    if task.edit is None:
        return [original]
    result = edit(loaded, original, [_segment_of(original, task.edit.sentence)], task.edit.replacement,
                  retrace=True, max_new_tokens=task.max_new_tokens)
    if result.trace is None:
        raise InputError(f"{task.name}: after the edit the model wrote nothing")
    link = {EDITED_FROM: {"name": task.name, "edit": task.edit.model_dump(exclude_none=True),
                          "logprob_before": result.before, "logprob_after": result.after,
                          "answer_before": value_text(original), "answer_after": value_text(result.trace)}}
    regenerated = {"generation": {"max_new_tokens": task.max_new_tokens, "do_sample": False,
                                  "after": "the edit (run.rerun.edit: greedy, from the edited prompt)"}}
    edited = _finish(loaded, result.trace, task, is_right(result.trace, task.answer), {**link, **regenerated})
    return [link_edited(original, edited, f"{task.name}-edited"), edited]


def link_edited(original: Trace, edited: Trace, name: str) -> Trace:
    """`original` naming its edited version `name` (``extra["edited_versions"]``) and keeping, in its task
    record, what the edit gave (`analysis.failure.edit_result`: the new answer, whether it is right, the
    log-probabilities), read from `edited` itself.

    Args:
        original: The task's original trace.
        edited: Its edited version.
        name: The edited version's gallery name.

    Returns:
        A copy of `original` with the link and the edit's result in its ``extra``.
    """
    record = {**original.extra.get("gallery", {}), "edit_result": edit_result(original, edited, name)}
    return original.model_copy(update={"extra": {**original.extra, EDITED_VERSIONS: [name], "gallery": record}})


TOKENS_PER_STEP = 25  # a reasoning step's tokens, about (the built-in models' numbered steps): the step count
SCORED_CHECK = 7  # sequences the faithfulness check scores: before, the top deletion, 5 random ones
SCORED_SENTENCES = 8  # ... the sentence interventions: before, the top sentence, 5 random, the gold together


def estimate_seconds(task: Task, loaded: LoadedModel) -> float:
    """A task's predicted time, at most (the whole `max_new_tokens` written): the generation, the trace (hops
    and step vectors, `engine.estimate`), the faithfulness check and the interventions (each step removed and
    the sentence removals, scored over the whole sequence), and as much again for an edit's re-run.

    Args:
        task: The gallery task.
        loaded: The `LoadedModel` that will build it (its tokenizer counts the prompt, its shape the cost).

    Returns:
        The predicted seconds, at most.
    """
    from ..engine.estimate import estimate, generation_seconds, scoring_seconds
    from ..engine.models.generation import generation_ids

    _, ids = generation_ids(loaded, task.prompt, task.max_new_tokens, True, task.reasoning_instruction)
    n_prompt, n_new = len(ids), task.max_new_tokens
    n = n_prompt + n_new
    traced = estimate(loaded, n, hops=task.hops, n_target=8, n_recursive=n_new, steps=True).seconds
    scored = scoring_seconds(loaded, n, SCORED_CHECK + SCORED_SENTENCES + n_new / TOKENS_PER_STEP)
    once = generation_seconds(loaded, n_prompt, n_new) + traced + scored
    return once * (2 if task.edit else 1)


def _build_one(task: Task, loaded, out: Path, log: Callable[[str], None]) -> list[Path]:
    """Build one task into `out` (the edited trace saved first: an original on disk means the task is whole) and
    log whether the model answered right; returns the files written."""
    start = time.perf_counter()
    traces = build_task(task, loaded)
    written = []
    for trace in reversed(traces):
        name = task.name if EDITED_FROM not in trace.extra else f"{task.name}-edited"
        written.append(trace.save(out / f"{name}.json"))
    right = traces[0].extra["gallery"]["correct"]
    after = f"; after the edit {value_text(traces[1])!r}" if len(traces) > 1 else ""
    log(f"{task.name}: {'right' if right else 'wrong'} ({value_text(traces[0])!r}; right: {task.answer!r}), "
        f"{traces[0].n_tokens} tokens, {time.perf_counter() - start:.0f} s{after}")
    return written[::-1]


def build_from_spec(spec: GallerySpecFile, out: Path, only: list[str] | None = None, *,
                    load: Callable[[str], object] | None = None, log: Callable[[str], None] = print,
                    bar: Callable[..., object] | None = None) -> list[Path]:
    """Build every task of `spec` (or those named in `only`) into `out`, one model at a time; a task whose files
    are already there is kept (delete them to rebuild). Then `out`'s gallery index is written (every trace in it,
    the spec's in its order).

    Args:
        spec: The validated spec (`load_spec`).
        out: The gallery folder written into (created when missing).
        only: The names of the tasks to build (None or empty: all).
        load: Loads a model by name (None: `engine.models.load_model`); each model is loaded once.
        log: Hears the plan (tasks, predicted time) and one line per task built.
        bar: Makes a tqdm-like progress bar, ``bar(total=...)``, over the predicted seconds (None: no bar).

    Returns:
        The files written.

    Raises:
        InputError: When `only` names a task the spec does not have; `build_task`'s errors pass through.
    """
    from ..engine.models import load_model

    unknown = set(only or ()) - {t.name for t in spec.tasks}
    if unknown:
        raise InputError(f"unknown tasks {sorted(unknown)}; the spec has: {', '.join(t.name for t in spec.tasks)}")
    asked = [t for t in spec.tasks if not only or t.name in only]
    tasks = [t for t in asked if not (out / f"{t.name}.json").exists()]
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    loaded_models: dict[str, object] = {}
    for model in dict.fromkeys(t.model for t in tasks):
        loaded_models[model] = (load or load_model)(model)
    planned = {t.name: estimate_seconds(t, loaded_models[t.model]) for t in tasks}
    log(f"{len(tasks)} tasks to build ({len(asked) - len(tasks)} already built, kept): at most about "
        f"{sum(planned.values()) / 60:.0f} min predicted (if every task writes its max_new_tokens)")
    progress = bar(total=round(sum(planned.values()))) if bar else None
    for task in tasks:
        written += _build_one(task, loaded_models[task.model], out, log)
        if progress is not None:
            progress.update(round(planned[task.name]))
    if progress is not None:
        progress.close()
    write_index(out, [n for t in spec.tasks for n in (t.name, f"{t.name}-edited")])
    return written


__all__ = ["Task", "Edit", "GallerySpecFile", "load_spec", "build_task", "build_from_spec", "is_right",
           "value_text", "estimate_seconds", "link_edited", "HOPS"]
