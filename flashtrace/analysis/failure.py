"""An honest failure, from the trace's own record: the model's answer against the task's right answer, the
reasoning step where they part, the prompt sentence that misled it and the edit that fixes it.

The record is what the gallery builder stores (``flashtrace gallery --spec``): ``extra["gallery"]`` holds the
task's ``right_answer``, whether the traced answer was ``correct``, the task ``spec`` (with its ``edit``: the
sentence removed, or replaced by ``replacement``) and ``edit_result`` (the edited trace's name, its answer,
whether that one is right, and the answer's log-probability before and after). A trace without that record,
or whose answer was right, has no failure.

*Where they part* is the first reasoning step that names the wrong answer, or a number that only the misleading
sentence holds (a whole-word match, case aside): the step where the wrong value, or the distractor that leads
to it, enters the chain. The misleading sentence's pull is measured twice, both as a share
of the prompt's attribution: on that step's own attribution (its step vector, when the trace has them) and on
the answer's after all hops.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .facts import OF_PROMPT, TraceFacts
from .schema import Trace
from .segments import steps_before_target
from .text import ordinal, pct, quote
from .views import span_text

if TYPE_CHECKING:
    from collections.abc import Sequence

RECORD = "gallery"


@dataclass(frozen=True)
class Share:
    """A prompt piece's share (of the prompt's attribution) in some attribution, and its rank there (1 = top)."""

    share: float
    rank: int
    of: int  # how many pieces were ranked


@dataclass(frozen=True)
class Failure:
    """What went wrong in one trace, and what fixed it (every number from the trace's own records)."""

    answer: str  # the traced answer's value
    right: str  # the task's right answer
    step: str | None = None  # the id of the first reasoning step naming the wrong answer or the distractor's number
    clue: str = ""  # what that step names: the wrong answer, or the distractor's number
    step_number: int | None = None  # its place among the reasoning steps (1-based)
    steps: int = 0  # how many reasoning steps the trace has
    step_text: str = ""
    misled: int | None = None  # index into `TraceFacts.pieces`: the sentence the edit removes or replaces
    replacement: str | None = None  # what the edit puts in its place (None: removed)
    in_step: Share | None = None  # the misleading sentence in the parting step's own attribution
    in_answer: Share | None = None  # ... and in the answer's, after all hops
    edited: str | None = None  # the edited trace's name
    answer_after: str | None = None
    fixed: bool | None = None  # the edited trace's answer is the right one
    logprob_before: float | None = None  # the answer's log-probability in the original ...
    logprob_after: float | None = None  # ... and in the edited prompt, before it was re-run
    edit_of: str | None = None  # this trace is itself the edited version of that trace ...
    edited_sentence: str = ""  # ... with this sentence removed or replaced


def _record(trace: Trace) -> dict[str, Any]:
    value = trace.extra.get(RECORD)
    return value if isinstance(value, dict) else {}


def _names(text: str, value: str) -> bool:
    value = value.strip().strip(".,;:!?").casefold()
    return bool(value) and re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text.casefold()) is not None


def _share(facts: TraceFacts, shares: np.ndarray, index: int) -> Share:
    """`index`'s share and its rank among the context pieces (the question sentences apart, as the evidence is
    ranked; all pieces when none is a question)."""
    ranked = [i for i, p in enumerate(facts.pieces) if not p.asked or i == index]
    order = sorted(ranked, key=lambda i: (-shares[i], i))
    return Share(float(shares[index]), order.index(index) + 1, len(ranked))


def piece_shares(facts: TraceFacts, vector: Sequence[float] | np.ndarray) -> np.ndarray:
    """Each prompt piece's share of `vector`'s attribution on the prompt pieces (zeros when none).

    Args:
        facts: The trace's facts (`analyse`), whose pieces are the prompt sentences or tokens.
        vector: An attribution vector over all positions (the answer's, or a reasoning step's own).

    Returns:
        One share per piece of `facts`, summing to 1 (zeros when the pieces hold none of `vector`'s attribution).
    """
    v = np.asarray(vector, dtype=np.float64)
    mass = np.array([v[p.start:p.end].sum() for p in facts.pieces])
    total = mass.sum()
    return mass / total if total > 0 else np.zeros(len(facts.pieces))


def _own_numbers(facts: TraceFacts, index: int) -> list[str]:
    """The numbers only piece `index` of the prompt holds (a distractor's quantity)."""
    numbers = lambda text: set(re.findall(r"\d+(?:\.\d+)?", text))  # noqa: E731
    others = set().union(*(numbers(p.text) for i, p in enumerate(facts.pieces) if i != index))
    return sorted(numbers(facts.pieces[index].text) - others)


