"""A gallery the model writes itself, built from one spec file: the spec is checked before anything runs, each
task's trace holds the model's own response with its generation settings, the gold facts, the right answer and
whether the model gave it; an honest failure's edited trace is written beside it, linked both ways with the
log-probabilities and both answers; a second build keeps what is there."""

import json

import pytest

from flashtrace.analysis.schema import Trace
from flashtrace.cli import main
from flashtrace.evaluate import gallery_spec
from flashtrace.evaluate.gallery_spec import GallerySpecFile, build_from_spec, is_right, load_spec
from flashtrace.store.gallery import list_gallery

PROMPT = "Ann has 3 red pens. Bob has 5 blue pens. The shop opened in 2015. How many pens do Ann and Bob have?"


def _task(called: str, **changes) -> dict:
    return {"name": called, "title": f"Pens ({called})", "description": "A sum with a distractor year.",
            "kind": "word problem", "model": "tiny-llama", "prompt": PROMPT,
            "gold": ["Ann has 3 red pens.", "Bob has 5 blue pens."], "answer": "8", "max_new_tokens": 16, "hops": 1,
            **changes}


def _spec(tmp_path, *tasks) -> object:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({"tasks": list(tasks)}))
    return path


@pytest.mark.parametrize(("change", "problem"), [
    ({"gold": ["Carl has 2 pens."]}, "must occur exactly once in the prompt"),
    ({"edit": {"sentence": "The moon is far."}}, "must occur exactly once in the prompt"),
    ({"hop0": "sideways"}, "hop0 must be one of"),
    ({"surprise": 1}, "Extra inputs are not permitted"),
    ({"name": "Bad Name"}, "String should match pattern"),
])
def test_a_bad_spec_is_refused_naming_the_file_and_the_problem(tmp_path, change, problem):
    path = _spec(tmp_path, _task("pens", **change))
    with pytest.raises(ValueError, match=problem) as refused:
        load_spec(path)
    assert str(path) in str(refused.value)


def test_two_tasks_with_one_name_are_refused(tmp_path):
    with pytest.raises(ValueError, match="task names used twice: pens"):
        load_spec(_spec(tmp_path, _task("pens"), _task("pens")))


def test_the_right_answer_is_the_value_case_commas_and_edge_punctuation_aside(tiny_llama):
    from flashtrace.run.tracing import attribute, prepare

    trace = attribute(prepare(tiny_llama, PROMPT, "3 + 5 = 8.\nAnswer: They have 1,008 pens."), hops=0)
    assert is_right(trace, "1008") and is_right(trace, "1,008.") and not is_right(trace, "8")


def test_each_task_is_the_models_own_response_traced_and_a_failure_gets_its_linked_edit(tmp_path, monkeypatch):
    spec = load_spec(_spec(tmp_path, _task("plain"), _task("failure", edit={"sentence": "The shop opened in 2015."})))
    said = []
    written = build_from_spec(spec, tmp_path / "out", log=said.append)
    assert sorted(p.name for p in written) == ["failure-edited.json", "failure.json", "plain.json"]
    plain = Trace.load(tmp_path / "out" / "plain.json")
    record = plain.extra["gallery"]
    assert record["spec"]["name"] == "plain" and record["right_answer"] == "8" and record["correct"] is False
    assert [plain.prompt[a:b] for a, b in record["gold"]] == ["Ann has 3 red pens.", "Bob has 5 blue pens."]
    assert plain.extra["generation"]["max_new_tokens"] == 16 and plain.extra["generation"]["do_sample"] is False
    assert plain.steps is not None and plain.interventions is not None and "faithfulness" in json.dumps(plain.extra)
    original = Trace.load(tmp_path / "out" / "failure.json")
    edited = Trace.load(tmp_path / "out" / "failure-edited.json")
    assert original.extra["edited_versions"] == ["failure-edited"]
    link = edited.extra["edited_from"]
    assert link["name"] == "failure" and link["edit"] == {"sentence": "The shop opened in 2015."}
    assert {"logprob_before", "logprob_after", "answer_before", "answer_after"} <= set(link)
    assert "2015" not in edited.prompt and "2015" in original.prompt
    assert edited.extra["generation"]["do_sample"] is False  # the new answer is greedy too
    assert said[0].startswith("2 tasks to build (0 already built, kept): at most about ") and "wrong" in said[1]
    monkeypatch.setattr(gallery_spec, "build_task", lambda *a, **k: pytest.fail("a built task was built again"))
    assert build_from_spec(spec, tmp_path / "out", log=said.append) == []
    assert said[-1].startswith("0 tasks to build (2 already built, kept)")
    assert build_from_spec(spec, tmp_path / "out", ["plain"], log=said.append) == []
    assert said[-1].startswith("0 tasks to build (1 already built, kept)")  # only the task asked for counts


