"""Benchmark tooling: the busy-machine rule, row sampling and extrapolation, table rendering (no timing)."""

from __future__ import annotations

import pytest

from flashtrace.run.bench.cell import extrapolate_rows, flashtrace_target, spread_positions
from flashtrace.run.bench.sweep import busy_threshold, load_warning, markdown_report, wait_for_quiet


@pytest.mark.parametrize("cpus, threads, limit", [(2, 2, 0.5), (2, 1, 1.0), (16, 2, 7.5), (1, 4, 0.5)])
def test_busy_threshold(cpus, threads, limit):
    assert busy_threshold(cpus, threads) == limit


def test_load_warning_one_line_only_when_busy():
    assert load_warning(0.5, 2, 2) is None
    text = load_warning(0.51, 2, 2, "flashtrace N=512+1536")
    assert text is not None and "\n" not in text
    assert "0.51" in text and "0.50" in text and "flashtrace N=512+1536" in text
    assert load_warning(0.9, 2, 1) is None and load_warning(1.1, 2, 1) is not None


def test_wait_for_quiet_stops_when_quiet_and_at_the_limit():
    loads = iter([2.0, 1.0, 0.4, 0.1])
    slept = []
    waited = wait_for_quiet(0.5, 60, getload=lambda: (next(loads),), sleep=slept.append, step=5)
    assert waited == 10 and slept == [5, 5]
    slept.clear()
    assert wait_for_quiet(0.5, 12, getload=lambda: (3.0,), sleep=slept.append, step=5) == 12
    assert slept == [5, 5, 2]
    assert wait_for_quiet(0.5, 0, getload=lambda: (3.0,), sleep=slept.append) == 0


def test_spread_positions():
    assert spread_positions(512, 1000, 5) == [512, 762, 1012, 1261, 1511]
    assert spread_positions(10, 3, 8) == [10, 11, 12]
    assert spread_positions(0, 9, 1) == [4]
    pos = spread_positions(100, 5000, 24)
    assert pos[0] == 100 and pos[-1] == 5099 and len(set(pos)) == 24


def test_extrapolation_exact_for_linear_cost():
    m, start = 5000, 512
    cost = lambda p: 0.01 + 1e-4 * p  # noqa: E731 - per-row cost linear in position
    exact = sum(cost(p) for p in range(start, start + m))
    sample = [cost(p) for p in spread_positions(start, m, 24)]
    assert extrapolate_rows(sample, m) == pytest.approx(exact, rel=1e-4)
    assert extrapolate_rows([1.0, 3.0], 10) == 20.0


def _cell(mode, threads, busy=False, **extra):
    base = dict(mode=mode, n_prompt=512, n_response=1536, threads=threads, hops=1, peak_rss_bytes=2**30,
                load_before=[0.8 if busy else 0.1, 0.2, 0.3], load_after=[1.9, 0.5, 0.3], load_busy=busy)
    return {**base, **extra}


def test_markdown_report_sections_ratio_and_load():
    cells = [_cell("forward", 2, forward_s=4.0, total_s=4.0),
             _cell("flashtrace", 2, record_s=3.0, attribution_s=1.0, total_s=4.0),
             _cell("ifr-rowwise", 2, record_s=3.0, attribution_s=300.0, total_s=303.0, extrapolated=True),
             _cell("forward", 1, busy=True, forward_s=8.0, total_s=8.0),
             _cell("flashtrace", 1, record_s=6.0, attribution_s=3.0, total_s=9.0)]
    text = markdown_report(cells, cpus=2)
    two, one = text.split("### 1 thread per cell")
    assert two.startswith("### 2 threads per cell (2 CPUs)")
    assert "0.10–0.10" in two and "0 of 3 cells started on a busy machine." in two
    assert "| 512 | 1536 | 2048 | 4.00 | 4.00 (3.00 + 1.00) | **0.25x** | 1.00x | – | 300.0* | – | 300x |" in two
    assert "| 0.10 → 1.90 |" in two
    assert "1 of 2 cells started on a busy machine (marked !)" in one
    assert "**0.38x**" in one and "0.80 → 1.90 ! |" in one
    assert "Target: the whole response (hop 0 and later hops alike). Each time is one run." in two


