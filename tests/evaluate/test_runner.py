"""Evaluation contexts, the shared deletion set, per-example records, reports and the CLI (tiny model)."""

import json
from pathlib import Path

import pytest
import torch

from flashtrace.engine.attribution.baselines import target_logprob
from flashtrace.cli import main
from flashtrace.evaluate.methods import build_context, get_eval_method, parse_methods
from flashtrace.evaluate.report import markdown, summarise, write_report
from flashtrace.viz.evaluation import write_charts
from flashtrace.evaluate.runner import evaluate_context, run_eval, score_deletions
from flashtrace.evaluate.tasks import make_example
from flashtrace.engine.models import load_model
from flashtrace.engine.models.scoring import scoring_model
from flashtrace.viz.export import image_export_problem

METHODS = ["flashtrace-k0", "flashtrace-k1", "ifr", "attention", "rollout", "ig", "perturbation"]


@pytest.fixture(scope="module")
def llama():
    return load_model("tiny-llama")


@pytest.fixture(scope="module")
def ctx(llama):
    return build_context(llama, make_example("needle", 1, length=30), ig_steps=2, batch_size=8)


def test_context_gold_and_segments(ctx):
    seq = ctx.prepared.sequence
    assert all(seq.tokens[p].role == "prompt" for p in ctx.positions.tolist())
    gold_text = "".join(seq.tokens[p].text for p, g in zip(ctx.positions.tolist(), ctx.gold.tolist()) if g)
    assert ctx.example.gold_texts()[0].split(":")[0] in gold_text
    assert seq.tokens[ctx.target[0]].role == "answer" and ctx.target[1] == len(seq)
    segs = ctx.segments()
    flat = sorted(p for s in segs for p in s)
    assert flat == ctx.positions.tolist() and len(segs) > 3  # a partition of the prompt into sentences


def test_score_deletions_matches_manual_and_dedupes(ctx, llama):
    p = ctx.positions.numel()
    masks = torch.zeros(3, p, dtype=torch.bool)
    masks[1, :5] = True
    masks[2, :5] = True  # duplicate of row 1
    got = score_deletions(ctx, masks)
    manual = ctx.ids.clone()
    manual[ctx.positions[:5]] = ctx.replace_id
    model = scoring_model(llama, ctx.score_dtype)  # the precision the run chose (tests/evaluate/test_score_precision)
    want = target_logprob(model, torch.stack([ctx.ids, manual]), ctx.target)
    assert torch.allclose(got, want[[0, 1, 1]], atol=1e-5)


def test_evaluate_context_shared_deletion_set(ctx):
    rec = evaluate_context(ctx, METHODS, k=5)
    s0 = {m: v["s"][0] for m, v in rec["methods"].items()}
    sk = {m: v["s"][-1] for m, v in rec["methods"].items()}
    assert len(set(s0.values())) == 1 and len(set(sk.values())) == 1  # same endpoints for every method
    for v in rec["methods"].values():
        assert len(v["n"]) == 6 and len(v["scores"]) == rec["n_prompt"]
        assert all(a >= b for a, b in zip(v["n"], v["n"][1:]))
        assert 0 <= v["rise"] <= 1 and 0 <= v["mas"] <= 1 and 0 <= v["recovery"] <= 1
        assert v["d"][0] == pytest.approx(1.0) and v["d"][-1] == pytest.approx(0.0)
    json.dumps(rec)


def test_flashtrace_hops_differ_from_hop0(ctx):
    k0, k2 = get_eval_method("flashtrace-k0")(ctx), get_eval_method("flashtrace-k2")(ctx)
    p = ctx.positions
    assert k2[p].sum() >= k0[p].sum() - 1e-6  # hops only add prompt mass
    assert not torch.allclose(k0[p], k2[p])


def test_flashtrace_variants_use_their_settings(ctx):
    from flashtrace.run.tracing import attribute

    def scores(**kw):
        return torch.tensor(attribute(ctx.prepared, target=ctx.target, hops=1, **kw).scores.final)

    assert torch.equal(get_eval_method("flashtrace-k1")(ctx), scores(stop_tokens="paper"))
    assert torch.equal(get_eval_method("flashtrace-k1-gen")(ctx), scores(hop0="generation", stop_tokens="paper"))
    assert torch.equal(get_eval_method("flashtrace-k1-punct")(ctx), scores(stop_tokens="punctuation"))
    assert torch.equal(get_eval_method("flashtrace-k1-gen-nostop")(ctx), scores(stop_tokens="none", hop0="generation"))
    assert not torch.equal(get_eval_method("flashtrace-k1-gen")(ctx), get_eval_method("flashtrace-k1")(ctx))


