"""The gallery (`store.gallery`, `evaluate.gallery`): model-written traces, honest failures with their edits, the index, the docs' tables."""

import json
import math
import re

import numpy as np
import pytest

from flashtrace.analysis.facts import MARGIN, analyse
from flashtrace.analysis.failure import failure_note, failure_of
from flashtrace.analysis.story import card_note
from flashtrace.evaluate.faithfulness import FAITHFULNESS_KEY
from flashtrace.evaluate.gallery import GALLERY, PRESETS, build_gallery, build_trace, preset_text, round_floats
from flashtrace.analysis.segments import is_step, steps_before_target
from flashtrace.engine.inputs.spans import is_question
from flashtrace.evaluate.gallery_spec import is_right, value_text
from flashtrace.store.gallery import GalleryItem, gallery_dir, list_gallery, load_gallery_trace, write_index


def _written():
    return [it for it in list_gallery() if it.written]


def test_the_gallery_leads_with_reasoning_the_models_wrote_themselves():
    items = list_gallery()
    written = [it for it in items if it.written]
    assert items[:len(written)] == written  # they come first
    originals = [it for it in written if it.edited_from is None]
    assert len(originals) >= 10 and {it.model for it in originals} == {"qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"}
    for item in written:
        trace = load_gallery_trace(item.name)
        generation, record = trace.extra["generation"], trace.extra["gallery"]
        assert generation["do_sample"] is False and generation["max_new_tokens"] > 0, item.name  # greedy, recorded
        assert record["spec"]["model"] == trace.model.name, item.name
        if item.edited_from is None:
            assert record["spec"]["prompt"] in trace.prompt, item.name
        else:  # the edited version: the spec's prompt without the edit's sentence
            assert record["spec"]["edit"]["sentence"] not in trace.prompt, item.name
        assert item.correct == is_right(trace, record["right_answer"]), item.name  # checked against the task's answer
    # the synthetic benchmark traces stay, after them: SmolLM2 reading templated reasoning
    assert [it.name for it in items[len(written):]] == [s.name for s in GALLERY]
    assert all(it.model == "smollm2-135m" and not it.written for it in items[len(written):])
    total = sum(p.stat().st_size for p in gallery_dir().glob("*.json"))
    assert total <= 4 * 2**20


def test_at_least_two_honest_failures_are_proven_by_an_edit_whose_answer_is_right():
    proven = []
    for item in (it for it in _written() if it.correct is False and it.edited_from is None):
        original = load_gallery_trace(item.name)
        for name in item.edited_versions:
            edited = load_gallery_trace(name)  # the linked pair is in the gallery, both ways
            source = edited.extra["edited_from"]
            assert source["name"] == item.name and source["answer_before"] == item.answer
            assert isinstance(source["logprob_before"], float) and isinstance(source["logprob_after"], float)
            assert original.extra["gallery"]["edit_result"]["answer"] == source["answer_after"] == value_text(edited)
            if is_right(edited, original.extra["gallery"]["right_answer"]):
                proven.append(item.name)
    assert len(proven) >= 2, proven


def test_the_gallery_holds_a_long_trace_with_many_steps():
    long = [it.name for it in _written() if it.n_tokens >= 1500
            and len(steps_before_target(load_gallery_trace(it.name))) >= 15]
    assert long


@pytest.mark.parametrize("spec", GALLERY, ids=lambda s: s.name)
def test_each_gallery_trace_is_complete(spec):
    trace = load_gallery_trace(spec.name)
    item = next(it for it in list_gallery() if it.name == spec.name)
    assert (item.title, item.n_tokens, item.hops) == (trace.title, trace.n_tokens, trace.settings.hops)
    assert trace.settings.hops == 3 and trace.steps is not None and trace.segments
    assert trace.extra["gallery"]["task"] == (spec.task or "free-form")
    answer = "".join(t.text for t in trace.tokens[slice(*trace.settings.target)]).strip()
    assert answer and answer in trace.response
    if spec.task:
        gold = trace.extra["gallery"]["gold"]
        assert gold and all(0 <= a < b <= len(trace.prompt) for a, b in gold)