def test_the_target_protocol_is_stated_with_the_table():
    cells = [{**_cell("forward", 2, forward_s=4.0, total_s=4.0), "repeats": 3, "target_tokens": 8},
             {**_cell("flashtrace", 2, record_s=3.0, attribution_s=1.0, total_s=4.0), "repeats": 3, "target_tokens": 8}]
    text = markdown_report(cells, cpus=2)
    assert "Target: the last 8 tokens (hop 0; later hops re-attribute the response before them)." in text
    assert "medians of 3 runs in the cell's process" in text
    assert "IFR attributes those T rows only (no hops)" in text


def test_ifr_ratios_below_one_keep_two_significant_digits():
    cells = [_cell("forward", 2, forward_s=4.0, total_s=4.0),
             _cell("flashtrace", 2, record_s=3.0, attribution_s=0.65, total_s=3.65),
             _cell("ifr", 2, record_s=3.0, attribution_s=0.1, total_s=3.1),
             _cell("ifr-rowwise", 2, record_s=3.0, attribution_s=2.2, total_s=5.2)]
    text = markdown_report(cells, cpus=2)
    assert "| 0.15x | 3.4x |" in text  # not "0x" and "3x"
    assert "IFR attributes those T rows only" not in text  # whole-response tables make no such caveat


def test_flashtrace_target_splits_the_answer_from_the_reasoning():
    weights, g = flashtrace_target(n_prompt=4, n=12, n_target=3)
    assert weights.tolist() == [0] * 9 + [1] * 3
    assert g.tolist() == [False] * 4 + [True] * 5 + [False] * 3
    weights, g = flashtrace_target(n_prompt=4, n=12, n_target=0)  # the whole response, twice
    assert weights.tolist() == [0] * 4 + [1] * 8 and g.tolist() == [False] * 4 + [True] * 8


def test_bench_refuses_a_target_as_long_as_the_response(tmp_path, capsys):
    from flashtrace.cli import main

    code = main(["bench", "--response-lengths", "8", "--target-tokens", "8", "--out", str(tmp_path)])
    assert code == 2 and "leaves no response before the target" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # refused before any cell ran


def test_markdown_report_keeps_errors_readable():
    cells = [_cell("forward", 1, forward_s=1.0, total_s=1.0), {**_cell("flashtrace", 1), "error": "MemoryError"}]
    row = [line for line in markdown_report(cells, cpus=2).splitlines() if line.startswith("| 512")][0]
    assert row.count("–") >= 5 and "MemoryError" not in row


def _script(name):
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_paper_protocol_speedups_and_table():
    pp = _script("paper_protocol")
    cells = pp.build_cells("smollm2-135m", 512, [5000], 24, 2, None)
    assert [(c["mode"], c["hops"], c.get("head_values", False)) for c in cells] == [
        ("forward", 0, False), ("flashtrace", 0, False), ("flashtrace", 1, False), ("ifr-rowwise", 0, False),
        ("ifr-rowwise", 0, True)]
    assert cells[3]["sample_rows"] == cells[4]["sample_rows"] == 24 and all(c["threads"] == 2 for c in cells)
    load = dict(load_before=[0.1, 0, 0], load_after=[1.0, 0, 0], load_busy=False, peak_rss_bytes=2**31)
    common = dict(n_prompt=512, n_response=5000, **load)
    results = [dict(common, mode="forward", forward_s=10.0, total_s=10.0),
               dict(common, mode="flashtrace", hops=0, record_s=9.0, attribution_s=2.0, total_s=11.0),
               dict(common, mode="flashtrace", hops=1, record_s=9.0, attribution_s=5.0, total_s=14.0),
               dict(common, mode="ifr-rowwise", record_s=9.0, attribution_s=40.0, total_s=49.0, rows_timed=24,
                    row_seconds=[0.005] * 24),
               dict(common, mode="ifr-rowwise", head_values=True, record_s=9.0, attribution_s=600.0, total_s=609.0,
                    rows_timed=24, row_seconds=[0.05] + [0.1] * 22 + [0.2])]
    (row,) = pp.summarise(results)
    assert row["speedup_attribution"] == 300.0 and row["speedup_total"] == pytest.approx(609 / 11)  # the paper's IFR
    assert row["speedup_attribution_value_kernel"] == 20.0 and row["speedup_total_value_kernel"] == pytest.approx(49 / 11)
    meta = dict(model="smollm2-135m", dtype=None, threads=2, cpus=2, prompt=512, load_min=0.1, load_max=0.1,
                busy_cells=0, n_cells=5, memory_check={"n_tokens": 5512, "predicted_gib": 2.4, "available_gib": 20.0})
    text = pp.markdown([row], meta)
    assert ("| 5,000 | 5,512 | 10.00 | 11.00 (9.00 + 2.00) | 14.00 (9.00 + 5.00) | 24, 0.050 → 0.200 "
            "| 609.0 (9.00 + 600.0*) | **300.0×** | 55.4× | 49.0 (9.00 + 40.0*) | 20.0× / 4.5× | 2.00 / 2.00 |") in text
    assert "sum × M / S" in text and "2.40 GiB" in text and "0 of 5 cells" in text