def test_parse_methods():
    assert parse_methods("flashtrace,ifr", [0, 3]) == ["flashtrace-k0", "flashtrace-k3", "ifr"]
    assert parse_methods("ig,ig,attention") == ["ig", "attention"]
    assert parse_methods("flashtrace-k2-nostop") == ["flashtrace-k2-nostop"]
    assert parse_methods("flashtrace-k1-gen,flashtrace-k0-punct,flashtrace-k2-gen-nostop") == [
        "flashtrace-k1-gen", "flashtrace-k0-punct", "flashtrace-k2-gen-nostop"]
    with pytest.raises(ValueError, match="unknown evaluation method"):
        parse_methods("flashtrace-k1-nostop-gen")
    with pytest.raises(ValueError, match="unknown evaluation method"):
        parse_methods("lrp")
    with pytest.raises(ValueError):
        parse_methods(" , ")


@pytest.mark.slow
def test_run_eval_resume_and_report(llama, tmp_path):
    examples = [(f"{t}-0000", make_example(t, 0, length=50)) for t in ("needle", "arithmetic")]
    seen = []
    run_eval(llama, examples, ["flashtrace-k1", "attention"], tmp_path, k=4, ig_steps=2,
             on_example=lambda i, r: seen.append(bool(r)))
    run_eval(llama, examples, ["flashtrace-k1"], tmp_path, k=4, on_example=lambda i, r: seen.append(bool(r)))
    assert seen == [True, True, False, False]  # the second run kept both examples
    before = json.loads((tmp_path / "examples" / "needle-0000.json").read_text())
    run_eval(llama, examples[:1], ["flashtrace-k1", "flashtrace-k1-nostop"], tmp_path, k=4,
             on_example=lambda i, r: seen.append(sorted(r["methods"]) if r else None))
    assert seen[-1] == ["attention", "flashtrace-k1", "flashtrace-k1-nostop"]  # extended, not recomputed
    after = json.loads((tmp_path / "examples" / "needle-0000.json").read_text())
    assert after["methods"]["attention"] == before["methods"]["attention"]
    assert after["total_s"] > before["total_s"]
    summary = write_report(tmp_path, {"model": "tiny-llama"})
    write_charts(summary, tmp_path)
    assert set(summary["tasks"]) == {"needle", "arithmetic"}
    assert (tmp_path / "report.html").stat().st_size > 1000
    pngs = image_export_problem() is None  # PNGs need kaleido and a Chromium
    assert (tmp_path / "metrics.png").exists() == pngs and (tmp_path / "deletion_curves.png").exists() == pngs
    assert "| flashtrace-k1 | 1 |" in (tmp_path / "summary.md").read_text()
    assert "prompt_mass_vs_k0" not in summary["tasks"]["needle"]["methods"]["attention"]
    run_eval(llama, examples[:1], ["attention"], tmp_path, k=5, on_example=lambda i, r: seen.append(sorted(r["methods"])))
    assert seen[-1] == ["attention"]  # another k: recomputed from scratch
    longer = [("needle-0000", make_example("needle", 0, length=80))]  # same id, another example
    run_eval(llama, longer, ["attention"], tmp_path, k=5, on_example=lambda i, r: seen.append(sorted(r["methods"]) if r else None))
    assert seen[-1] == ["attention"]  # recomputed, not kept
    assert json.loads((tmp_path / "examples" / "needle-0000.json").read_text())["prompt"] == longer[0][1].prompt
    answer_target = json.loads((tmp_path / "examples" / "needle-0000.json").read_text())["target"]
    run_eval(llama, longer, ["attention"], tmp_path, k=5, target="response",
             on_example=lambda i, r: seen.append(r.get("target") if r else None))
    assert seen[-1] is not None and seen[-1] != answer_target  # recomputed for the new target, not kept


