"""The committed runs on the models' own reasoning (issue 46) are what their files say: each summary.json and
summary.md is rebuilt from the folder's per-example records and settings and compared, and each run records its
command, machine, load and times, and every example its written response."""

import json
from pathlib import Path

import pytest

from flashtrace.evaluate.report import load_records, load_settings, markdown, summarise

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
RUNS = sorted(p.parent for p in RESULTS.glob("eval_*/run.json"))


def test_there_is_a_committed_run_on_a_models_own_reasoning():
    assert RUNS, "no benchmarks/results/eval_qwen*/run.json"


@pytest.mark.parametrize("folder", RUNS, ids=[p.name for p in RUNS])
def test_a_committed_summary_is_rebuilt_from_its_records(folder):
    records, settings = load_records(folder), load_settings(folder)
    rebuilt = json.loads(json.dumps(summarise(records, settings)))  # as written: tuples become lists
    assert rebuilt == json.loads((folder / "summary.json").read_text())
    assert markdown(rebuilt) == (folder / "summary.md").read_text()
    run = json.loads((folder / "run.json").read_text())
    assert {"command", "machine", "load", "times"} <= set(run) and f"--out benchmarks/results/{folder.name}" in run["command"]
    protocol = settings["protocol"]
    assert protocol["written"] == len(list((folder / "responses").glob("*.json")))
    assert protocol["kept"] == len(records) and all(r["meta"]["protocol"]["name"] == protocol["name"] for r in records)
    for record in records:  # the response each example was traced on is the one the writer wrote
        written = json.loads((folder / "responses" / f"{record['id']}.json").read_text())["written"]
        assert record["response"] == written["response"] and record["meta"]["protocol"]["correct"] == written["correct"]


def test_the_side_by_side_table_is_rebuilt_from_the_committed_runs_and_is_the_one_in_the_docs():
    """benchmarks/eval_side_by_side.py recomputes every number from the runs' records: the committed JSON and
    Markdown are what it makes now, and docs/evaluation.md shows that Markdown between its markers."""
    root = RESULTS.parents[1]
    script = _script("eval_side_by_side")
    table = json.loads(json.dumps(script.build()))
    assert table == json.loads((RESULTS / "side_by_side.json").read_text())
    text = script.markdown(table) + "\n\n**Which tokens hop 0 explains**\n\n" + script.spans_markdown(table)
    assert text + "\n" == (RESULTS / "side_by_side.md").read_text()
    doc = (root / "docs" / "evaluation.md").read_text()
    shown = doc.split("<!-- side-by-side:start -->\n", 1)[1].split("<!-- side-by-side:end -->", 1)[0]
    assert shown.strip() == text.strip()
    assert {run["folder"].rsplit("/", 1)[1] for run in table["runs"]} >= {"eval_smollm2_paper", "eval_qwen05_own_recovery"}


INTERVENTION_RUNS = sorted(RESULTS.glob("intervention_eval*.json"))


def _script(name: str):
    """A script under benchmarks/, loaded as a module (benchmarks/ is no package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, RESULTS.parent / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", INTERVENTION_RUNS, ids=[p.name for p in INTERVENTION_RUNS])
def test_a_committed_intervention_summary_is_rebuilt_from_its_examples(path):
    """benchmarks/intervention_eval.py's summary (the docs' tables) is what its per-example rows give now; a run on a
    model's own responses names the eval folder they came from, and each example's right/wrong is that response's."""
    ie = _script("intervention_eval")
    data = json.loads(path.read_text())
    assert json.loads(json.dumps(ie.summarise(data["examples"], data["settings"]["tasks"]))) == data["summary"]
    folder = data["settings"].get("responses")
    if folder:
        for example in data["examples"]:
            task, _, seed = example["id"].rpartition("-")
            written = json.loads((RESULTS.parents[1] / folder / "responses" / f"{task}-{int(seed):04d}.json").read_text())
            assert example["correct"] == written["written"]["correct"], example["id"]


def test_the_docs_show_the_tables_of_the_committed_intervention_run_on_the_15bs_own_reasoning():
    """docs/evaluation.md's tables of the 1.5B's own-reasoning interventions are the script's report of the
    committed JSON (rebuilt from its examples), not numbers typed by hand."""
    ie = _script("intervention_eval")
    data = json.loads((RESULTS / "intervention_eval_qwen15_own.json").read_text())
    doc = (RESULTS.parents[1] / "docs" / "evaluation.md").read_text()
    shown = doc.split("<!-- ie-own:start -->\n", 1)[1].split("\n<!-- ie-own:end -->", 1)[0]
    assert shown == ie.report(ie.summarise(data["examples"], data["settings"]["tasks"]))


def test_the_docs_position_baseline_table_for_smollm2_is_the_scripts():
    """The SmolLM2 section's table of the hop graph against step position is the script's, from the committed JSON."""
    ie = _script("intervention_eval")
    data = json.loads((RESULTS / "intervention_eval.json").read_text())
    doc = (RESULTS.parents[1] / "docs" / "evaluation.md").read_text()
    table = ie.recency_table(ie.summarise(data["examples"], data["settings"]["tasks"]))
    assert "\n".join("  " + line for line in table.splitlines()) in doc


def test_the_readme_short_table_is_the_side_by_side_scripts():
    """The README's "Results in short" table is `readme_markdown` of the committed side-by-side JSON, not typed."""
    root = RESULTS.parents[1]
    script = _script("eval_side_by_side")
    readme = (root / "README.md").read_text()
    shown = readme.split("<!-- side-by-side-short:start -->\n", 1)[1].split("<!-- side-by-side-short:end -->", 1)[0]
    table = json.loads((RESULTS / "side_by_side.json").read_text())
    assert [line.strip() for line in shown.strip().splitlines()] == script.readme_markdown(table).splitlines()