class _WordTokenizer:
    """Splits on spaces: every " word" is one token (as SmolLM2's byte-level BPE does for common words)."""

    def get_vocab(self):
        return {"Ġ" + w: 300 + i for i, w in enumerate(["apple", "river", "stone", "cloud"])} | {"Ġ42": 999, "x": 5}


def test_authors_speed_text_lengths_and_memory_rule():
    a = _script("authors_speed")
    prompt, response = a.make_text(_WordTokenizer(), 512, 1536)
    assert len(prompt.split()) == 512 and len(response.split()) == 1535  # + the EOS the authors append
    assert set(prompt.split()) <= {"apple", "river", "stone", "cloud"}
    assert a.make_text(_WordTokenizer(), 5, 5) == a.make_text(_WordTokenizer(), 5, 5)
    assert 6.0e9 < a.predicted_ref_peak(2048) < 7.5e9 and 20e9 < a.predicted_ref_peak(4096) < 23e9


def test_authors_speed_table_ratios_and_skips():
    a = _script("authors_speed")
    load = dict(load_before=[0.2, 0, 0], load_busy=False)
    gib = 2**30
    ref = dict(total_s=100.0, capture_s=12.0, attribution_s=88.0, peak_bytes=20 * gib, rss_loaded_bytes=1 * gib, **load)
    ours = dict(total_s=15.0, record_s=10.0, attribution_s=5.0, attribution_generation_s=6.0, peak_bytes=2 * gib,
                rss_loaded_bytes=1 * gib, **load)
    rows = [{"n": 4096, "prompt": 512, "ref": ref, "ours": ours},
            {"n": 8192, "prompt": 512, "ref": {"skipped": "predicted peak 80.0 GiB, 20.0 GiB available (headroom 1 GiB): not run",
                                               **load}, "ours": ours}]
    meta = dict(threads=2, cpus=2, prompt=512, target=8, load_min=0.2, load_max=0.2, busy=0, n_runs=4)
    text = a.markdown(rows, meta)
    assert ("| 4,096 | 100.00 (12.00 + 88.00) | 15.00 (10.00 + 5.00) | 6.00 | **0.15×** | 20.00 / 2.00 "
            "| 19.00 / 1.00 | **0.10×**, 0.05× | 0.20 / 0.20 |") in text
    assert "| 8,192 | predicted peak 80.0 GiB, 20.0 GiB available (headroom 1 GiB): not run | 15.00 (10.00 + 5.00) | 6.00 | – |" in text