def test_a_method_refusing_one_example_is_recorded_and_the_run_goes_on(llama, tmp_path):
    """The punctuation stop preset leaves an answer of only punctuation no target token: that method is recorded
    as refused for that example, every other method and example still runs, a resumed run does not retry it, and
    the report says so (a refusal used to abort the whole evaluation)."""
    from dataclasses import replace

    plain = make_example("needle", 1, length=30)
    marks = replace(plain, response=plain.response.rsplit("Answer:", 1)[0] + "Answer: ?!", answer="?!")
    examples = [("needle-marks", marks), ("needle-plain", plain)]
    methods = ["flashtrace-k0-punct", "flashtrace-k0"]
    records = {}
    run_eval(llama, examples, methods, tmp_path, k=0, on_example=lambda i, r: records.setdefault(i, r))
    assert set(records["needle-marks"]["methods"]) == {"flashtrace-k0"}
    assert "only stop tokens" in records["needle-marks"]["refused"]["flashtrace-k0-punct"]
    assert set(records["needle-plain"]["methods"]) == set(methods) and "refused" not in records["needle-plain"]
    again = []
    run_eval(llama, examples, methods, tmp_path, k=0, on_example=lambda i, r: again.append(r))
    assert again == [{}, {}]  # nothing left to run: the refusal is kept, not retried
    summary = write_report(tmp_path)
    refused = summary["tasks"]["needle"]["refused"]
    assert refused == {"flashtrace-k0-punct": {"n": 1, "examples": ["needle-marks"],
                                               "message": records["needle-marks"]["refused"]["flashtrace-k0-punct"]}}
    assert summary["tasks"]["needle"]["methods"]["flashtrace-k0-punct"]["recovery"]["n"] == 1
    assert "flashtrace-k0-punct refused 1 of 2 examples (needle-marks" in markdown(summary)


def test_summarise_mean_std():
    def rec(task, rise):
        return {"task": task, "k": 2, "n_tokens": 10, "n_prompt": 25, "n_gold": 6, "total_s": 1.0, "deletion_s": 0.5,
                "methods": {"ig": {"rise": rise, "mas": 0.5, "recovery": None, "seconds": 2.0, "n": [1, rise, 0]}}}
    s = summarise([rec("a", 0.2), rec("a", 0.4), rec("b", 0.1)])
    ig = s["tasks"]["a"]["methods"]["ig"]
    assert ig["rise"]["mean"] == pytest.approx(0.3) and ig["rise"]["std"] == pytest.approx(0.1414, abs=1e-4)
    assert ig["recovery"]["n"] == 0 and s["tasks"]["a"]["mean_deletion_curve"]["ig"] == pytest.approx([1, 0.3, 0])
    assert s["tasks"]["a"]["recovery_cap"]["mean"] == pytest.approx(0.5)  # ceil(2.5) = 3 of 6 gold tokens
    assert s["tasks"]["a"]["recovery_chance"]["mean"] == pytest.approx(3 / 25)  # 3 of 25 prompt tokens drawn
    table = markdown(s)
    assert "0.300 ± 0.141" in table and "| ig |  |" in table and "–" in table
    assert "best achievable 0.50 ± 0.00, random ranking 0.12 ± 0.00" in table


def test_summarise_variants_and_missing_methods():
    def rec(methods):
        return {"task": "t", "k": 1, "n_tokens": 10, "n_prompt": 10, "n_gold": 0, "methods": {
            m: {"rise": 0.5, "mas": 0.5, "recovery": None, "seconds": 1.0, "n": [1, n1], "scores": [mass, 0.0]}
            for m, (n1, mass) in methods.items()}}
    s = summarise([rec({"flashtrace-k0": (0.2, 1.0), "flashtrace-k0-nostop": (0.0, 2.0), "flashtrace-k2-nostop": (0.0, 5.0)}),
                   rec({"flashtrace-k0": (0.4, 1.0)})])
    methods = s["tasks"]["t"]["methods"]
    assert [methods[m]["hops"] for m in methods] == [0, 0, 2]
    assert methods["flashtrace-k2-nostop"]["prompt_mass_vs_k0"]["mean"] == pytest.approx(2.5)  # vs k0-nostop
    assert s["tasks"]["t"]["mean_deletion_curve"]["flashtrace-k0"] == pytest.approx([1, 0.3])
    assert s["tasks"]["t"]["mean_deletion_curve"]["flashtrace-k2-nostop"] == pytest.approx([1, 0.0])  # 1 example
    assert "K2-NOSTOP 2.50" in markdown(s)


