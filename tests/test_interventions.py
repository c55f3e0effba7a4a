"""Interventions on tiny models: an edit changes exactly the edited segment's tokens, and the scored
log-probabilities equal an independent teacher-forced computation (one sequence at a time, full logits)."""

import json

import pytest
import torch

from flashtrace import Trace, TraceValidationError
from flashtrace.run.interventions import (edit_ids, intervene, plan, score, sentence_edits, step_edits, unedited,
                                          with_interventions)
from flashtrace.run.rerun import edit, edited_texts
from flashtrace.analysis.facts import analyse
from flashtrace.analysis.segments import steps_before_target
from flashtrace.run.tracing import attribute, prepare

PROMPT = "Ann has 3 red balls. Ben has 4 blue balls. Cat has 9 green balls. How many balls do Ann and Ben have?"
RESPONSE = "1. Ann has 3 balls.\n2. Ben has 4 balls.\n3. So 3 + 4 = 7.\nAnswer: 7 balls"


def _trace(loaded, **extra) -> Trace:
    tr = attribute(prepare(loaded, PROMPT, RESPONSE), hops=1, steps=True)
    if extra:
        tr = Trace.from_dict({**json.loads(tr.to_json()), "extra": extra})
    return tr


def independent_logprob(model, ids: list[int], target: tuple[int, int]) -> float:
    """The target's summed log-probability, one token at a time from the full logits of one sequence."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0].double()  # [N, V]
    logp = torch.log_softmax(logits, dim=-1)
    return sum(float(logp[p - 1, ids[p]]) for p in range(*target))


def test_removing_a_segment_changes_exactly_its_tokens(tiny_llama):
    tr = _trace(tiny_llama)
    ids = [t.id for t in tr.tokens]
    for seg in (s for s in tr.segments if s.role in ("prompt", "reasoning") and s.end <= tr.settings.target[0]):
        edited = edit_ids(tr, [seg.id])
        assert list(edited.ids) == ids[: seg.start] + ids[seg.end:], seg.id
        lo, hi = tr.settings.target
        assert edited.target == (lo - (seg.end - seg.start), hi - (seg.end - seg.start))
        assert list(edited.ids[edited.target[0]: edited.target[1]]) == ids[lo:hi]  # the same answer tokens
    replaced = edit_ids(tr, ["P1"], [11, 12, 13])
    p1 = next(s for s in tr.segments if s.id == "P1")
    assert list(replaced.ids) == ids[: p1.start] + [11, 12, 13] + ids[p1.end:]


def test_two_segments_and_the_response_start(tiny_llama):
    tr = _trace(tiny_llama)
    segs = {s.id: s for s in tr.segments}
    edited = edit_ids(tr, ["S1", "P0"])  # order of the names does not matter
    ids = [t.id for t in tr.tokens]
    p0, s1 = segs["P0"], segs["S1"]
    assert list(edited.ids) == ids[: p0.start] + ids[p0.end: s1.start] + ids[s1.end:]
    first_response = next(i for i, t in enumerate(tr.tokens) if t.role in ("reasoning", "answer"))
    assert edited.response_start == first_response - (p0.end - p0.start)


@pytest.mark.parametrize("bad, message", [(["A"], "answer"), (["P9"], "no segment"), ([], "at least one")])
def test_edits_refused(tiny_llama, bad, message):
    tr = _trace(tiny_llama)
    with pytest.raises(ValueError, match=message):
        edit_ids(tr, bad)


def test_scores_match_an_independent_teacher_forced_computation(tiny):
    tr = _trace(tiny, gold=[[21, 42]])
    rows = [unedited(tr), *plan(tr, n_random=3, seed=1)]
    # the plan does not depend on which sentence this random-weight model happens to rank first: every step,
    # the top sentence, up to 3 other sentences and the gold sentence, whichever the top one is
    top = [r.segments for r in rows if r.kind == "top"]
    randoms = [r.segments for r in rows if r.kind == "random"]
    facts = analyse(tr)
    pieces, ranked = [p.key for p in facts.pieces], facts.evidence(1)  # no top when no sentence has a share
    assert [r.kind for r in rows[1:]].count("step") == len(steps_before_target(tr)) > 0
    assert top == [(ranked[0][0].key,)] if ranked else top == []
    assert len(randoms) == min(3, len(pieces) - len(top)) and not set(top) & set(randoms)
    assert [r.segments for r in rows if r.kind == "gold"] == [("P1",)]  # characters 21..42
    values = score(tiny, rows, batch_size=3)  # several batches of unequal lengths
    for row, value in zip(rows, values):
        assert value == pytest.approx(independent_logprob(tiny.model, list(row.ids), row.target), abs=1e-5)
    assert len({len(r.ids) for r in rows}) > 1  # the batches really mixed lengths


def test_intervene_record_round_trips_and_deltas_match(tiny_llama):
    tr = _trace(tiny_llama, gold=[[21, 42]])
    record = intervene(tiny_llama, tr, n_random=2, seed=3)
    before = independent_logprob(tiny_llama.model, [t.id for t in tr.tokens], tr.settings.target)
    assert record.before == pytest.approx(before, abs=1e-5)
    steps = [e for e in record.edits if e.kind == "step"]
    assert [e.segments for e in steps] == [["S0"], ["S1"], ["S2"]]  # S3, "Answer:", is no step
    for e in record.edits:
        row = edit_ids(tr, e.segments)
        after = independent_logprob(tiny_llama.model, list(row.ids), row.target)
        assert e.logprob - record.before == pytest.approx(after - before, abs=1e-5)
    stored = with_interventions(tr, record)
    again = Trace.from_json(stored.to_json())
    assert again.schema_version == 3 and again.interventions == record


def test_sentence_edits_are_seeded_and_skip_the_top(tiny_llama):
    tr = _trace(tiny_llama, gold=[[21, 42]])
    first, second = sentence_edits(tr, n_random=2, seed=5), sentence_edits(tr, n_random=2, seed=5)
    assert [e.segments for e in first] == [e.segments for e in second]
    top = first[0]
    assert top.kind == "top"
    randoms = [e for e in first if e.kind == "random"]
    assert len(randoms) == 2 and all(e.segments != top.segments for e in randoms)
    assert first[-1].kind == "gold" and first[-1].segments == ("P1",)  # characters 21..42: "Ben has 4 blue balls."
    assert len([e for e in sentence_edits(tr, n_random=50) if e.kind == "random"]) == 3  # only 3 other sentences


def test_step_edits_cover_each_step_before_the_answer_and_not_the_answer_marker(tiny_llama):
    tr = _trace(tiny_llama)
    reasoning = {s.id: s.text.strip() for s in tr.segments if s.role == "reasoning"}
    assert list(reasoning.values()) == ["1. Ann has 3 balls.", "2. Ben has 4 balls.", "3. So 3 + 4 = 7.", "Answer:"]
    edited = [e.segments[0] for e in step_edits(tr)]
    assert [reasoning[i] for i in edited] == ["1. Ann has 3 balls.", "2. Ben has 4 balls.", "3. So 3 + 4 = 7."]


def test_a_stored_removal_of_the_answer_marker_is_no_step_in_step_influence(tiny_llama):
    from flashtrace.analysis.facts import analyse
    from flashtrace.analysis.interventions import step_influence
    from flashtrace.analysis.schema import EditRecord, InterventionRecord
    from flashtrace.analysis.story import question_panel

    tr = _trace(tiny_llama)
    marker = next(s.id for s in tr.segments if s.text.strip() == "Answer:")
    steps = [e.segments[0] for e in step_edits(tr)]
    edits = [edit_ids(tr, [i], kind="step") for i in [*steps, marker]]  # a record made before the rule
    values = score(tiny_llama, [unedited(tr), *edits])
    record = InterventionRecord(before=values[0], model=tr.model.name, seed=None, seconds=0.0,
                                edits=[EditRecord(kind="step", segments=list(e.segments), logprob=v)
                                       for e, v in zip(edits, values[1:])])
    influence = step_influence(with_interventions(tr, record))
    assert influence.ids == tuple(steps) and marker not in influence.ids
    assert "reasoned in 3 steps" in question_panel(tr, analyse(tr)).caption


def test_version_2_traces_load_and_bad_interventions_are_refused(tiny_llama):
    tr = _trace(tiny_llama)
    data = json.loads(tr.to_json())
    data["schema_version"] = 2
    del data["interventions"]
    old = Trace.from_dict(data)
    assert old.interventions is None and old.schema_version == 3
    bad = {**data, "interventions": {"before": -1.0, "model": "m", "seconds": 0.0,
                                     "edits": [{"kind": "step", "segments": ["A"], "logprob": -2.0}]}}
    with pytest.raises(TraceValidationError, match="not prompt sentences or reasoning steps"):
        Trace.from_dict(bad)


def test_edit_rerun_generates_and_retraces(tiny_llama):
    tr = _trace(tiny_llama)
    result = edit(tiny_llama, tr, ["P1"], retrace=True, max_new_tokens=6)
    row = edit_ids(tr, ["P1"])
    expected = independent_logprob(tiny_llama.model, list(row.ids), row.target)
    assert result.after == pytest.approx(expected, abs=1e-5) and result.change == result.after - result.before
    assert result.prompt == PROMPT.replace(" Ben has 4 blue balls.", "")
    assert result.response == result.generated and result.generated
    assert result.trace is not None and result.trace.prompt == result.prompt
    assert result.trace.response == result.response


def test_a_rerun_reports_one_rising_progress_that_fills_only_at_the_end(tiny_llama):
    """The re-run's bar sat full ("60/60 · under 1 s left") while the model was still writing: the scoring
    filled it, the generation reported nothing. Now one count covers scoring, each new token and the trace."""
    seen: list[tuple[int, int]] = []
    edit(tiny_llama, _trace(tiny_llama), ["P1"], retrace=True, max_new_tokens=6,
         progress=lambda done, total: seen.append((done, total)))
    done = [d for d, _ in seen]
    assert {t for _, t in seen} == {1000} and done == sorted(done)  # never backwards
    assert done[-1] == 1000 and done.count(1000) <= 2  # full only once the new trace's attribution ends
    assert len({d for d in done if 0 < d < 1000}) >= 3  # the scoring, the new tokens and the trace move it


def test_edited_texts_replace_a_step(tiny_llama):
    tr = _trace(tiny_llama)
    assert edited_texts(tr, ["P1"], "Ben has 5 blue balls.")[0] == PROMPT.replace("4 blue", "5 blue")
    prompt, response = edited_texts(tr, ["S1"], "2. Ben has 5 balls.")
    assert prompt == PROMPT
    assert response == RESPONSE.replace("2. Ben has 4 balls.", "2. Ben has 5 balls.")
    result = edit(tiny_llama, tr, ["S1"], "2. Ben has 5 balls.", regenerate=True, max_new_tokens=4)
    assert result.response.startswith("1. Ann has 3 balls.\n2. Ben has 5 balls.\n3. So 3 + 4 = 7.\n")


def test_scoring_progress_over_several_batches_counts_every_layer_of_every_row_in_order(tiny_llama):
    """`intervene`'s bar (and the panel's) counts layers x rows: each batch continues where the last one ended,
    so the bar never runs backwards between batches."""
    tr = _trace(tiny_llama)
    rows = [edit_ids(tr, [s.id]) for s in tr.segments if s.role == "prompt" and s.end <= tr.settings.target[0]]
    rows = (rows * 4)[:7]
    seen: list[tuple[int, int]] = []
    score(tiny_llama, rows, batch_size=3, progress=lambda done, total: seen.append((done, total)))
    n_layers = len(tiny_llama.spec.decoder_layers(tiny_llama.model))
    expected = [lo * n_layers + size * i for lo, size in ((0, 3), (3, 3), (6, 1)) for i in range(n_layers)]
    assert [d for d, _ in seen] == expected + [7 * n_layers]
    assert {t for _, t in seen} == {7 * n_layers}


def test_a_trace_whose_largest_id_is_the_vocabulary_size_asks_for_its_own_model(tiny_llama):
    """Ids run 0..vocab-1: an id equal to the vocabulary size already does not fit (not torch's index error)."""
    from flashtrace.base.errors import InputError
    from flashtrace.run.interventions import check_model

    tr = _trace(tiny_llama)
    vocab = tiny_llama.model.get_input_embeddings().weight.shape[0]
    edge = tr.model_copy(update={"tokens": [*tr.tokens[:-1], tr.tokens[-1].model_copy(update={"id": vocab})]})
    with pytest.raises(InputError, match="load the model the trace was made with"):
        check_model(tiny_llama, edge)
    check_model(tiny_llama, tr.model_copy(update={"tokens": [*tr.tokens[:-1], tr.tokens[-1].model_copy(update={"id": vocab - 1})]}))
