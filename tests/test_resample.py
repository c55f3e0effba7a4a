"""Resampled continuations per reasoning step on a tiny model: seeded and repeatable, n = 0 is the
teacher-forced path, each scored sequence is the context + continuation + the trace's own answer tail, the
record round-trips through the Trace file, the estimate exists, and the CLI prints and stores it."""

import json

import pytest
import torch

from flashtrace import Trace, TraceValidationError
from flashtrace.analysis.interventions import intervention_facts
from flashtrace.cli import main
from flashtrace.run import resample as rs
from flashtrace.run.interventions import intervene, step_edits, with_interventions
from flashtrace.run.tracing import attribute, prepare

PROMPT = "Ann has 3 red balls. Ben has 4 blue balls. Cat has 9 green balls. How many balls do Ann and Ben have?"
RESPONSE = "1. Ann has 3 balls.\n2. Ben has 4 balls.\n3. So 3 + 4 = 7.\nAnswer: 7 balls"


@pytest.fixture
def trace(tiny_llama) -> Trace:
    return attribute(prepare(tiny_llama, PROMPT, RESPONSE), hops=1, steps=True)


def _without_seconds(record) -> dict:
    data = record.model_dump()
    data.pop("seconds")
    if data.get("resampled"):
        data["resampled"].pop("seconds")
    return data


def test_seeded_resampling_repeats_and_another_seed_differs(tiny_llama, trace):
    first = rs.resample_steps(tiny_llama, trace, 2, seed=4, max_new_tokens=2)
    again = rs.resample_steps(tiny_llama, trace, 2, seed=4, max_new_tokens=2)
    assert _without_seconds(first) == _without_seconds(again)
    ids = [t.id for t in trace.tokens]
    draws = [rs._sample(tiny_llama, ids, 4, seed, 4, 1.0, None) for seed in (4, 4, 5)]
    assert draws[0] == draws[1] and draws[0] != draws[2]
    assert [r.step for r in first.steps] == [e.segments[0] for e in step_edits(trace)]
    assert all(len(r.kept) == len(r.removed) == len(r.kept_match) == 2 for r in first.steps)


def test_resampling_leaves_the_global_rng_alone(tiny_llama, trace):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    rs._sample(tiny_llama, [t.id for t in trace.tokens], 2, 0, 3, 0.7, 0.95)
    assert torch.equal(torch.rand(3), expected)


def test_n_zero_is_the_teacher_forced_path(tiny_llama, trace):
    plain = intervene(tiny_llama, trace, n_random=2, seed=1)
    zero = rs.intervene_and_resample(tiny_llama, trace, 0, n_random=2, seed=1)
    assert zero.resampled is None and _without_seconds(zero) == _without_seconds(plain)
    with pytest.raises(ValueError, match="at least 1"):
        rs.resample_steps(tiny_llama, trace, 0)
    assert rs.estimate_resample_seconds(tiny_llama, trace, 0) == 0.0


def test_scored_sequence_is_context_continuation_and_the_answer_tail(tiny_llama, trace, monkeypatch):
    seen = []
    real = rs.score
    monkeypatch.setattr(rs, "score", lambda loaded, rows, batch_size=8: seen.extend(rows) or real(loaded, rows))
    monkeypatch.setattr(rs, "_sample", lambda loaded, context, n, *a: [[11, 12, 13]] * n)
    record = rs.resample_steps(tiny_llama, trace, 2, max_new_tokens=3)
    ids = [t.id for t in trace.tokens]
    tail = rs.answer_tail(trace)
    lo, hi = trace.settings.target
    assert trace.tokens[tail].text.strip().startswith("Answer") and tail < lo
    segs = {s.id: s for s in trace.segments}
    first = segs[record.steps[0].step]
    assert list(seen[0].ids) == ids[: first.end] + [11, 12, 13] + ids[tail:hi]  # kept
    assert list(seen[2].ids) == ids[: first.start] + [11, 12, 13] + ids[tail:hi]  # removed
    assert list(seen[0].ids[seen[0].target[0]: seen[0].target[1]]) == ids[lo:hi]