@pytest.mark.slow
def test_cli_eval(tmp_path, capsys):
    out = tmp_path / "ev"
    code = main(["eval", "--model", "tiny-llama", "--task", "multihop,vartrack", "--n", "1", "--length", "40",
                 "--methods", "flashtrace,perturbation", "--hops", "0,1", "--k", "5", "--out", str(out),
                 "--no-progress", "--no-plots"])
    assert code == 0
    assert sorted(p.name for p in (out / "examples").iterdir()) == ["multihop-0000.json", "vartrack-0000.json"]
    assert "flashtrace-k1" in capsys.readouterr().out
    assert json.loads((out / "settings.json").read_text())["k"] == 5
    assert main(["eval", "--model", "tiny-llama", "--task", "vartrack", "--n", "1", "--length", "40",
                 "--methods", "attention", "--k", "5", "--out", str(out), "--no-progress", "--no-plots"]) == 0
    settings = json.loads((out / "settings.json").read_text())  # the extending run lists every method and task
    assert settings["methods"] == "flashtrace-k0,flashtrace-k1,perturbation,attention"
    assert settings["source"] == "multihop,vartrack"
    assert "attention" in json.loads((out / "examples" / "vartrack-0000.json").read_text())["methods"]
    assert main(["eval", "--report-only", "--out", str(out), "--no-plots"]) == 0
    assert main(["eval", "--task", "nope", "--out", str(out)]) == 2


@pytest.mark.slow
def test_cli_eval_jsonl(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps({"prompt": "The key is 4417. The sky is blue. What is the key?",
                                "response": "The key is 4417.\nAnswer: 4417", "gold_text": ["The key is 4417."]}))
    out = tmp_path / "ev"
    assert main(["eval", "--model", "tiny-llama", "--jsonl", str(path), "--methods", "attention,flashtrace-k1",
                 "--k", "4", "--out", str(out), "--no-progress", "--no-plots"]) == 0
    rec = json.loads((out / "examples" / "jsonl-0000.json").read_text())
    assert rec["n_gold"] > 0 and set(rec["methods"]) == {"attention", "flashtrace-k1"}


def test_find_eval_folders_and_gold_token_mask(tmp_path):
    from flashtrace.evaluate.report import find_eval_folders, gold_token_mask

    for name in ("a", "nested/b"):
        (tmp_path / name / "examples").mkdir(parents=True)
        (tmp_path / name / "examples" / "x-0000.json").write_text("{}")
    (tmp_path / "empty" / "examples").mkdir(parents=True)
    assert find_eval_folders(tmp_path) == [tmp_path / "a", tmp_path / "nested" / "b"]
    assert find_eval_folders(tmp_path / "missing") == []
    rec = {"prompt": "ab cd ef", "tokens": ["ab", " cd", " ef"], "gold": [[3, 5]]}
    assert gold_token_mask(rec) == [False, True, False]
    assert gold_token_mask({**rec, "gold_tokens": [True, False, False]}) == [True, False, False]  # stored wins
    assert gold_token_mask({**rec, "tokens": ["ab", " c"]}) is None  # tokens do not rebuild the prompt
    assert gold_token_mask({**rec, "gold": []}) is None


def test_report_files_are_replaced_atomically(tmp_path, monkeypatch):
    """A write that fails at the last step leaves the previous summary whole and no temporary file
    behind (issue 18 item 9: fileio.atomic_write_text instead of plain or hand-rolled writes)."""
    import shutil

    from flashtrace.base import fileio

    source = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "eval_smollm2" / "examples"
    (tmp_path / "examples").mkdir()
    shutil.copy(source / "arithmetic-0000.json", tmp_path / "examples")
    write_report(tmp_path, {"model": "smollm2-135m"})
    before = {name: (tmp_path / name).read_text() for name in ("summary.json", "summary.md")}

    def fail(*_args):
        raise OSError("disk full")

    monkeypatch.setattr(fileio.os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_report(tmp_path, {"model": "another"})
    assert {name: (tmp_path / name).read_text() for name in before} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["examples", "summary.json", "summary.md"]


def test_example_records_are_replaced_atomically(tmp_path, monkeypatch):
    """The runner's per-example write extends a record in one replace: a write that fails at the last step
    leaves the previous record whole and no temporary file (issue 18 item 9, `runner._write`)."""
    from flashtrace.base import fileio
    from flashtrace.evaluate import runner

    path = tmp_path / "needle-0000.json"
    previous = {"id": "needle-0000", "methods": {"attention": {"rise": 0.5}}, "total_s": 1.0, "deletion_s": 0.5}
    runner._write(path, dict(previous), None)
    record = {"id": "needle-0000", "methods": {"ifr": {"rise": 0.25}}, "total_s": 2.0, "deletion_s": 1.0}
    monkeypatch.setattr(fileio.os, "replace", lambda *_: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        runner._write(path, dict(record), previous)
    assert json.loads(path.read_text()) == previous and [p.name for p in tmp_path.iterdir()] == [path.name]
    monkeypatch.undo()
    runner._write(path, dict(record), previous)
    assert json.loads(path.read_text()) == {"id": "needle-0000", "methods": {"attention": {"rise": 0.5}, "ifr": {"rise": 0.25}},
                                            "total_s": 3.0, "deletion_s": 1.5}


def test_a_named_pipe_in_an_evaluation_folder_is_passed_over_not_waited_on(tmp_path):
    """Issue 48 L2: a FIFO in examples/ (or as settings.json) hung the Evaluation page."""
    import os

    from flashtrace.evaluate.report import load_records, load_settings

    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "a.json").write_text('{"id": "a"}')
    os.mkfifo(tmp_path / "examples" / "b.json")
    os.mkfifo(tmp_path / "settings.json")
    assert load_records(tmp_path) == [{"id": "a"}]  # returns at once: the pipe has no writer
    assert load_settings(tmp_path) == {}


def test_an_extending_run_lists_only_the_methods_the_folders_records_hold(tmp_path):
    """A settings.json left by a run whose records for a method were never written (or were removed) used to carry
    that method into the next run's listing; now a method is listed only when a record holds it, or this run adds
    it."""
    import argparse

    from flashtrace.cli.commands.eval import _settings

    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "needle-0000.json").write_text(json.dumps({"id": "needle-0000", "methods": {"ifr": {}}}))
    (tmp_path / "settings.json").write_text(json.dumps({"methods": "ifr,attention", "source": "needle"}))
    args = argparse.Namespace(ray="127.0.0.1:1", dtype="float32", score_dtype="float32", num_cpus_per_worker=1,
                              num_gpus_per_worker=0, workers=1, model="tiny-llama", n=1, length=0, seed=0, k=0,
                              ig_steps=16, target="value", jsonl=None, task="needle", no_resume=False, out=tmp_path)
    settings = _settings(args, ["flashtrace-k1"], None)
    assert settings["methods"] == "ifr,flashtrace-k1" and settings["source"] == "needle"