def _top10_overlap(trace) -> float:
    """Top-10 prompt tokens at K=0 (hop 0's contribution) vs K=max (all hops), from the stored hops."""
    prompt = trace.positions("prompt")
    first = np.asarray(trace.hops[0].contribution)[prompt]
    last = np.sum([h.contribution for h in trace.hops], axis=0)[prompt]
    top = [set(sorted(range(len(prompt)), key=lambda j: (-v[j], j))[:10]) for v in (first, last)]
    return len(top[0] & top[1]) / 10


def _top_sentences(trace, depth: int) -> dict[str, float]:
    cum = np.sum([h.contribution for h in trace.hops[: depth + 1]], axis=0)
    sums = {s.id: float(cum[s.start:s.end].sum()) for s in trace.segments if s.role == "prompt"}
    total = sum(sums.values())
    return {k: v / total for k, v in sums.items()}


def _context(trace, shares: dict[str, float]) -> dict[str, float]:
    """The shares of the context sentences: the question sentences apart (unless the prompt is only questions)."""
    prompt = [s for s in trace.segments if s.role == "prompt"]
    asked = {s.id for s in prompt if is_question(s.text)}
    if all(s.id in asked or not s.text.strip() for s in prompt):
        asked = set()
    return {k: v for k, v in shares.items() if k not in asked}


def _change_by_hand(trace) -> str:
    first, last = (_context(trace, _top_sentences(trace, d)) for d in (0, len(trace.hops) - 1))
    a, b = max(first, key=first.get), max(last, key=last.get)
    if a == b:
        return "same"
    return "changed" if first[a] - first[b] > MARGIN and last[b] - last[a] > MARGIN else "tie"


def test_index_says_what_the_hops_change_in_each_trace_as_the_pages_do():
    rows = json.loads((gallery_dir() / "index.json").read_text(encoding="utf-8"))
    assert [r["name"] for r in rows] == [it.name for it in list_gallery()]
    for row in rows:
        trace = load_gallery_trace(row["name"])
        assert row["overlap"] == pytest.approx(_top10_overlap(trace)), row["name"]  # the index agrees with the file
        assert row["change"] == _change_by_hand(trace), row["name"]
        assert row["top_segment_changed"] == (row["change"] == "changed")
        facts = analyse(trace)
        failure = failure_of(trace, facts)  # a failure's card says so first
        assert row["note"] == (f"{failure_note(facts, failure)} " if failure else "") + card_note(facts), row["name"]
        assert "Hops change" not in row["description"]  # no verdict frozen into the description at build time


def test_gallery_traces_carry_the_story_faithfulness_check():
    for item in list_gallery():
        trace = load_gallery_trace(item.name)
        check = trace.extra[FAITHFULNESS_KEY]
        n_prompt = len(trace.positions("prompt"))
        assert check["n_prompt"] == n_prompt and check["n_deleted"] == math.ceil(0.1 * n_prompt)
        assert check["model"] == trace.model.name and len(check["random"]) == 5
        assert check["random_mean"] == pytest.approx(sum(check["random"]) / 5, rel=1e-5)
        assert all(v <= 0 for v in [check["before"], check["top"], *check["random"]])  # log-probabilities


def test_gallery_traces_store_step_influence_by_intervention():
    for item in list_gallery():
        trace = load_gallery_trace(item.name)
        lo = trace.settings.target[0]
        steps = [s.id for s in trace.segments if is_step(s) and s.end <= lo]  # an "Answer:" marker is no step
        record = trace.interventions
        assert record is not None and record.model == trace.model.name, item.name
        assert [e.segments for e in record.edits if e.kind == "step"] == [[s] for s in steps], item.name
        assert [e.kind for e in record.edits].count("random") == min(5, len(analyse(trace).pieces) - 1)
        # scored unedited, the answer's log-probability is the deletion check's (another code path)
        assert record.before == pytest.approx(trace.extra[FAITHFULNESS_KEY]["before"], abs=1e-4), item.name


