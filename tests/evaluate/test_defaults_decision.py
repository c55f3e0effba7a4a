"""The defaults agree with the committed evaluation (issue 46 item 5): the app's and the API's hop-0 span is the
one with the better mean Recovery@10% over the tasks on the Qwen models' own reasoning; the default depth K is the
simplest one that no deeper K beats beyond its interval (Recovery@10%, RISE and MAS, paired on the same examples);
the default stop preset is `paper` unless another preset beats it beyond its interval on some model and metric and
loses beyond it on none; docs/evaluation.md states the choices with the numbers this test recomputes."""

import inspect
from pathlib import Path

import pytest

from flashtrace.analysis.limits import (APP_HOP0, DEFAULT_HOPS, DEFAULT_STOP_TOKENS, GALLERY_HOP0, GALLERY_STOP_TOKENS,
                                        HOP0_SPANS)
import flashtrace
from flashtrace.evaluate.report import load_records
from flashtrace.evaluate.stats import paired_difference
from flashtrace.run.tracing import attribute
from flashtrace.store.gallery import list_gallery, load_gallery_trace

ROOT = Path(__file__).resolve().parents[2]
# each model's own reasoning (--protocol own): the four first tasks, and the word problems and passages
OWN = {"qwen2.5-coder-0.5b": ("eval_qwen05_own_recovery", "eval_qwen05_own_words"),
       "qwen2.5-coder-1.5b": ("eval_qwen15_own_recovery", "eval_qwen15_own_words")}
# the deletion curves (RISE and MAS) on each model's own reasoning
RISE = {"qwen2.5-coder-0.5b": ("eval_qwen05_own_rise",), "qwen2.5-coder-1.5b": ("eval_qwen15_own_rise",)}
SPAN_METHOD = {"answer": "flashtrace-k1", "generation": "flashtrace-k1-gen"}  # K = 1: the span shapes the hops
DEPTH_METHOD = {0: "flashtrace-k0", 1: "flashtrace-k1", 2: "flashtrace-k2"}
HIGHER_IS_BETTER = {"recovery": True, "rise": False, "mas": False}


def records_of(folders: tuple[str, ...]) -> list[dict]:
    records = [r for folder in folders for r in load_records(ROOT / "benchmarks" / "results" / folder)]
    assert records, folders
    return records


def depth_gains(model: str) -> dict[tuple[int, str], dict]:
    """``(K, metric) -> paired difference`` of FlashTrace at depth K >= 1 against K = 0 over every example of the
    model's own reasoning, oriented so that a positive difference means K is better."""
    gains = {}
    for metric, higher in HIGHER_IS_BETTER.items():
        records = records_of(OWN[model] if metric == "recovery" else RISE[model])
        base = [r["methods"][DEPTH_METHOD[0]][metric] for r in records]
        for depth in (1, 2):
            values = [r["methods"][DEPTH_METHOD[depth]][metric] for r in records]
            gains[depth, metric] = paired_difference(values, base) if higher else paired_difference(base, values)
    return gains


def chosen_depth(model: str) -> int:
    """The smallest K that some metric shows better than K = 0 beyond its interval and no metric shows worse;
    0 when none is (within the intervals the simpler variant)."""
    gains = depth_gains(model)
    for depth in (1, 2):
        lows = [gains[depth, m]["interval"][0] for m in HIGHER_IS_BETTER]
        highs = [gains[depth, m]["interval"][1] for m in HIGHER_IS_BETTER]
        if max(lows) > 0 and min(highs) >= 0:
            return depth
    return 0


def mean_recovery_over_tasks(folders: tuple[str, ...], method: str) -> float:
    """The mean over tasks of each task's mean Recovery@10% (every task weighs the same, whatever its n)."""
    records = records_of(folders)
    tasks = sorted({r["task"] for r in records})
    means = [sum(r["methods"][method]["recovery"] for r in records if r["task"] == t)
             / sum(1 for r in records if r["task"] == t) for t in tasks]
    return sum(means) / len(means)


@pytest.mark.parametrize("model", OWN)
def test_the_default_hop0_span_has_the_best_mean_recovery_on_each_models_own_reasoning(model):
    scores = {span: mean_recovery_over_tasks(OWN[model], method) for span, method in SPAN_METHOD.items()}
    assert max(scores, key=scores.get) == APP_HOP0, scores


@pytest.mark.parametrize("model", OWN)
def test_the_default_depth_is_the_simplest_one_no_deeper_depth_beats_on_each_models_own_reasoning(model):
    assert chosen_depth(model) == DEFAULT_HOPS, depth_gains(model)


def test_the_app_and_the_api_share_the_default_and_the_gallery_says_how_it_was_built():
    assert inspect.signature(attribute).parameters["hop0"].default == APP_HOP0 == HOP0_SPANS[0]
    assert inspect.signature(attribute).parameters["hops"].default == DEFAULT_HOPS
    assert inspect.signature(flashtrace.trace).parameters["hops"].default == DEFAULT_HOPS
    items = list_gallery()
    assert items
    for item in items:  # every shipped trace records the span it was made with; the Qwen ones, the gallery's
        trace = load_gallery_trace(item.name)
        assert trace.settings.hop0 in (GALLERY_HOP0, APP_HOP0)
        assert trace.settings.stop_tokens == GALLERY_STOP_TOKENS, item.name  # a rebuild keeps them (gallery.py)
        if item.written:
            assert trace.settings.hop0 == GALLERY_HOP0