def test_an_extended_folder_lists_the_tasks_it_holds_not_all(tmp_path):
    """A folder first run with --task all (four tasks then) and extended with one task lists its tasks by name:
    'all' would now mean six tasks, and 'all,needle' says nothing."""
    import argparse

    from flashtrace.cli.commands.eval import _settings
    from flashtrace.evaluate.tasks import TASKS

    (tmp_path / "examples").mkdir()
    for task in ("needle", "arithmetic"):
        (tmp_path / "examples" / f"{task}-0000.json").write_text(
            json.dumps({"id": f"{task}-0000", "task": task, "methods": {"ifr": {}}}))
    (tmp_path / "settings.json").write_text(json.dumps({"methods": "ifr", "source": "all"}))
    args = argparse.Namespace(ray="127.0.0.1:1", dtype="float32", score_dtype="float32", num_cpus_per_worker=1,
                              num_gpus_per_worker=0, workers=1, model="tiny-llama", n=1, length=0, seed=0, k=0,
                              ig_steps=16, target="value", jsonl=None, task="passage", no_resume=False, out=tmp_path)
    assert _settings(args, ["ifr"], None)["source"] == "needle,arithmetic,passage"
    args.task, args.out = "all", tmp_path / "fresh"
    assert _settings(args, ["ifr"], None)["source"] == ",".join(TASKS)


def test_a_recovery_only_folder_is_extended_on_a_machine_that_would_score_in_another_precision(tmp_path):
    """With k = 0 no deletion curve is scored, so a record written where float32 scoring was chosen is kept on a
    machine that picks bfloat16 (AMX): extending a committed folder there computed all its examples again."""
    from flashtrace.evaluate.runner import pending
    from flashtrace.evaluate.tasks import make_example

    example = make_example("needle", 0)
    (tmp_path / "examples").mkdir()
    record = {"k": 0, "prompt": example.prompt, "response": example.response, "target_spec": "answer",
              "score_dtype": "float32", "methods": {"ifr": {}}}
    (tmp_path / "examples" / "needle-0000.json").write_text(json.dumps(record))
    examples = [("needle-0000", example)]
    assert pending(examples, ["ifr", "attention"], tmp_path, k=0, score_dtype="bfloat16") == [
        ("needle-0000", example, ["attention"])]
    record["k"] = 20  # deletion curves: another precision gives other numbers, so everything runs again
    (tmp_path / "examples" / "needle-0000.json").write_text(json.dumps(record))
    assert pending(examples, ["ifr", "attention"], tmp_path, k=20, score_dtype="bfloat16") == [
        ("needle-0000", example, ["ifr", "attention"])]
