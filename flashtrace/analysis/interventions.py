"""What a trace's stored interventions say (torch-free): step influence by intervention next to the hop
graph's, and the prompt-sentence removals side by side.

A *drop* is ``before - after``: how much the target's log-probability (summed over its tokens, in nats)
fell when a segment was removed; positive when removing it made the original answer less likely.

Step influence: each reasoning step's drop, against its influence in the hop graph (`GraphFacts.influence`,
of the answer's attribution). The two agree when their Spearman rank correlation is at least `AGREE`, are
opposed at ``-AGREE`` or below, and are unrelated in between; with fewer than `MIN_STEPS` steps no
correlation is claimed. Their top steps differ only beyond a margin: the intervention's top step must cost
more than `LOGPROB_MARGIN` nats more than the graph's top step does, and the graph's top step must lead the
intervention's by more than `MARGIN` of the answer's attribution; otherwise the two are tied.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .check import Check, summarise_check
from .compare import spearman
from .facts import LABEL_CHARS, MARGIN, OF_ANSWER, analyse
from .invariants import check_interventions
from .schema import SCHEMA_VERSION, InterventionRecord, Trace
from .segments import is_step
from .text import distinct_labels

DEFAULT_RANDOM = 5  # random prompt sentences removed, one at a time
DEFAULT_NEW_TOKENS = 128  # tokens the model may write after an edit
DEFAULT_TEMPERATURE = 0.7  # resampled continuations (`flashtrace.run.resample`)
DEFAULT_TOP_P = 0.95
AGREE = 0.5  # |Spearman| at which step influence by intervention and by the hop graph agree (or are opposed)
MIN_STEPS = 3  # fewer steps: no rank correlation is claimed
LOGPROB_MARGIN = 0.1  # nats: a removal's drop leads another's only by more than this
DROP = "fall of the answer's log-probability (nats) when removed"


@dataclass(frozen=True)
class StepInfluence:
    """Per reasoning step (text order): the drop when it is removed and its hop-graph influence."""

    ids: tuple[str, ...]
    labels: tuple[str, ...]
    drops: tuple[float, ...]  # nats (DROP)
    graph: tuple[float, ...]  # OF_ANSWER through the hop graph (0 when the trace has no step graph)
    spearman: float | None
    verdict: str  # agree | opposed | unrelated | too-few | no-graph
    top: str  # same | tie | differ | none
    top_drop: str | None  # id of the step whose removal costs most
    top_graph: str | None  # id of the step with the most hop-graph influence
    sentence: str


@dataclass(frozen=True)
class SentenceRemoval:
    """The prompt-evidence removals: top sentence, random sentences, gold sentences (drops in nats)."""

    before: float
    top: tuple[str, float] | None  # (sentence id, drop)
    randoms: tuple[tuple[str, float], ...]
    gold: tuple[tuple[str, ...], float] | None  # (sentence ids, drop)
    check: Check | None  # the top sentence's drop against the random draws (verdict as the deletion check's)
    sentence: str

    @property
    def random_drops(self) -> tuple[float, ...]:
        """The drops of the random sentence removals, without their sentence ids."""
        return tuple(d for _, d in self.randoms)


@dataclass(frozen=True)
class ResampledInfluence:
    """Per resampled reasoning step (text order): the mean log-probability of the original answer after the
    continuations sampled with the step kept and removed, their difference (the drop), the teacher-forced drop
    for comparison, and how often the continuation's own answer matched the original one (rates 0..1)."""

    n: int
    ids: tuple[str, ...]
    labels: tuple[str, ...]
    kept: tuple[float, ...]
    removed: tuple[float, ...]
    drops: tuple[float, ...]  # kept - removed, nats
    teacher_forced: tuple[float | None, ...]  # the step's teacher-forced drop (None when not stored)
    kept_match: tuple[float, ...]
    removed_match: tuple[float, ...]
    sentence: str


@dataclass(frozen=True)
class InterventionFacts:
    """What the stored interventions of a trace say: the unedited log-probability, the model they ran on,
    the step influence and the sentence removals (either may be missing)."""
    before: float
    model: str
    steps: StepInfluence | None
    removal: SentenceRemoval | None
    resampled: ResampledInfluence | None = None


def _labels(trace: Trace, ids: tuple[str, ...]) -> tuple[str, ...]:
    """Short labels of the segments `ids`, no two alike (`distinct_labels`)."""
    text = {s.id: s.text for s in trace.segments or []}
    return tuple(distinct_labels([text.get(i, i) for i in ids], LABEL_CHARS))