def _misled(facts: TraceFacts, sentence: str) -> int | None:
    found = [i for i, p in enumerate(facts.pieces) if sentence.strip() and sentence.strip() in p.text]
    return found[0] if len(found) == 1 else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _typed(record: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    """`record[key]` when it is of `kind`, else None (a hand-edited file may hold anything)."""
    value = record.get(key)
    return value if isinstance(value, kind) and not (kind is not bool and isinstance(value, bool)) else None


def _parting(trace: Trace, facts: TraceFacts, answer: str, misled: int | None) -> dict[str, Any]:
    """Where the reasoning parts from the right one: the first step (before the answer) naming the wrong
    answer, or a number only the misleading sentence holds; with the sentence's share of that step's
    attribution."""
    steps = steps_before_target(trace)
    clues = [answer, *(_own_numbers(facts, misled) if misled is not None else [])]
    found = next(((n, s, c) for n, s in enumerate(steps, 1) for c in clues if _names(s.text, c)), None)
    if found is None:
        return {"steps": len(steps)}
    number, step, clue = found
    in_step = None
    if misled is not None and trace.steps is not None and step.id in trace.steps.vectors:
        in_step = _share(facts, piece_shares(facts, trace.steps.vectors[step.id]), misled)
    return {"steps": len(steps), "step": step.id, "step_number": number, "clue": clue, "step_text": step.text.strip(),
            "in_step": in_step}


def _result(record: dict[str, Any]) -> dict[str, Any]:
    """What the edit gave, as the record keeps it (`edit_result`)."""
    result = _dict(record.get("edit_result"))
    number = lambda key: float(result[key]) if _typed(result, key, (int, float)) is not None else None  # noqa: E731
    return {"edited": _typed(result, "name", str), "answer_after": _typed(result, "answer", str),
            "fixed": _typed(result, "correct", bool), "logprob_before": number("logprob_before"),
            "logprob_after": number("logprob_after")}


def failure_of(trace: Trace, facts: TraceFacts) -> Failure | None:
    """The trace's failure, or None: no task record, no right answer recorded, or the answer was right.

    Args:
        trace: The recording, with the gallery builder's record in ``extra["gallery"]``.
        facts: The trace's facts (`analyse(trace)`).

    Returns:
        The `Failure` (answers, parting step, misleading sentence and its shares, edit result), or None.
    """
    record = _record(trace)
    right = record.get("right_answer")
    if record.get("correct") is not False or not isinstance(right, str):
        return None
    answer = span_text(trace, trace.settings.target).strip()
    edit = _dict(_dict(record.get("spec")).get("edit"))
    misled = _misled(facts, str(edit.get("sentence", ""))) if edit else None
    in_answer = _share(facts, facts.final.shares, misled) if misled is not None else None
    return Failure(answer=answer, right=right, misled=misled, replacement=edit.get("replacement") if edit else None,
                   in_answer=in_answer, **_parting(trace, facts, answer, misled), **_result(record),
                   **_edit_of(trace))


def _edit_of(trace: Trace) -> dict[str, Any]:
    """For the edited version of another trace (``extra["edited_from"]``): that trace's name and the sentence
    the edit took out."""
    source = trace.extra.get("edited_from")
    if not isinstance(source, dict) or not isinstance(source.get("name"), str):
        return {}
    edit = source.get("edit") if isinstance(source.get("edit"), dict) else {}
    return {"edit_of": source["name"], "edited_sentence": str(edit.get("sentence", ""))}


def edit_result(original: Trace, edited: Trace, name: str) -> dict[str, Any]:
    """What the original's record keeps of its edited version `name` (read from the edited trace itself).

    Args:
        original: The original trace (not read: everything kept comes from `edited`).
        edited: The edited trace, with ``extra["edited_from"]`` holding the log-probabilities.
        name: The edited trace's name.

    Returns:
        The ``edit_result`` record: ``name``, ``answer``, ``correct``, ``logprob_before`` and ``logprob_after``.
    """
    source = edited.extra.get("edited_from") or {}
    return {"name": name, "answer": span_text(edited, edited.settings.target).strip(),
            "correct": _record(edited).get("correct"),
            "logprob_before": source.get("logprob_before"), "logprob_after": source.get("logprob_after")}




def _share_words(facts: TraceFacts, s: Share, whose: str) -> str:
    among = "context sentences, the question apart" if any(p.asked for p in facts.pieces) else "prompt sentences"
    return f"{pct(s.share)} of {whose} prompt attribution ({ordinal(s.rank)} of {s.of} {among})"


def _logprob(value: float) -> str:
    return f"{value:.2f}" if abs(value) >= 0.01 else f"{value:.1e}"


def failure_note(facts: TraceFacts, f: Failure) -> str:
    """One sentence for a gallery card: the wrong answer, the right one, and what the edit gave.

    Args:
        facts: The trace's facts (`analyse`), to quote the misleading sentence from.
        f: The trace's failure (`failure_of`).

    Returns:
        The sentence (without the edit's outcome when no misleading sentence or edited answer is recorded).
    """
    text = f"Answered {quote(f.answer, 40)}; the right answer is {quote(f.right, 40)}."
    if f.misled is None or f.answer_after is None:
        return text
    action = "Replacing" if f.replacement else "Removing"
    return text + (f" {action} {quote(facts.pieces[f.misled].text, 50)} makes it answer {quote(f.answer_after, 40)}"
                   + (", the right answer." if f.fixed else ", still wrong."))


def _edit_words(f: Failure) -> str:
    """What the edit did, said as a fix or not, and what it did to the old answer's log-probability."""
    action = (f"replace it by {quote(f.replacement, 60)}" if f.replacement else "remove it")
    if f.answer_after is None:
        return f" The edit to test it ({action} and let the model answer again) has not been run."
    if f.fixed:
        text = (f" The edit that fixes it: {action} and let the model answer again; it now answers "
                f"{quote(f.answer_after, 60)}, the right answer")
    else:
        text = (f" The edit to test it ({action} and let the model answer again) does not fix it: the model then "
                f"answers {quote(f.answer_after, 60)}, still not {quote(f.right, 60)}")
    text += f" (the edited trace, {quote(f.edited, 60)})." if f.edited else "."
    if f.logprob_before is None or f.logprob_after is None:
        return text
    moved = f"goes from {_logprob(f.logprob_before)} to {_logprob(f.logprob_after)}"
    if f.logprob_after - f.logprob_before > -1.0:
        return text + (f" Kept with its first reasoning and only the sentence edited, the old answer's log-probability "
                       f"{moved}: the reasoning already written carries it"
                       + (", so the fix needs the model to reason again." if f.fixed else "."))
    return text + f" Even with its first reasoning kept, the edit drops the old answer's log-probability: it {moved}."


def failure_words(facts: TraceFacts, f: Failure) -> str:
    """The failure in plain sentences: answer against right answer, where they part, the misleading
    sentence's pull and what the edit did (a fix, or not, said either way).

    Args:
        facts: The trace's facts (`analyse`), to quote and rank the misleading sentence with.
        f: The trace's failure (`failure_of`).

    Returns:
        The paragraph, in plain text.
    """
    text = f"The model answered {quote(f.answer, 60)}; the right answer is {quote(f.right, 60)}."
    if f.step is not None:
        what = (f"the wrong answer {quote(f.answer, 40)}" if f.clue == f.answer else
                f"{quote(f.clue, 20)}, a number only the suspected sentence holds")
        text += (f" Its reasoning parts from the right one at step {f.step_number} of {f.steps}, the first step that "
                 f"names {what}: {quote(f.step_text, 120)}.")
    else:
        text += f" No reasoning step names {quote(f.answer, 40)}: the wrong value first appears in the answer."
    if f.misled is None and f.edit_of is not None:
        return text + (f" This is the edited version of {quote(f.edit_of, 60)}: the sentence suspected of misleading "
                       f"it, {quote(f.edited_sentence, 80)}, is gone, and the model is still wrong: removing it did not "
                       "fix the answer.")
    if f.misled is None:
        return text + " The task records no sentence that misled it."
    pulls = []
    if f.in_step is not None:
        pulls.append(_share_words(facts, f.in_step, "that step's"))
    if f.in_answer is not None:
        pulls.append(_share_words(facts, f.in_answer, "the answer's") + " after all hops")
    suspected = "that misled it" if f.fixed else "suspected of misleading it"
    text += (f" The sentence {suspected} is {quote(facts.pieces[f.misled].text, 80)}"
             + (f": it holds {', and '.join(pulls)}." if pulls else "."))
    return text + _edit_words(f)


__all__ = ["Failure", "Share", "failure_of", "failure_words", "failure_note", "piece_shares", "edit_result", "RECORD"]
