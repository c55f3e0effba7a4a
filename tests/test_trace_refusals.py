"""A trace file that breaks one invariant is refused with a message naming the field and what is wrong, and a
file right at each limit still loads (the boundaries of `analysis/invariants.py`)."""

import copy
import json
from pathlib import Path

import pytest

from flashtrace.analysis.limits import MAX_EXTRA_DEPTH, MAX_EXTRA_NODES, MAX_SCORE, REL_TOL
from flashtrace.analysis.invariants import check_vectors
from flashtrace.analysis.schema import Trace, TraceValidationError
from flashtrace.store.gallery import gallery_dir

N = 150  # tokens of free-form.json


@pytest.fixture(scope="module")
def base():
    doc = json.loads((Path(gallery_dir()) / "free-form.json").read_text())
    assert len(doc["tokens"]) == N
    return doc


def _edit(doc, change):
    doc = copy.deepcopy(doc)
    change(doc)
    return json.dumps(doc)


def _nest(doc, levels):
    node = doc["extra"]
    for _ in range(levels):
        node["x"] = {}
        node = node["x"]


def _swap_hops(doc):
    doc["hops"][1], doc["hops"][2] = doc["hops"][2], doc["hops"][1]


def _gap(doc):
    doc["segments"][1]["start"] += 1


def _empty_segment(doc):
    first, second = doc["segments"][1], doc["segments"][2]
    first["end"] = first["start"]
    second["start"] = first["start"]


def _nudge_final(doc):
    final = doc["scores"]["final"]
    i = max(range(N), key=final.__getitem__)
    final[i] += 2.5 * REL_TOL * final[i]  # the tolerance is relative to the largest score (here below 1)


def _no_attribution(doc):
    doc["scores"]["final"] = [0.0] * N
    for hop in doc["hops"]:
        hop["contribution"] = [0.0] * N


def _response_only(doc):
    """A continuation without a prompt: every token is the response and the target starts at the first one."""
    for token in doc["tokens"]:
        token["role"] = "answer"
    doc["scores"]["prompt"] = [0.0] * N
    doc["settings"]["target"] = [0, N]


def _step_vector_for_every_segment(doc):
    for segment in doc["segments"]:
        doc["steps"]["vectors"].setdefault(segment["id"], [0.0] * N)


def _resampled(**second):
    """A resampling of two reasoning steps with n = 2 continuations of each kind; `second` changes the second."""
    def change(doc):
        rows = [{"step": step, "kept": [-1.0, -2.0], "removed": [-3.0, -4.0], "kept_match": [True, False],
                 "removed_match": [False, False]} for step in ("S0", "S5")]
        rows[1].update(second)
        doc["interventions"]["resampled"] = {"n": 2, "seed": 0, "max_new_tokens": 8, "seconds": 1.0, "steps": rows}
    return change


