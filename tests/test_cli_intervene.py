"""``flashtrace intervene`` on a tiny model: the standard set stored in the trace, one edit, bad usage."""

import json

import pytest

from flashtrace import Trace
from flashtrace.analysis.interventions import intervention_facts
from flashtrace.cli import main
from flashtrace.run.tracing import attribute, prepare

PROMPT = "Ann has 3 red balls. Ben has 4 blue balls. Cat has 9 green balls. How many balls do Ann and Ben have?"
RESPONSE = "1. Ann has 3 balls.\n2. Ben has 4 balls.\n3. So 3 + 4 = 7.\nAnswer: 7 balls"


@pytest.fixture
def saved(tiny_llama, tmp_path):
    path = tmp_path / "t.json"
    attribute(prepare(tiny_llama, PROMPT, RESPONSE), hops=1, steps=True).save(path)
    return path


def test_standard_set_is_printed_and_stored(saved, tmp_path, capsys):
    out = tmp_path / "with.json"
    assert main(["intervene", str(saved), "--random", "2", "--seed", "1", "--out", str(out), "--no-progress"]) == 0
    captured = capsys.readouterr()
    stored = Trace.load(out)
    facts = intervention_facts(stored)
    assert stored.schema_version == 3 and [e.kind for e in stored.interventions.edits].count("random") == 2
    assert "predicted" in captured.err
    assert facts.steps.sentence in captured.out and facts.removal.sentence in captured.out
    for seg_id, drop in zip(facts.steps.ids, facts.steps.drops):
        assert any(line.split()[:2] == [seg_id, f"{drop:.3f}"] for line in captured.out.splitlines()), seg_id


def test_one_edit_with_regeneration(saved, capsys):
    assert main(["intervene", str(saved), "--remove", "P1", "--regenerate", "--max-new-tokens", "3",
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "P1 removed" in out and "change" in out and "the model now writes:" in out


def test_retrace_writes_the_new_trace(saved, tmp_path, capsys):
    new = tmp_path / "new.json"
    assert main(["intervene", str(saved), "--remove", "S1", "--replace", "2. Ben has 5 balls.", "--retrace", str(new),
                 "--max-new-tokens", "3", "--no-progress"]) == 0
    assert "S1 replaced" in capsys.readouterr().out
    assert "2. Ben has 5 balls.\n" in Trace.load(new).response


@pytest.mark.parametrize("extra, message", [(["--replace", "x"], "--replace needs --remove"),
                                            (["--remove", "P1", "--out", "x.json"], "--out stores the standard set"),
                                            (["--random", "-1"], "--random"),
                                            (["--remove", "A"], "only prompt sentences and reasoning steps")])
def test_bad_usage_is_one_line_exit_2(saved, capsys, extra, message):
    assert main(["intervene", str(saved), "--no-progress", *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and json.dumps(err).count("\\n") <= 2


@pytest.mark.parametrize("extra, message", [
    (["--resample", "1001"], "--resample must be at most 1,000"),
    (["--remove", "P1", "--replace", "x" * 20_001], "--replace is 20,001 characters; at most 20,000"),
    (["--remove", "P1", "--regenerate", "--max-new-tokens", "1000000000"],
     "with 1,000,000,000 new tokens that exceeds the 4,096 tokens tiny-llama reads"),
    (["--remove", "P1", "--replace", "x1 " * 4000], "but tiny-llama reads at most 4,096; shorten the replacement (--replace)"),  # 12,000 characters, 8,001 tokens
])
def test_an_edit_too_large_for_the_model_is_refused_before_any_work(saved, capsys, monkeypatch, extra, message):
    """Issue 48 M3 and L3: `intervene` bounded as `trace` is; nothing is scored or generated first."""
    from flashtrace.run import interventions

    monkeypatch.setattr(interventions, "score", lambda *a, **k: pytest.fail("scored before refusing"))
    assert main(["intervene", str(saved), "--no-progress", *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_command_never_writes_its_output_over_its_input_trace(saved, capsys):
    """Issue 48 L1: `export s.json --html s.json` and `intervene --retrace base.json` replaced their input."""
    before = saved.read_bytes()
    assert main(["export", str(saved), "--html", str(saved)]) == 2
    assert "is the input trace" in capsys.readouterr().err
    assert main(["intervene", str(saved), "--remove", "P1", "--retrace", str(saved), "--no-progress"]) == 2
    assert "is the input trace" in capsys.readouterr().err
    assert saved.read_bytes() == before