def test_the_docs_state_the_choice_with_the_numbers_recomputed_here():
    doc = (ROOT / "docs" / "evaluation.md").read_text()
    section = doc.split("## Defaults, decided on the models' own reasoning", 1)[1].split("\n## ", 1)[0]
    assert f'`hop0="{APP_HOP0}"`' in section and f"**K = {DEFAULT_HOPS}**" in section
    for model, folders in OWN.items():
        for method in SPAN_METHOD.values():
            assert f"{mean_recovery_over_tasks(folders, method):.3f}" in section, (model, method)


def paired_text(difference: dict) -> str:
    low, high = difference["interval"]
    return f"{difference['mean']:+.3f} [{low:+.3f}, {high:+.3f}]"


@pytest.mark.parametrize("model", OWN)
def test_the_docs_give_each_depths_paired_difference_recomputed_here(model):
    doc = (ROOT / "docs" / "evaluation.md").read_text()
    section = doc.split("## Defaults, decided on the models' own reasoning", 1)[1].split("\n## ", 1)[0]
    for (depth, metric), difference in depth_gains(model).items():
        assert paired_text(difference) in section, (model, depth, metric, paired_text(difference))


# the stop presets at the default depth, each the evaluation method that runs it; `paper` is the one to beat
STOP_METHOD = {"paper": f"flashtrace-k{DEFAULT_HOPS}", "punctuation": f"flashtrace-k{DEFAULT_HOPS}-punct",
               "none": f"flashtrace-k{DEFAULT_HOPS}-nostop"}


def preset_gains(model: str) -> dict[tuple[str, str], dict]:
    """``(preset, metric) -> paired difference`` of each other preset against `paper` at the default depth, on the
    examples of the model's own reasoning that have both, oriented so that a positive difference favours the
    preset (for RISE and MAS: paper's value minus the preset's). A preset without a run on a metric is left out."""
    gains = {}
    for metric, higher in HIGHER_IS_BETTER.items():
        records = records_of(OWN[model] if metric == "recovery" else RISE[model])
        for preset, method in STOP_METHOD.items():
            both = [r for r in records if method in r["methods"] and STOP_METHOD["paper"] in r["methods"]]
            if preset == "paper" or not both:
                continue
            values = [r["methods"][method][metric] for r in both]
            base = [r["methods"][STOP_METHOD["paper"]][metric] for r in both]
            gains[preset, metric] = paired_difference(values, base) if higher else paired_difference(base, values)
    return gains


def chosen_stop_preset() -> str:
    """`paper` (the authors' set), unless another preset is better beyond its interval on some model and metric
    and worse beyond it on none; of several such, the one with the higher mean Recovery@10% over all examples."""
    gains = {model: preset_gains(model) for model in OWN}
    chosen = []
    for preset in STOP_METHOD:
        found = [d for g in gains.values() for (p, _), d in g.items() if p == preset]
        if found and any(d["interval"][0] > 0 for d in found) and all(d["interval"][1] >= 0 for d in found):
            chosen.append(preset)
    if not chosen:
        return "paper"

    def recovery(preset: str) -> float:
        records = [r for model in OWN for r in records_of(OWN[model]) if STOP_METHOD[preset] in r["methods"]]
        return sum(r["methods"][STOP_METHOD[preset]]["recovery"] for r in records) / len(records)

    return max(chosen, key=recovery)


def test_every_stop_preset_was_run_on_both_models_own_reasoning():
    for model in OWN:
        assert {p for p, metric in preset_gains(model) if metric == "recovery"} == set(STOP_METHOD) - {"paper"}, model


def test_the_default_stop_preset_is_the_one_the_rule_picks_and_everything_shares_it():
    assert chosen_stop_preset() == DEFAULT_STOP_TOKENS, {m: preset_gains(m) for m in OWN}
    assert inspect.signature(attribute).parameters["stop_tokens"].default == DEFAULT_STOP_TOKENS
    assert inspect.signature(flashtrace.trace).parameters["stop_tokens"].default == DEFAULT_STOP_TOKENS
    from flashtrace.run.batch import BatchSettings

    assert BatchSettings.__dataclass_fields__["stop_tokens"].default == DEFAULT_STOP_TOKENS
    # the CLI: tests/test_cli.py traces without --stop-tokens and finds DEFAULT_STOP_TOKENS in the trace


@pytest.mark.parametrize("model", OWN)
def test_the_docs_give_each_stop_presets_paired_difference_recomputed_here(model):
    doc = (ROOT / "docs" / "evaluation.md").read_text()
    section = doc.split("## Defaults, decided on the models' own reasoning", 1)[1].split("\n## ", 1)[0]
    assert f"**Stop preset: `{DEFAULT_STOP_TOKENS}`**" in section
    for (preset, metric), difference in preset_gains(model).items():
        assert paired_text(difference) in section, (model, preset, metric, paired_text(difference))
