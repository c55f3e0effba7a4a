"""Where an evaluation example's reasoning comes from (issue 46): the protocol.

- ``templated``: the task's own templated reasoning chain, teacher-forced (this project's first runs).
- ``paper``: a writer model (the built-in 1.5B by default) answers each prompt greedily, thinking step by
  step first; only the examples it answers right are kept (the dropped ones are counted), and the model under
  test is teacher-forced on that reasoning, as the paper's code does with a stronger model.
- ``own``: the model under test writes its own reasoning; right and wrong answers are both kept, each
  example records which it is, and the summary reports every metric split by it.

A written response is free text: its answer is found as a trace finds it (`inputs.detect_spans`), its value
(`inputs.answer_value`) is the evaluation's target, and `answer_is_right` checks it against the task's answer
without looking at any attribution. Responses are generated once per example and kept under
``OUT/responses/`` (a rerun with the same prompt, writer and token limit reads them back).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from ..base.fileio import atomic_write_text, read_regular_file
from ..engine.inputs.spans import answer_value, detect_spans
from .textgen import Example
from ..base.errors import InputError

if TYPE_CHECKING:
    from ..engine.models import LoadedModel

PROTOCOLS = ("templated", "paper", "own")
PAPER_WRITER = "qwen2.5-coder-1.5b"  # the stronger built-in model, as the paper uses a stronger writer
WRITE_TOKENS = 384  # new tokens a writer may use: "think briefly, then the answer" (the gallery's tasks need <= 250)
RESPONSES = "responses"
MAX_RESPONSE_BYTES = 4 << 20  # a kept response file is read only as a bounded regular file

_EDGE = ".,;:!?\"'()[]{}*$"


def normal_answer(text: str) -> str:
    """An answer as compared with the right one: lower case, single spaces, no thousands commas or edge punctuation
    ("1,008." is "1008"); the one rule of the evaluation's checker and the gallery's.

    Args:
        text: An answer's text.

    Returns:
        The normalised answer.
    """
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    return re.sub(r"\s+", " ", text.strip().strip(_EDGE).casefold())


def answer_text(response: str, prompt: str) -> str:
    """The value a free-text response answers with: the answer's value when the answer line restates the
    question ("Tom has 15 marbles now." gives "15"), else the whole answer ("" when there is none).

    Args:
        response: The free-text response.
        prompt: The prompt it answers (the question a restating answer line is compared with).

    Returns:
        The answer's value, the whole answer, or "" when the response has no answer.
    """
    spans = detect_spans(response)
    if spans.answer is None:
        return ""
    lo, hi = answer_value(response, spans.answer, prompt) or spans.answer
    return response[lo:hi]


def answer_is_right(response: str, prompt: str, answer: str) -> bool:
    """Whether `response` answers `answer`: its value equals it (case, spaces, thousands commas and edge
    punctuation aside), or, for an answer of several parts ("7590156, 3148322"), the answer line holds every
    part as a whole word. Reads only the text: never an attribution.

    Args:
        response: The free-text response.
        prompt: The prompt it answers.
        answer: The right answer.

    Returns:
        True when the response answers right (False when it has no answer).
    """
    spans = detect_spans(response)
    if spans.answer is None:
        return False
    pieces = answer.split(",") if re.search(r",\s", answer) else [answer]  # "7590156, 3148322": two parts
    parts = [normal_answer(p) for p in pieces if normal_answer(p)] if len(pieces) > 1 else [normal_answer(answer)]
    line = normal_answer(response[spans.answer[0]:spans.answer[1]])
    if len(parts) == 1:
        return normal_answer(answer_text(response, prompt)) == parts[0] or line == parts[0]
    return all(re.search(rf"(?<!\w){re.escape(p)}(?!\w)", line) for p in parts)


@dataclass(frozen=True)
class Written:
    """A response a writer model generated for one example, and what it answered."""

    prompt: str  # the prompt as the writer saw it (with the reasoning instruction when one was added)
    response: str
    writer: str
    max_new_tokens: int
    new_tokens: int
    stopped: str  # "end of text" or "max_new_tokens"
    seconds: float
    answer: str  # the value it answered with ("" when no answer was found)
    correct: bool


def _cached(path: Path, prompt: str, writer: str, max_new_tokens: int) -> Written | None:
    """The response kept at `path` when it was written for this prompt, writer and token limit."""
    if not path.exists():
        return None
    try:
        data = json.loads(read_regular_file(path, MAX_RESPONSE_BYTES, "written response"))
        written = Written(**data["written"])
    except (OSError, ValueError, TypeError, KeyError):
        return None
    same = data.get("source_prompt") == prompt and written.writer == writer and written.max_new_tokens == max_new_tokens
    return written if same else None


def write_response(loaded: LoadedModel, example: Example, writer: str, max_new_tokens: int = WRITE_TOKENS) -> Written:
    """`loaded` (named `writer`) answers the example's prompt greedily with its chat template, asked to think
    step by step and end with an "Answer:" line; the answer is checked against the example's.

    Args:
        loaded: The writer model.
        example: The example whose prompt is answered.
        writer: The writer model's name, as recorded.
        max_new_tokens: The most new tokens the writer may generate.

    Returns:
        The written response, its answer and whether it is right.

    Raises:
        InputError: When the writer's prompt is not the example's text with the instruction after it.
    """
    from ..engine.models.generation import generate

    generated = generate(loaded, example.prompt, max_new_tokens=max_new_tokens, chat_template=True,
                         reasoning_instruction=True)
    if not isinstance(generated.prompt, str) or not generated.prompt.startswith(example.prompt.rstrip()):
        raise InputError("the writer's prompt must be the example's text with the instruction after it")
    response = generated.response.strip()
    return Written(generated.prompt, response, writer, max_new_tokens, generated.new_tokens,
                   "max_new_tokens" if generated.reached_limit else "end of text", round(generated.seconds, 3),
                   answer_text(response, example.prompt), answer_is_right(response, example.prompt, example.answer))


def write_responses(loaded: LoadedModel, examples: Iterable[tuple[str, Example]], out: Path, writer: str,
                    max_new_tokens: int = WRITE_TOKENS,
                    progress: Callable[[str, int, int], None] | None = None) -> dict[str, Written]:
    """A `Written` response per example id, generated by `loaded` or read back from ``out/responses/<id>.json``
    when kept there for the same prompt, writer and token limit.

    Args:
        loaded: The writer model.
        examples: ``(id, example)`` pairs.
        out: The evaluation folder; responses are kept under ``out/responses/`` (created when missing).
        writer: The writer model's name, as recorded.
        max_new_tokens: The most new tokens the writer may generate.
        progress: Called as ``progress(id, done, total)`` after each example.

    Returns:
        ``{id: Written}``, in the examples' order.
    """
    folder = Path(out) / RESPONSES
    folder.mkdir(parents=True, exist_ok=True)
    items, found = list(examples), {}
    for done, (ex_id, example) in enumerate(items, 1):
        path = folder / f"{ex_id}.json"
        written = _cached(path, example.prompt, writer, max_new_tokens)
        if written is None:
            written = write_response(loaded, example, writer, max_new_tokens)
            atomic_write_text(path, json.dumps({"source_prompt": example.prompt, "written": asdict(written)}))
        found[ex_id] = written
        if progress:
            progress(ex_id, done, len(items))
    return found


def cached_responses(examples: Iterable[tuple[str, Example]], out: Path, writer: str,
                     max_new_tokens: int = WRITE_TOKENS) -> set[str]:
    """The ids whose response is already kept under `out` (what `write_responses` will not generate).

    Args:
        examples: ``(id, example)`` pairs.
        out: The evaluation folder.
        writer: The writer model's name.
        max_new_tokens: The writer's token limit.

    Returns:
        The ids whose kept response was written for the same prompt, writer and token limit.
    """
    folder = Path(out) / RESPONSES
    return {ex_id for ex_id, ex in examples
            if _cached(folder / f"{ex_id}.json", ex.prompt, writer, max_new_tokens) is not None}


@dataclass(frozen=True)
class Applied:
    """The examples a protocol evaluates, and what it records about them."""

    examples: list[tuple[str, Example]]
    record: dict  # the protocol's settings entry: name, writer, token limit, counts, dropped ids


def apply_protocol(protocol: str, examples: list[tuple[str, Example]], written: dict[str, Written] | None = None
                   ) -> Applied:
    """The examples to evaluate under `protocol`: the templated ones as they are, or each with its written
    response as the teacher-forced response (``meta["protocol"]`` records the writer, its answer and whether it
    is right; ``paper`` keeps only the right ones).

    Args:
        protocol: One of `PROTOCOLS`.
        examples: ``(id, example)`` pairs.
        written: ``{id: Written}`` (`write_responses`), needed for every example unless the protocol is
            ``templated``.

    Returns:
        The examples to evaluate and the protocol's settings entry (name, writer, token limit, counts, dropped
        ids).

    Raises:
        InputError: When `protocol` is unknown, or an example has no written response.
    """
    if protocol not in PROTOCOLS:
        raise InputError(f"protocol must be one of {', '.join(PROTOCOLS)}, got {protocol!r}")
    if protocol == "templated":
        return Applied(list(examples), {"name": "templated", "n": len(examples)})
    written = written or {}
    missing = [ex_id for ex_id, _ in examples if ex_id not in written]
    if missing:
        raise InputError(f"no written response for {', '.join(missing[:5])}")
    kept, dropped = [], []
    for ex_id, ex in examples:
        w = written[ex_id]
        if protocol == "paper" and not w.correct:
            dropped.append(ex_id)
            continue
        note = {"name": protocol, "writer": w.writer, "answer": w.answer, "correct": w.correct,
                "new_tokens": w.new_tokens, "stopped": w.stopped, "seconds": w.seconds}
        kept.append((ex_id, replace(ex, prompt=w.prompt, response=w.response, meta={**ex.meta, "protocol": note})))
    first = next(iter(written.values()), None)
    record = {"name": protocol, "writer": first.writer if first else None,
              "max_new_tokens": first.max_new_tokens if first else None, "written": len(examples),
              "kept": len(kept), "right": sum(written[i].correct for i, _ in examples), "dropped": dropped}
    return Applied(kept, record)


def correctness(record: dict) -> str | None:
    """``"right"`` or ``"wrong"`` for an example whose reasoning a model wrote itself (the ``own`` protocol),
    else None: the summary's split.

    Args:
        record: An example's evaluation record (its ``meta["protocol"]`` says who wrote the reasoning).

    Returns:
        ``"right"``, ``"wrong"`` or None.
    """
    note = (record.get("meta") or {}).get("protocol") or {}
    if note.get("name") != "own":
        return None
    return "right" if note.get("correct") else "wrong"


__all__ = ["PROTOCOLS", "PAPER_WRITER", "WRITE_TOKENS", "Written", "Applied", "answer_text", "answer_is_right", "normal_answer",
           "write_response", "write_responses", "cached_responses", "apply_protocol", "correctness"]