REFUSED = {
    "steps without segments": (lambda d: d.update(segments=None),
                               "error, steps needs segments: a step vector belongs to a segment$"),
    "segment order": (lambda d: d["segments"][1].update(order=5), r"segments\[1\]\.order is 5; segments must be listed"),
    "segment gap": (_gap, r"segments\[1\] covers tokens 25\.\.39; .*expected a start at 24\)"),
    "empty segment": (_empty_segment, r"segments\[1\] covers tokens 24\.\.24"),
    "segments short": (lambda d: d["segments"].pop(), f"segments end at token 131 but the trace has {N} tokens"),
    "duplicate ids": (lambda d: d["segments"][2].update(id="P0"), "error, segment ids must be unique$"),
    "unknown step": (lambda d: d["steps"]["vectors"].update(Q9=[0.0] * N),
                     r"steps.vectors names segments that do not exist: \['Q9'\]"),
    "four unknown steps": (lambda d: d["steps"]["vectors"].update({k: [0.0] * N for k in ("Q4", "Q1", "Q3", "Q2")}),
                           r"do not exist: \['Q1', 'Q2', 'Q3'\]$"),  # the first three, in order
    "intervention on the answer": (lambda d: d["interventions"]["edits"][1].update(segments=["S0", "A"]),
                                   r"error, interventions.edits\[1\] names \['A'\], which are not prompt sentences or "
                                   r"reasoning steps of this trace$"),
    "intervention on four unknown segments": (lambda d: d["interventions"]["edits"][1].update(
        segments=["A", "T0", "T1", "S9"]), r"names \['A', 'T0', 'T1'\], which"),  # the first three named
    "short vector": (lambda d: d["hops"][1]["raw"].pop(), rf"hops\[1\]\.raw has {N - 1} values but the trace has {N}"),
    "resampling a prompt sentence": (_resampled(step="P0"), r"interventions.resampled.steps\[1\] names 'P0', which is not "
                                                          r"a reasoning step of this trace$"),
    "resampling the answer": (_resampled(step="A"), r"interventions.resampled.steps\[1\] names 'A'"),
    "a resampled step short of n": (_resampled(kept=[-1.0]),
                                    r"interventions.resampled.steps\[1\] holds \[1, 2\] continuations, not n = 2$"),
    "a resampled step past n": (_resampled(removed_match=[True] * 3),
                                r"interventions.resampled.steps\[1\] holds \[2, 3\] continuations, not n = 2$"),
    "negative final score": (lambda d: d["scores"]["final"].__setitem__(3, -1.0),
                             r"error, scores.final has negative values$"),
    "short prompt scores": (lambda d: d["scores"]["prompt"].pop(),
                            rf"error, scores.prompt has {N - 1} values but the trace has {N} tokens$"),
    "negative weight": (lambda d: d["hops"][0]["weights"].__setitem__(3, -1.0), r"hops\[0\]\.weights has negative"),
    "huge step value": (lambda d: d["steps"]["vectors"]["S1"].__setitem__(0, 1e39),
                        r"steps.vectors\[S1\] has values above 3.403e\+38 \(float32's largest\)"),
    "span past the end": (lambda d: d["spans"].update(answer=[140, N + 1]), rf"spans.answer \[140, {N + 1}\] is outside"),
    "empty span": (lambda d: d["spans"].update(prompt=[30, 30]), rf"spans.prompt \[30, 30\] is outside the {N} tokens"),
    "empty reasoning": (lambda d: d["spans"].update(reasoning=[70, 70]), r"spans.reasoning \[70, 70\] is outside"),
    "target past the end": (lambda d: d["settings"].update(target=[140, N + 1]),
                            rf"settings.target \[140, {N + 1}\] is outside the {N} tokens"),
    "empty target": (lambda d: d["settings"].update(target=[140, 140]), r"settings.target \[140, 140\] is outside"),
    "target in the prompt": (lambda d: d["settings"].update(target=[60, 72]),
                             r"settings.target \[60, 72\] starts in the prompt; the target must lie in the response "
                             r"\(tokens 70\.\.149\)"),
    "no response": (lambda d: [t.update(role="template") for t in d["tokens"] if t["role"] in ("reasoning", "answer")],
                    r"starts in the prompt; the target must lie in the response$"),
    "final off by 2.5 x the tolerance": (_nudge_final, r"scores.final\[\d+\] is .* but the hop contributions sum to"),
    "prompt sums off by 1.5 x the tolerance": (lambda d: d["scores"].update(prompt=[v * (1 + 1.5 * REL_TOL) for v in
                                                                             d["scores"]["prompt"]]),
                                               "scores.prompt sums to 1.00015 over the prompt tokens"),
    "a little prompt score outside": (lambda d: d["scores"]["prompt"].__setitem__(140, 1.5 * REL_TOL),
                                      r", scores.prompt is non-zero outside the prompt tokens$"),
    "hops out of order": (_swap_hops, r"error, hops must be numbered 0, 1, 2, \.\.\. in order$"),
    "no hop record": (lambda d: d.update(hops=[]), r"error, a trace has at least one hop record \(hop 0\)$"),
    "more hop records than settings.hops allows": (lambda d: d["settings"].update(hops=1),
                                                   r"error, the trace has 4 hop records but settings.hops is 1 "
                                                   r"\(at most 2\)$"),
    "prompt score outside the prompt": (lambda d: d["scores"]["prompt"].__setitem__(140, 0.5),
                                        r", scores.prompt is non-zero outside the prompt tokens$"),
    "extra too deep": (lambda d: _nest(d, MAX_EXTRA_DEPTH), f"extra is nested deeper than {MAX_EXTRA_DEPTH} levels"),
    "extra too big": (lambda d: d.update(extra={"a": list(range(MAX_EXTRA_NODES - 1))}),
                      f"extra holds more than {MAX_EXTRA_NODES:,} values"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_broken_invariant_is_refused_with_its_field_named(base, case):
    change, message = REFUSED[case]
    with pytest.raises(TraceValidationError, match=message):
        Trace.from_json(_edit(base, change))


def test_every_vector_is_checked_whatever_comes_before_it():
    """An empty vector (a trace without tokens) does not end the checks: the next one must be empty too."""
    with pytest.raises(ValueError, match=r"^scores.prompt has 2 values but the trace has 0 tokens$"):
        check_vectors({"scores.final": [], "scores.prompt": [0.5, 0.5]}, 0)


ACCEPTED = {
    "spans up to the last token": lambda d: d["spans"].update(answer=[N - 1, N],  # the answer's value inside it
                                                               **({"value": [N - 1, N]} if d["spans"].get("value") else {})),
    "one-token prompt span": lambda d: d["spans"].update(prompt=[24, 25]),
    "target up to the last token": lambda d: d["settings"].update(target=[N - 1, N]),
    "target from the first response token": lambda d: d["settings"].update(target=[70, 75]),
    "no prompt scores": lambda d: d["scores"].update(prompt=[0.0] * N),
    "a token without characters": lambda d: d["tokens"][30].update(end=d["tokens"][30]["start"]),
    "extra at the depth limit": lambda d: _nest(d, MAX_EXTRA_DEPTH - 1),
    "extra at the size limit": lambda d: d.update(extra={"a": list(range(MAX_EXTRA_NODES - 2))}),
    "no attribution at all": _no_attribution,
    "a response without reasoning": lambda d: [t.update(role="answer") for t in d["tokens"] if t["role"] == "reasoning"],
    "reasoning steps resampled n times each": _resampled(),
    "a response from the first token (no prompt)": _response_only,
    "a step vector for every segment": _step_vector_for_every_segment,
    "a step value of exactly float32's largest": lambda d: d["steps"]["vectors"]["S1"].__setitem__(0, MAX_SCORE),
    "fewer hop records than settings.hops allows": lambda d: d["settings"].update(hops=5),
}


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_a_trace_right_at_a_limit_loads(base, case):
    trace = Trace.from_json(_edit(base, ACCEPTED[case]))
    assert len(trace.tokens) == N