def test_a_tasks_predicted_time_counts_its_check_and_interventions_and_doubles_with_an_edit(tiny_llama):
    from flashtrace.engine.estimate import generation_seconds
    from flashtrace.engine.models.generation import generation_ids
    from flashtrace.evaluate.gallery_spec import Task, estimate_seconds

    short, long = Task(**_task("short")), Task(**_task("long", max_new_tokens=256))
    edited = Task(**_task("edited", edit={"sentence": "The shop opened in 2015."}))
    n_prompt = len(generation_ids(tiny_llama, PROMPT, 16, True, short.reasoning_instruction)[1])
    assert estimate_seconds(short, tiny_llama) > generation_seconds(tiny_llama, n_prompt, 16)  # more than writing
    assert estimate_seconds(long, tiny_llama) > estimate_seconds(short, tiny_llama)
    assert estimate_seconds(edited, tiny_llama) == pytest.approx(2 * estimate_seconds(short, tiny_llama), rel=0.05)


def test_the_command_line_needs_an_output_folder_for_a_spec(tmp_path, capsys):
    path = _spec(tmp_path, _task("pens"))
    assert main(["gallery", "--spec", str(path)]) == 2
    assert "--spec needs --out DIR" in capsys.readouterr().err


def test_the_shipped_spec_is_valid_and_covers_the_issues_task_kinds():
    from pathlib import Path

    spec = load_spec(Path(__file__).resolve().parents[2] / "assets" / "gallery_spec.json")
    assert isinstance(spec, GallerySpecFile) and len(spec.tasks) >= 10
    kinds = {t.kind for t in spec.tasks}
    assert {"word problem", "multi-hop", "schedule", "logic", "long document", "variable tracking"} <= kinds
    assert sum(t.edit is not None for t in spec.tasks) >= 2 and spec.tasks[0].model == "qwen2.5-coder-1.5b"


def test_the_committed_build_summary_says_what_its_trace_files_hold():
    """benchmarks/results/gallery_qwen/summary.json: one row per model-written gallery trace, each read from its
    trace file (model, answer, correctness, the edit's answers), and the 1.5B's failure there is proven by its edit."""
    from pathlib import Path

    from flashtrace.evaluate.gallery_spec import value_text

    root = Path(__file__).resolve().parents[2]
    summary = json.loads((root / "benchmarks" / "results" / "gallery_qwen" / "summary.json").read_text())
    written = {f"assets/gallery/{it.name}.json" for it in list_gallery() if it.written}
    assert summary["built"] == len(summary["rows"]) and {r["file"] for r in summary["rows"]} == written
    for row in summary["rows"]:
        trace = Trace.load(root / row["file"])
        assert (trace.model.name, value_text(trace), trace.extra["gallery"]["correct"]) == (
            row["model"], row["answer"], row["correct"])
    boxes = next(r for r in summary["rows"] if r["file"] == "assets/gallery/boxes-edited.json")["edited_from"]
    assert (boxes["answer_before"], boxes["answer_after"]) == ("Yellow", "blue")
