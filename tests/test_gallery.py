import json
import math

import numpy as np
import pytest

from flashtrace.analysis.facts import MARGIN, analyse
from flashtrace.analysis.story import card_note
from flashtrace.evaluate.faithfulness import FAITHFULNESS_KEY
from flashtrace.evaluate.gallery import GALLERY, PRESETS, build_gallery, build_trace, preset_text, round_floats
from flashtrace.store.gallery import GalleryItem, gallery_dir, list_gallery, load_gallery_trace, write_index


def test_shipped_gallery_covers_every_family_a_free_form_prompt_and_a_long_trace():
    items = list_gallery()
    assert [it.name for it in items] == [s.name for s in GALLERY]
    assert {it.task for it in items} >= {"arithmetic", "vartrack", "multihop", "needle", "free-form"}
    assert max(it.n_tokens for it in items) >= 2000
    assert all(it.model == "smollm2-135m" for it in items)
    total = sum(p.stat().st_size for p in gallery_dir().glob("*.json"))
    assert total < 10 * 2**20


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


def _change_by_hand(trace) -> str:
    first, last = _top_sentences(trace, 0), _top_sentences(trace, len(trace.hops) - 1)
    a, b = max(first, key=first.get), max(last, key=last.get)
    if a == b:
        return "same"
    return "changed" if first[a] - first[b] > MARGIN and last[b] - last[a] > MARGIN else "tie"


def test_index_says_what_the_hops_change_in_each_trace_as_the_pages_do():
    rows = json.loads((gallery_dir() / "index.json").read_text(encoding="utf-8"))
    assert [r["name"] for r in rows] == [s.name for s in GALLERY]
    for row in rows:
        trace = load_gallery_trace(row["name"])
        assert row["overlap"] == pytest.approx(_top10_overlap(trace)), row["name"]  # the index agrees with the file
        assert row["change"] == _change_by_hand(trace), row["name"]
        assert row["top_segment_changed"] == (row["change"] == "changed")
        assert row["note"] == card_note(analyse(trace))  # the card's sentence is the analysis layer's
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
        steps = [s.id for s in trace.segments if s.role == "reasoning" and s.end <= lo]
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
    names = ["arithmetic", "needle", "vartrack-answer-11"]  # the last: its top prompt sentence changes
    for name in names:
        (tmp_path / f"{name}.json").write_bytes((gallery_dir() / f"{name}.json").read_bytes())
    shipped = {it.name: it for it in list_gallery()}
    assert list_gallery(tmp_path) == [shipped[n] for n in sorted(names)]  # read from the files, by name
    monkeypatch.setenv("FLASHTRACE_GALLERY", str(tmp_path))
    assert load_gallery_trace("needle").title == shipped["needle"].title  # $FLASHTRACE_GALLERY is the gallery
    assert shipped["vartrack-answer-11"].top_segment_changed
    with pytest.raises(ValueError, match="^no gallery trace named 'vartrack'; the gallery has: arithmetic, needle, "
                                         "vartrack-answer-11$"):
        load_gallery_trace("vartrack")
    written = write_index(tmp_path, order=["needle"])
    assert [it.name for it in written] == ["needle", "arithmetic", "vartrack-answer-11"]  # named first, then by name
    assert [GalleryItem(**row) for row in json.loads((tmp_path / "index.json").read_text())] == written
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


def test_the_docs_gallery_table_lists_every_shipped_trace_as_the_index_records_it():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    index = json.loads((root / "assets" / "gallery" / "index.json").read_text())
    text = (root / "docs" / "app.md").read_text()
    section = text[text.index("## Gallery"):]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| name")]
    changed = {"changed": "yes", "same": "no"}
    expected = {f"| {e['name']} | {e['title']} | {'the answer' if e['hop0'] == 'answer' else 'the whole generation'} "
                f"| {e['n_tokens']:,} | {e['overlap']} | {changed.get(e['change'], e['change'])} |" for e in index}
    assert expected <= set(rows), sorted(expected - set(rows))
    number = ["Twelve", "Thirteen", "Fourteen", "Fifteen"][len(index) - 12] if 12 <= len(index) <= 15 else None
    assert number and f"{number} SmolLM2-135M-Instruct traces ship" in section