def test_parity_scripts_import_nothing_of_ours_at_module_level():
    """The reference's process runs parity_reference.py where `flashtrace` must be the authors' package:
    neither the script nor the cases module it imports may load this repository's package or torch."""
    import subprocess
    import sys
    from pathlib import Path

    benchmarks = Path(__file__).resolve().parents[1] / "benchmarks"
    check = ("import sys, parity_reference, authors_speed; "
             "assert parity_reference.build_venv is authors_speed.build_venv; "
             "loaded = sorted(m for m in ('flashtrace', 'torch', 'transformers') if m in sys.modules); "
             "assert not loaded, loaded")
    proc = subprocess.run([sys.executable, "-c", check], cwd=benchmarks, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_parity_comparison_of_equal_and_shifted_vectors():
    p = _script("parity_reference")
    ref_run = {"hops_raw": [[1.0, 2.0, 3.0, 9.0], [0.5, 0.0, 1.5, 9.0]], "rho": [0.2, 0.4], "final": [1.0, 3.0, 2.0, 9.0]}
    ours = {"hops_raw": [[1.0, 2.0, 3.0], [0.5, 0.0, 1.6]], "rho": [0.2, 0.5], "final": [1.0, 3.0, 2.0]}
    result = p.compare(ref_run, ours, n=3, n_prompt=2, user=[0, 1])  # the reference's extra EOS position dropped
    assert result["hops"][0] == {"k": 0, "pearson": pytest.approx(1.0), "max_abs": 0.0, "rho_diff": 0.0}
    assert result["max_abs"] == pytest.approx(0.1) and result["max_rho_diff"] == pytest.approx(0.1)
    assert result["final"]["user_max_abs"] == 0.0 and result["min_pearson"] < 1.0


def test_authors_speed_rounds_report_the_median_ratio_and_range():
    a = _script("authors_speed")
    gib = 2**30

    def run(total, peak, **extra):
        return dict(total_s=total, capture_s=1.0, attribution_s=total - 1, peak_bytes=peak * gib,
                    rss_loaded_bytes=gib, load_before=[0.2, 0, 0], load_busy=False, **extra)

    mine = dict(record_s=3.0, attribution_generation_s=1.2)
    rounds = [{"ref": run(20, 6), "ours": run(4.0, 1.5, **mine)}, {"ref": run(24, 6), "ours": run(4.4, 1.2, **mine)},
              {"ref": run(16, 6), "ours": run(4.2, 1.8, **mine)}]
    row = {"n": 2048, "prompt": 512, "rounds": rounds, "ref": a._median_run([r["ref"] for r in rounds]),
           "ours": a._median_run([r["ours"] for r in rounds])}
    assert row["ref"]["total_s"] == 20 and row["ours"]["total_s"] == 4.2 and row["ours"]["total_runs"] == [4.0, 4.4, 4.2]
    meta = dict(threads=2, cpus=2, prompt=512, target=8, load_min=0.2, load_max=0.2, busy=0, n_runs=6)
    text = a.markdown([row], meta)  # time ratios 0.20, 0.18, 0.26; peak ratios 0.25, 0.20, 0.30
    assert "| **0.20×** (0.18–0.26 over 3 rounds) |" in text
    assert "| **0.25×** (0.20–0.30 over 3 rounds), " in text


def test_mutation_report_in_a_fresh_checkout_keeps_the_recorded_numbers(tmp_path, monkeypatch):
    import json

    mutation = _script("mutation")
    module = "flashtrace/base/units.py"
    survivor = {"name": "flashtrace.base.units.x_f__mutmut_1", "status": "survived", "line": "x = 2", "equivalent": None}
    record = {"module": module, "source_hash": "abc", "mutants": 21, "checked": 21, "killed": 20, "survived": 1,
              "timeout": 0, "no_tests": 0, "caught_share": 0.9524, "survivors": [survivor], "seconds": 53}
    results, reasons = tmp_path / "mutation.json", tmp_path / "reasons.json"
    results.write_text(json.dumps({"tool": "mutmut", "modules": {module: record}}))
    reasons.write_text(json.dumps({survivor["name"]: "the same value either way"}))
    monkeypatch.setattr(mutation, "RESULTS", results)
    monkeypatch.setattr(mutation, "REASONS", reasons)
    monkeypatch.setattr(mutation, "WORK", tmp_path / "no-mutmut-results-here")
    assert mutation.main(["--report", "--modules", module]) == 0
    kept = json.loads(results.read_text())["modules"][module]
    assert {k: kept[k] for k in record if k != "survivors"} == {k: v for k, v in record.items() if k != "survivors"}
    assert kept["survivors"] == [dict(survivor, equivalent="the same value either way")]


def test_a_survivors_rerun_in_a_fresh_checkout_keeps_the_other_verdicts(tmp_path, monkeypatch):
    """`mutation.py --survivors` where mutmut has results only for the rerun survivors (a fresh clone: mutmut made
    every mutant but tried only those): the module's other mutants keep the recorded verdicts, so the record stays
    complete; an interrupted full run (a mutant tried that was not a survivor) stays incomplete."""
    import json

    mutation = _script("mutation")
    module = "flashtrace/base/units.py"
    names = [f"flashtrace.base.units.x_f__mutmut_{i}" for i in range(1, 22)]
    survivors = [{"name": n, "status": "survived", "line": "", "equivalent": None} for n in names[:2]]
    previous = {"module": module, "source_hash": "abc", "mutants": 21, "checked": 21, "killed": 18, "survived": 2,
                "timeout": 1, "no_tests": 0, "caught_share": 0.9048, "survivors": survivors}
    monkeypatch.setattr(mutation, "WORK", tmp_path)
    monkeypatch.setattr(mutation, "source_hash", lambda m: "abc")
    monkeypatch.setattr(mutation, "changed_line", lambda m, n: "x = 2")
    meta = mutation._meta(module)
    meta.parent.mkdir(parents=True)

    def ran(codes):
        meta.write_text(json.dumps({"exit_code_by_key": {n: codes.get(n) for n in names}}))
        return mutation.summarise(module, previous, None, {names[1]: "the same value either way"}, rerun=True)

    record = ran({names[0]: 1, names[1]: 0})  # the first survivor killed by a new test, the second survives
    assert {k: record[k] for k in ("mutants", "checked", "killed", "survived", "timeout", "caught_share")} == {
        "mutants": 21, "checked": 21, "killed": 19, "survived": 1, "timeout": 1, "caught_share": round(20 / 21, 4)}
    assert record["survivors"] == [{"name": names[1], "status": "survived", "line": "x = 2",
                                    "equivalent": "the same value either way"}]
    assert mutation.problems(record) == [] and record["kept"]["killed"] == 18
    again = mutation.summarise(module, record, None, {names[1]: "the same value either way"})  # --report later
    assert {k: again[k] for k in record if k != "survivors"} == {k: v for k, v in record.items() if k != "survivors"}
    cut = ran({names[0]: 1})  # a survivors rerun interrupted after one mutant: one left to try
    assert (cut["checked"], cut["killed"], cut["survived"]) == (20, 19, 0) and "incomplete" in mutation.problems(cut)[0]
    partial = ran({names[0]: 1, names[5]: 1})  # a full run cut short: not a survivors rerun
    assert (partial["checked"], partial["killed"]) == (2, 2) and "incomplete" in mutation.problems(partial)[0]
    previous = dict(previous, source_hash="older")  # the source moved on: the names are other mutants now
    assert ran({names[0]: 1, names[1]: 0})["checked"] == 2


def test_a_mutation_record_stays_current_through_docstring_and_annotation_edits():
    """The record's key is the code's hash: mutmut mutates neither docstrings nor annotations, so editing them
    leaves a module's mutation results current; any change to the code makes it stale."""
    mutation = _script("mutation")
    code = 'def f(a, b=2):\n    return a + b\n'
    documented = ('from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import os\n\n\n'
                  'def f(a: int, b: int = 2) -> int:\n    """Add.\n\n    Args:\n        a: One.\n        b: Two.\n    """\n'
                  '    return a + b\n')
    assert mutation.code_hash(code) == mutation.code_hash(documented)
    assert mutation.code_hash(code) != mutation.code_hash(code.replace("a + b", "a - b"))
    assert mutation.code_hash(code) != mutation.code_hash(code.replace("b=2", "b=3"))
