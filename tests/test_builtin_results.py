"""The built-in models' published numbers come from their committed benchmark files: the README's models table
and docs/benchmarks.md quote what `benchmarks/results/*.json` hold, and `make app` prepares the model the word
problem benchmark found right."""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def _json(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def _flashtrace_step(model: str) -> float:
    rows = _json(f"generation_speed_{model}.json")["rows"]
    return min(r["step_s"] for r in rows if r["mode"] == "flashtrace generate")


def test_the_readme_models_table_quotes_the_committed_generation_speeds():
    readme = (ROOT / "README.md").read_text()
    for model in ("qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b", "smollm2-135m"):
        row = next(line for line in readme.splitlines() if line.startswith(f"| `{model}` |"))
        quoted = float(re.search(r"\| ([\d.]+) s per (generated )?token", row).group(1))
        assert abs(quoted - _flashtrace_step(model)) < 0.01, (model, quoted, _flashtrace_step(model))


def test_the_preparing_table_quotes_the_committed_peak_memory_within_its_bound():
    runs = {r["model"]: r for r in _json("prepare_models.json")["runs"]}
    text = (ROOT / "docs" / "benchmarks.md").read_text()
    for model, run in runs.items():
        assert run["peak_rss_bytes"] <= run["bound_bytes"] == run["converted_bytes"] + 10**9
        assert f"| {model} |" in text and f"**{run['peak_rss_bytes'] / 1e9:.2f} GB**" in text


def test_the_trace_cost_table_quotes_the_committed_cells():
    text = (ROOT / "docs" / "benchmarks.md").read_text()
    for name in ("speed_qwen15_1000.json", "speed_qwen15_2048.json"):
        for cell in _json(name)["cells"]:
            if cell["mode"] == "flashtrace":
                assert f"{cell['attribution_s']:.2f}" in text, (name, cell["threads"])


def test_make_app_prepares_a_model_the_word_problem_benchmark_found_right():
    makefile = (ROOT / "Makefile").read_text()
    chosen = re.search(r"^APP_MODEL \?= (\S+)$", makefile, re.M).group(1)
    summary = {s["model"]: s for s in _json("readme_problem.json")["summary"]}
    assert summary[chosen]["readme_problem_right"]
    assert summary[chosen]["right"] == max(s["right"] for s in summary.values())