def test_unknown_gallery_name_is_refused():
    with pytest.raises(ValueError, match="no gallery trace named"):
        load_gallery_trace("../../etc/passwd")


def test_round_floats_keeps_six_significant_digits():
    assert round_floats({"a": [0.123456789, 1234567.891, 3], "b": 1e-9 / 3}) == \
        {"a": [0.123457, 1234570.0, 3], "b": 3.33333e-10}


def test_presets():
    assert set(PRESETS) == {"arithmetic", "vartrack", "multihop", "needle", "free-form"}
    prompt, response = preset_text("vartrack", seed=3)
    assert "VAR" in prompt and response.rstrip().splitlines()[-1].startswith("Answer:")
    assert preset_text("vartrack", seed=3) == (prompt, response)
    with pytest.raises(ValueError, match="unknown preset"):
        preset_text("nope")


def test_builder_with_a_tiny_model(tmp_path):
    items = build_gallery(tmp_path, model="tiny-llama", only=["free-form", "arithmetic"], log=lambda _m: None)
    assert [it.name for it in items] == ["arithmetic", "free-form"]
    assert json.loads((tmp_path / "index.json").read_text())[0]["name"] == "arithmetic"
    assert [it.name for it in list_gallery(tmp_path)] == ["arithmetic", "free-form"]
    trace = load_gallery_trace("arithmetic", tmp_path)
    assert trace.model.name == "tiny-llama" and trace.steps is not None
    row = json.loads((tmp_path / "index.json").read_text())[0]
    assert row["overlap"] == pytest.approx(_top10_overlap(trace)) and row["note"] == card_note(analyse(trace))
    assert trace.extra[FAITHFULNESS_KEY]["model"] == "tiny-llama"
    assert trace.interventions.model == "tiny-llama" and trace.interventions.edits
    assert all(v == float(f"{v:.6g}") for v in trace.scores.final + trace.hops[1].raw)  # rounded, still valid
    with pytest.raises(ValueError, match="unknown gallery entries"):
        build_gallery(tmp_path, model="tiny-llama", only=["nope"])