def _top_clause(ids, drops, graph, labels) -> tuple[str, str | None, str | None, str]:
    a, b = int(np.argmax(drops)), int(np.argmax(graph))
    if a == b:
        return "same", ids[a], ids[b], f"both put \u201c{labels[a]}\u201d first"
    lead_drop, lead_graph = drops[a] - drops[b], graph[b] - graph[a]
    if lead_drop > LOGPROB_MARGIN and lead_graph > MARGIN:
        return "differ", ids[a], ids[b], (f"removal puts \u201c{labels[a]}\u201d first, the hop graph "
                                          f"\u201c{labels[b]}\u201d")
    return "tie", ids[a], ids[b], (f"their top steps (\u201c{labels[a]}\u201d and \u201c{labels[b]}\u201d) are "
                                   "within the margin of each other: a tie")


def _verdict(ids, labels, drops, graph, influence) -> tuple[float | None, str, tuple, str]:
    """(rank correlation, verdict, (top kind, top by removal, top by graph), sentence)."""
    if not influence:
        best = labels[int(np.argmax(drops))]
        return None, "no-graph", ("none", ids[int(np.argmax(drops))], None), (
            f"Removing \u201c{best}\u201d lowers the answer's log-probability most; this trace has no hop graph "
            "to compare with.")
    top, top_drop, top_graph, clause = _top_clause(ids, drops, graph, labels)
    tops = (top, top_drop, top_graph)
    rho = spearman(drops, graph) if len(ids) >= MIN_STEPS else None
    if rho is None:
        steps = f"{len(ids)} step{'s' * (len(ids) != 1)}"
        return None, "too-few", tops, f"With {steps} no rank correlation is claimed; {clause}."
    verdict = "agree" if rho >= AGREE else "opposed" if rho <= -AGREE else "unrelated"
    words = {"agree": "agree on the order of the steps", "opposed": "order the steps in opposite ways",
             "unrelated": "do not agree on the order of the steps"}[verdict]
    return rho, verdict, tops, (f"Removal and the hop graph {words} (rank correlation {rho:+.2f} over {len(ids)} "
                                f"steps); {clause}.")


def step_influence(trace: Trace) -> StepInfluence | None:
    """Step influence by intervention against the hop graph's (None when no step removal is stored).

    A stored removal of a segment that only marks the answer ("Answer:") is left out: it is no step
    (`segments.is_step`).

    Args:
        trace: The recording, with its stored interventions.

    Returns:
        Each removed step's drop next to its hop-graph influence, their rank correlation, verdict, top steps and a
            sentence; None when no step removal is stored.
    """
    record = trace.interventions
    steps = {s.id for s in trace.segments or [] if is_step(s)}
    rows = [e for e in record.edits if e.kind == "step" and len(e.segments) == 1 and e.segments[0] in steps] \
        if record else []
    if not rows:
        return None
    facts = analyse(trace)
    ids = tuple(e.segments[0] for e in rows)
    labels = _labels(trace, ids)
    drops = tuple(record.before - e.logprob for e in rows)
    influence = facts.graph.influence if facts.graph is not None else {}
    graph = tuple(float(influence.get(i, 0.0)) for i in ids)
    rho, verdict, (top, top_drop, top_graph), sentence = _verdict(ids, labels, drops, graph, influence)
    return StepInfluence(ids, labels, drops, graph, rho, verdict, top, top_drop, top_graph, sentence)


def sentence_removal(trace: Trace) -> SentenceRemoval | None:
    """The stored prompt-sentence removals (None when none is stored).

    Args:
        trace: The recording, with its stored interventions.

    Returns:
        The drops of the top, random and gold sentence removals, the top one's check against the random ones and a
            sentence; None when none is stored.
    """
    record = trace.interventions
    if record is None:
        return None
    drop = {e.kind: [] for e in record.edits}
    for e in record.edits:
        drop[e.kind].append((tuple(e.segments), record.before - e.logprob))
    top = (drop["top"][0][0][0], drop["top"][0][1]) if drop.get("top") else None
    randoms = tuple((ids[0], d) for ids, d in drop.get("random", []))
    gold = drop["gold"][0] if drop.get("gold") else None
    if top is None and not randoms and gold is None:
        return None
    check = None
    if top is not None and randoms:
        check = summarise_check({"fraction": 1.0, "n_deleted": 1, "before": record.before,
                                 "top": record.before - top[1], "random": [record.before - d for _, d in randoms]})
    return SentenceRemoval(record.before, top, randoms, gold, check, _removal_sentence(top, randoms, gold, check))


