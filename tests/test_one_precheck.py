"""Issue 48 item 5: every command that runs a model makes one pre-check (`engine.estimate.check_run`: the sequence
and any new tokens against the model's context, the memory the run needs) before its first forward pass.

Each test gives tiny-llama a context of 24 tokens and runs one command on a longer input: the refusal is the
shared check's one line, and no module of the model is ever called (every forward pass, the scoring batches and
generation included, goes through ``nn.Module.__call__``). Before, ``intervene``'s standard set and resampling, the
app's Re-run and step influence checked neither context nor memory, and ``intervene --remove`` only the context,
in a check of its own.
"""

import json

import pytest
import torch

from flashtrace.cli import main
from flashtrace.engine import estimate as estimate_module
from flashtrace.engine.estimate import ResourceError, check_run
from flashtrace.engine import models
from flashtrace.engine.models import generation
from tests.test_cli_intervene import PROMPT, RESPONSE, saved  # noqa: F401 - the fixture: a 96-token trace

CONTEXT = 24


@pytest.fixture
def short_context(monkeypatch):
    """tiny-llama reads at most `CONTEXT` tokens from now on, and once a model is loaded (loading checks the
    decomposition with a forward pass of its own), calling any torch module fails the test."""
    monkeypatch.setattr(generation, "context_length", lambda loaded: CONTEXT)
    real_load = models.load_model

    def forward(self, *args, **kwargs):
        pytest.fail(f"{type(self).__name__} ran before the pre-check refused")

    def load_then_guard(*args, **kwargs):
        loaded = real_load(*args, **kwargs)
        monkeypatch.setattr(torch.nn.Module, "__call__", forward)
        return loaded

    monkeypatch.setattr(models, "load_model", load_then_guard)
    return load_then_guard


def _refused(capsys, argv: list[str]) -> str:
    """Run the CLI; it must exit 2 with one line on stderr, which is returned."""
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    return err


def test_trace_refuses_a_sequence_longer_than_the_context(short_context, capsys):
    err = _refused(capsys, ["trace", "--model", "tiny-llama", "--prompt", PROMPT, "--response", RESPONSE,
                            "--no-progress"])
    assert "the sequence has 96 tokens but tiny-llama reads at most 24; shorten the prompt or response" in err


def test_trace_generate_refuses_new_tokens_past_the_context(short_context, capsys):
    err = _refused(capsys, ["trace", "--model", "tiny-llama", "--prompt", "Ann has 3 balls.", "--generate",
                            "--max-new-tokens", "30", "--no-progress"])
    assert "with 30 new tokens that exceeds the 24 tokens tiny-llama reads" in err


def test_intervene_standard_set_refuses_a_trace_longer_than_the_context(saved, short_context, capsys):
    err = _refused(capsys, ["intervene", str(saved), "--no-progress"])
    assert "the trace has 96 tokens but tiny-llama reads at most 24; load the model the trace was made with" in err


def test_intervene_resampling_is_refused_before_the_standard_set_runs(saved, short_context, capsys):
    err = _refused(capsys, ["intervene", str(saved), "--resample", "2", "--resample-tokens", "5", "--no-progress"])
    assert "the trace has 96 tokens; with 5 new tokens that exceeds the 24 tokens tiny-llama reads" in err


@pytest.mark.parametrize("extra", [["--regenerate"], ["--replace", "Ben has 5 balls."], []])
def test_intervene_one_edit_refuses_an_edited_trace_longer_than_the_context(saved, short_context, capsys, extra):
    err = _refused(capsys, ["intervene", str(saved), "--remove", "P1", "--max-new-tokens", "4", "--no-progress",
                            *extra])
    assert "the edited trace has" in err and "tiny-llama reads" in err and "--max-new-tokens" in err


def test_batch_records_the_refusal_for_the_line_that_does_not_fit(tmp_path, short_context, capsys):
    jobs = tmp_path / "in.jsonl"
    jobs.write_text(json.dumps({"prompt": PROMPT, "response": RESPONSE}) + "\n")
    out = tmp_path / "out"
    assert main(["batch", str(jobs), "--model", "tiny-llama", "--out", str(out), "--no-progress"]) == 1
    errors = [json.loads(line) for line in (out / "_batch" / "errors.jsonl").read_text().splitlines()]
    assert len(errors) == 1 and "the sequence has 96 tokens but tiny-llama reads at most 24" in errors[0]["error"]


def test_eval_refuses_an_example_longer_than_the_context(tmp_path, short_context, capsys):
    code = main(["eval", "--model", "tiny-llama", "--task", "needle", "--n", "1", "--k", "0", "--methods",
                 "flashtrace", "--out", str(tmp_path / "ev"), "--no-progress", "--no-plots"])
    err = capsys.readouterr().err
    assert code == 2 and "but tiny-llama reads at most 24" in err, err


def test_the_apps_run_estimate_refuses_with_the_same_check(short_context):
    from flashtrace.app.state import run_estimate
    from flashtrace.engine.inputs import detect_spans

    tiny_llama = short_context("tiny-llama")
    with pytest.raises(ValueError, match="the sequence has 96 tokens but tiny-llama reads at most 24"):
        run_estimate(tiny_llama, PROMPT, RESPONSE, detect_spans(RESPONSE), "answer", 1)


def test_the_apps_rerun_and_step_influence_refuse_with_the_same_check(saved, short_context):
    """The app's Re-run (`run.rerun.edit`) and step influence (`run.interventions.intervene`) call the library."""
    from flashtrace import Trace
    from flashtrace.run.interventions import intervene
    from flashtrace.run.rerun import edit

    tiny_llama = short_context("tiny-llama")
    trace = Trace.load(saved)
    with pytest.raises(ValueError, match="the edited trace has .* tokens; with 8 new tokens that exceeds"):
        edit(tiny_llama, trace, ["P1"], retrace=True, max_new_tokens=8)
    with pytest.raises(ValueError, match="the trace has 96 tokens but tiny-llama reads at most 24"):
        intervene(tiny_llama, trace)


def test_the_memory_part_counts_every_row_side_by_side(tiny_llama):
    """Sampled continuations and scoring batches hold each row's buffers at once: 8 rows need more than one, and a
    budget that fits one row refuses 8, naming the batch."""
    one = estimate_module.estimate(tiny_llama, 500, 0, rows=1, threads=1, warm=True, slowdown=1.0)
    eight = estimate_module.estimate(tiny_llama, 500, 0, rows=8, threads=1, warm=True, slowdown=1.0)
    assert eight.run_bytes > one.run_bytes
    with pytest.raises(ResourceError, match="8 sequences of 500 tokens side by side need .* a smaller batch"):
        estimate_module.check_fits(tiny_llama, 500, 0, budget_bytes=one.run_bytes, rows=8, threads=1, warm=True,
                                   slowdown=1.0)
    assert check_run(tiny_llama, 500, rows=1).n_tokens == 500