def test_gallery_command_lists(capsys):
    from flashtrace.cli import main

    assert main(["gallery", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(s.name in out for s in GALLERY)


def test_build_trace_records_gold_spans():
    import flashtrace

    spec = next(s for s in GALLERY if s.name == "multihop")
    trace = build_trace(spec, flashtrace.load_model("tiny-llama"))
    gold = trace.extra["gallery"]["gold"]
    # the recorded spans are the facts the question chains through, in the traced prompt itself
    facts = [trace.prompt[a:b] for a, b in gold]
    assert len(facts) == 2 and all(f.endswith(".") and f in trace.response for f in facts)
    assert any(f.startswith("Fenna was born in ") for f in facts) and any(" is a city in " in f for f in facts)


def test_a_gallery_without_its_index_lists_the_same_cards_from_the_files(tmp_path, monkeypatch):
    names = ["arithmetic", "needle", "muffins"]  # the last written by a model
    for name in names:
        (tmp_path / f"{name}.json").write_bytes((gallery_dir() / f"{name}.json").read_bytes())
    shipped = {it.name: it for it in list_gallery()}
    assert list_gallery(tmp_path) == [shipped[n] for n in sorted(names)]  # read from the files, by name
    monkeypatch.setenv("FLASHTRACE_GALLERY", str(tmp_path))
    assert load_gallery_trace("needle").title == shipped["needle"].title  # $FLASHTRACE_GALLERY is the gallery
    assert shipped["muffins"].top_segment_changed == (shipped["muffins"].change == "changed")
    with pytest.raises(ValueError, match="^no gallery trace named 'vartrack'; the gallery has: arithmetic, muffins, "
                                         "needle$"):
        load_gallery_trace("vartrack")
    written = write_index(tmp_path, order=["needle"])
    # the model-written first, then the synthetic: each as named in the order, then by name
    assert [it.name for it in written] == ["muffins", "needle", "arithmetic"]
    rows = json.loads((tmp_path / "index.json").read_text())
    assert [GalleryItem(**{**row, "edited_versions": tuple(row["edited_versions"])}) for row in rows] == written
    assert list_gallery(tmp_path) == written  # from the index now


def test_an_index_naming_a_missing_file_or_unreadable_is_not_trusted(tmp_path):
    (tmp_path / "needle.json").write_bytes((gallery_dir() / "needle.json").read_bytes())
    (tmp_path / "broken.json").write_text("{")  # a damaged trace is left out, the others listed
    card = next(it for it in list_gallery() if it.name == "needle").__dict__
    gone = json.dumps([card, {**card, "name": "gone"}])  # a complete card whose file is missing
    for index in (gone, "[{", json.dumps([{**card, "unknown": 1}])):
        (tmp_path / "index.json").write_text(index)
        assert [it.name for it in list_gallery(tmp_path)] == ["needle"]
    assert list_gallery(tmp_path / "missing") == []
    with pytest.raises(ValueError, match="the gallery has: nothing$"):
        load_gallery_trace("needle", tmp_path / "missing")


def test_any_trace_copied_into_a_gallery_folder_gets_a_card(tmp_path):
    from .trace_factory import make_trace, vector

    prompt, steps, answer = ["Alpha is one.", "Beta is two.", "What is alpha?"], ["Step one reads alpha."], "one"
    raws = [vector(prompt, steps, answer, {"S0": 1.0}), vector(prompt, steps, answer, {"P1": 0.5, "S0": 0.5})]
    make_trace(prompt, steps, answer, raws, hop0="generation").save(tmp_path / "plain.json")  # not from the builder
    make_trace(prompt, steps, answer, raws, extra={"gallery": {"task": "needle"}}).save(tmp_path / "tasked.json")
    plain, tasked = write_index(tmp_path)
    assert (plain.name, plain.description, plain.task, plain.hop0) == ("plain", "", "", "generation")
    assert (tasked.name, tasked.description, tasked.task, tasked.hop0) == ("tasked", "", "needle", "answer")
    # hop 0 reaches no prompt piece: nothing to compare, the deepest hop's top piece still named
    assert (plain.change, plain.top_segment_k0, plain.top_segment_kmax) == ("none", None, "P1")
    assert [it.size for it in (plain, tasked)] == [(tmp_path / f"{n}.json").stat().st_size for n in ("plain", "tasked")]
    assert list_gallery(tmp_path) == [plain, tasked]


NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
                "seventeen eighteen nineteen twenty twenty-one twenty-two twenty-three twenty-four twenty-five").split()


def test_the_docs_gallery_tables_are_the_shipped_gallery_and_every_trace_they_name_exists():
    from pathlib import Path

    from flashtrace.evaluate.gallery_tables import gallery_rows, intervention_rows

    root = Path(__file__).resolve().parents[1]
    text = (root / "docs" / "app.md").read_text()
    rows = {line for line in text.splitlines() if line.startswith("| ")}
    assert set(gallery_rows()) <= rows, sorted(set(gallery_rows()) - rows)
    assert set(intervention_rows()) <= rows, sorted(set(intervention_rows()) - rows)
    names = {it.name for it in list_gallery()}
    section = text[text.index("## Gallery"):text.index("\n## ", text.index("## Gallery") + 1)]
    table_names = {line.split("|")[1].strip() for line in section.splitlines() if line.startswith("| ")
                   and not line.startswith(("| name", "|---"))}
    assert table_names == names, sorted(table_names ^ names)
    # a trace named in the prose by its file name (needle-values-18, bus-05-edited, ...) is one that ships
    named = set(re.findall(r"(?<![\w.-])[a-z]+(?:-[a-z]+)*-(?:edited|\d+)(?:-edited)?(?![\w.-])", text))
    named -= {word for word in named if re.fullmatch(r"(?:top|hop)-\d+", word)}  # "top-10 overlap", "hop-0 span"
    assert named <= names, sorted(named - names)
    assert f"{NUMBER_WORDS[len(names)].capitalize()} traces ship in `assets/gallery/`" in section