_VERDICT = {"no-effect": "moves it by no more than 0.01 nats, nor does any random sentence: removal cannot tell here "
                         "(the reasoning states what the answer needs)",
            "not-lower": "does not lower it", "below-random": "lowers it less than every random sentence does",
            "within-random": "lowers it within the range of the random sentences",
            "above-draws": "lowers it more than every random sentence, but not by two of their standard deviations",
            "clearly-above": "lowers it clearly more than the random sentences (two standard deviations or more)"}


def _removal_sentence(top, randoms, gold, check) -> str:
    parts = []
    if top is not None:
        tail = f": it {_VERDICT[check.verdict]}" if check is not None else ""
        parts.append(f"Removing the top evidence sentence lowers the answer's log-probability by {top[1]:.2f} nats"
                     f"{tail}")
    if randoms:
        values = [d for _, d in randoms]
        parts.append(f"{len(values)} random sentence{'s' * (len(values) != 1)}: {np.mean(values):.2f} nats on "
                     f"average ({min(values):.2f} to {max(values):.2f})")
    if gold is not None:
        parts.append(f"the gold sentence{'s' * (len(gold[0]) != 1)}: {gold[1]:.2f} nats")
    return "; ".join(parts) + "."


def resampled_influence(trace: Trace) -> ResampledInfluence | None:
    """The stored resampled continuations per step (None when none are stored).

    Args:
        trace: The recording, with its stored interventions.

    Returns:
        Per resampled step the mean log-probabilities kept and removed, the drop, the teacher-forced drop, the
            answer match rates and a sentence; None when none are stored.
    """
    record = trace.interventions
    if record is None or record.resampled is None or not record.resampled.steps:
        return None
    rows = record.resampled.steps
    ids = tuple(r.step for r in rows)
    kept = tuple(float(np.mean(r.kept)) for r in rows)
    removed = tuple(float(np.mean(r.removed)) for r in rows)
    drops = tuple(k - r for k, r in zip(kept, removed))
    forced = {e.segments[0]: record.before - e.logprob for e in record.edits if e.kind == "step"}
    kept_match = tuple(float(np.mean(r.kept_match)) for r in rows)
    removed_match = tuple(float(np.mean(r.removed_match)) for r in rows)
    labels = _labels(trace, ids)
    best = int(np.argmax(drops))
    n = record.resampled.n
    sentence = (f"With {n} resampled continuation{'s' * (n != 1)} per step, removing \u201c{labels[best]}\u201d "
                f"lowers the answer's log-probability most ({drops[best]:.2f} nats on average); the continuations "
                f"reach the original answer {np.mean(kept_match):.0%} of the time with a step kept and "
                f"{np.mean(removed_match):.0%} with it removed.")
    return ResampledInfluence(n, ids, labels, kept, removed, drops, tuple(forced.get(i) for i in ids), kept_match,
                              removed_match, sentence)


def with_interventions(trace: Trace, record: InterventionRecord) -> Trace:
    """A copy of `trace` holding `record` (replacing any stored before), at the current schema version.

    Args:
        trace: The recording to copy.
        record: The interventions to store in the copy.

    Returns:
        The copy, checked (`invariants.check_interventions`).

    Raises:
        InputError: When `record` names segments the trace does not have as prompt sentences or reasoning steps,
            or its resampled steps are inconsistent (from `invariants.check_interventions`).
    """
    out = trace.model_copy(update={"interventions": record, "schema_version": SCHEMA_VERSION})
    check_interventions(out)
    return out


def intervention_facts(trace: Trace) -> InterventionFacts | None:
    """Everything the views show about a trace's stored interventions (None when it has none).

    Args:
        trace: The recording, with its stored interventions.

    Returns:
        The unedited log-probability, the model, the step influence, the sentence removals and the resampled
            influence (each None when not stored); None when the trace has no interventions.
    """
    record = trace.interventions
    if record is None:
        return None
    return InterventionFacts(record.before, record.model, step_influence(trace), sentence_removal(trace),
                             resampled_influence(trace))


__all__ = ["InterventionFacts", "with_interventions", "StepInfluence", "SentenceRemoval", "ResampledInfluence",
           "intervention_facts", "step_influence", "sentence_removal", "resampled_influence", "DEFAULT_RANDOM", "DEFAULT_NEW_TOKENS", "DEFAULT_TEMPERATURE", "DEFAULT_TOP_P", "AGREE", "MIN_STEPS", "LOGPROB_MARGIN", "DROP", "OF_ANSWER"]