def test_a_continuation_is_cut_at_its_own_answer_and_matched(tiny_llama):
    tok = tiny_llama.tokenizer
    ids = tok.encode("So 3 + 4 = 7.\nAnswer: 7 balls.\nmore", add_special_tokens=False)
    kept, own = rs._cut(tok, ids, set(), "Answer:")
    assert tok.decode(kept).rstrip() == "So 3 + 4 = 7." and rs._norm(own) == rs._norm("7 balls")
    assert rs._cut(tok, ids, set(), "Final:") == (ids, "")


def test_record_round_trips_and_the_facts_summarise_it(tiny_llama, trace):
    record = rs.intervene_and_resample(tiny_llama, trace, 2, n_random=1, resample_options={"max_new_tokens": 4})
    stored = Trace.from_json(with_interventions(trace, record).to_json())
    assert stored.interventions == record and record.resampled.n == 2
    facts = intervention_facts(stored).resampled
    row = record.resampled.steps[0]
    assert facts.kept[0] == pytest.approx(sum(row.kept) / 2) and facts.drops[0] == pytest.approx(
        facts.kept[0] - facts.removed[0])
    forced = next(e for e in record.edits if e.kind == "step" and e.segments == [row.step])
    assert facts.teacher_forced[0] == pytest.approx(record.before - forced.logprob)
    data = json.loads(stored.to_json())
    data["interventions"]["resampled"]["steps"][0]["kept"].append(0.0)
    with pytest.raises(TraceValidationError, match="continuations"):
        Trace.from_dict(data)
    del data["interventions"]["resampled"]
    assert Trace.from_dict(data).interventions.resampled is None  # files without the field still load


def test_estimate_grows_with_n(tiny_llama, trace):
    one, four = (rs.estimate_resample_seconds(tiny_llama, trace, n) for n in (1, 4))
    assert 0 < one < four


def test_cli_prints_the_estimate_and_stores_the_resampling(tiny_llama, trace, tmp_path, capsys):
    path, out = tmp_path / "t.json", tmp_path / "out.json"
    trace.save(path)
    assert main(["intervene", str(path), "--resample", "2", "--resample-tokens", "4", "--random", "1",
                 "--out", str(out), "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "resampled continuations per step" in captured.err and "predicted" in captured.err
    stored = Trace.load(out)
    assert stored.interventions.resampled.n == 2 and stored.interventions.resampled.max_new_tokens == 4
    assert intervention_facts(stored).resampled.sentence in captured.out
    assert main(["intervene", str(path), "--resample", "2", "--no-steps"]) == 2


def test_the_marker_is_not_resampled_and_each_row_ends_with_the_marker_and_the_original_answer(tiny_llama, trace,
                                                                                                 monkeypatch):
    seen = []
    real = rs.score
    monkeypatch.setattr(rs, "score", lambda loaded, rows, batch_size=8: seen.extend(rows) or real(loaded, rows))
    monkeypatch.setattr(rs, "_sample", lambda loaded, context, n, *a: [[11, 12, 13]] * n)
    record = rs.resample_steps(tiny_llama, trace, 1, max_new_tokens=3)
    texts = {s.id: s.text.strip() for s in trace.segments}
    assert [texts[r.step] for r in record.steps] == ["1. Ann has 3 balls.", "2. Ben has 4 balls.", "3. So 3 + 4 = 7."]
    ids = [t.id for t in trace.tokens]
    hi, tail = trace.settings.target[1], rs.answer_tail(trace)
    last = next(s for s in trace.segments if s.id == record.steps[-1].step)
    assert list(seen[-2].ids) == ids[:last.end] + [11, 12, 13] + ids[tail:hi]  # kept: continuation, "Answer:", 7
