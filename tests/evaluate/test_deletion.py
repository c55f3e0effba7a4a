"""Deletion scoring (issue 28 item 1): batched, each distinct state run once per example, progress by layer,
and a stop from the progress callback that keeps what finished."""

import json
import threading

import pytest
import torch

from flashtrace.engine.attribution.baselines import target_logprob
from flashtrace.engine.models import load_model
from flashtrace.engine.models.progress import each_layer
from flashtrace.evaluate.deletion import DeletionScorer, deleted_batch
from flashtrace.evaluate.methods import build_context
from flashtrace.evaluate.runner import evaluate_context
from flashtrace.evaluate.tasks import make_example


@pytest.fixture(scope="module")
def llama():
    return load_model("tiny-llama")


@pytest.fixture
def ctx(llama):
    return build_context(llama, make_example("needle", 2, length=30), batch_size=4)


def _scorer(ctx, batch_size=4):
    return DeletionScorer(ctx.loaded, ctx.ids, ctx.positions, ctx.replace_id, ctx.target, batch_size)


def _masks(p: int, rows: int) -> torch.Tensor:
    masks = torch.zeros(rows, p, dtype=torch.bool)
    for r in range(rows):
        masks[r, : r * 2] = True
    return masks


def test_scores_equal_one_sequence_at_a_time(ctx, llama):
    masks = _masks(ctx.positions.numel(), 6)
    got = _scorer(ctx).score(masks)
    batch = deleted_batch(ctx.ids, ctx.positions, masks, ctx.replace_id)
    assert torch.equal(batch[2, ctx.positions[:4]], torch.full((4,), ctx.replace_id))
    assert torch.equal(batch[2, ctx.positions[4:]], ctx.ids[ctx.positions[4:]])
    one_by_one = torch.cat([target_logprob(llama.model, row[None], ctx.target) for row in batch])
    assert torch.allclose(got, one_by_one, atol=1e-4)


def test_each_state_runs_once_across_calls(ctx):
    scorer = _scorer(ctx)
    masks = _masks(ctx.positions.numel(), 5)
    first = scorer.score(torch.cat([masks, masks[:2]]))  # repeated rows in one call
    assert scorer.scored == 5
    again = scorer.score(masks[[4, 0, 3]])  # nothing new
    assert scorer.scored == 5 and torch.equal(again, first[[4, 0, 3]])
    more = _masks(ctx.positions.numel(), 7)  # two new states
    scorer.score(more)
    assert scorer.scored == 7


def test_progress_by_layer_and_stop_keeps_finished_batches(ctx):
    n_layers = len(ctx.loaded.spec.decoder_layers(ctx.loaded.model))
    masks = _masks(ctx.positions.numel(), 10)  # batches of 4, 4, 2
    seen = []
    _scorer(ctx).score(masks, lambda done, total: seen.append((done, total)))
    assert seen[-1] == (10 * n_layers, 10 * n_layers)
    assert len(seen) == 3 * n_layers + 1 and [d for d, _ in seen] == sorted(d for d, _ in seen)

    class Stop(Exception):
        pass

    def stop_in_second_batch(done, total):
        if done >= 4 * n_layers + 4:  # layer 1 of the second batch
            raise Stop

    scorer = _scorer(ctx)
    with pytest.raises(Stop):
        scorer.score(masks, stop_in_second_batch)
    assert scorer.scored == 4  # the first batch stays scored; the stopped one is not half-kept
    scorer.score(masks)
    assert scorer.scored == 10


def test_layer_callback_ignores_other_threads(llama):
    calls = []
    ids = torch.tensor([[1, 2, 3, 4]])
    with each_layer(llama, lambda i, n: calls.append(i)):
        worker = threading.Thread(target=lambda: llama.model(input_ids=ids))
        worker.start()
        worker.join()
        assert calls == []
        llama.model(input_ids=ids)
    assert calls == list(range(len(llama.spec.decoder_layers(llama.model))))
    llama.model(input_ids=ids)  # removed after the block
    assert len(calls) == len(llama.spec.decoder_layers(llama.model))


def test_per_method_times_and_shared_states(ctx):
    rec = evaluate_context(ctx, ["flashtrace-k0", "flashtrace-k1", "attention"], k=5)
    runs = {m: v["deletion_runs"] for m, v in rec["methods"].items()}
    assert runs["flashtrace-k0"] == 6  # the first method runs all k + 1 states
    assert runs["flashtrace-k1"] <= 4 and runs["attention"] <= 4  # "nothing" and "everything" deleted: shared
    assert rec["deletion_s"] == pytest.approx(sum(v["deletion_s"] for v in rec["methods"].values()))
    assert all(v["deletion_s"] >= 0 and v["seconds"] >= 0 for v in rec["methods"].values())


def test_eval_progress_per_method_and_time_parts(llama, tmp_path):
    from flashtrace.evaluate.report import markdown, summarise, time_parts
    from flashtrace.evaluate.runner import run_eval

    steps = []
    examples = [("needle-0000", make_example("needle", 0, length=30))]
    [path] = run_eval(llama, examples, ["flashtrace-k1", "attention"], tmp_path, k=4,
                      progress=lambda *step: steps.append(step))
    for method in ("flashtrace-k1", "attention"):
        mine = [s for s in steps if s[1] == method]
        assert mine[0][:3] == ("needle-0000", method, "attribution")
        assert mine[-1][2] == "deletion" and mine[-1][3] == mine[-1][4]  # ends at 100 %
    record = json.loads(path.read_text())
    parts = time_parts(record)
    assert set(parts) == {"recording", "attribution", "deletion", "other"}
    assert sum(parts.values()) == pytest.approx(record["total_s"])
    assert "Time per example: recording" in markdown(summarise([record]))
    assert time_parts({**record, "methods": {"x": {"seconds": 1.0}}}) == {}  # an old record: no breakdown
