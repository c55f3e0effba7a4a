"""Issue 13 items 4, 5, 7 and 10: what can be checked before loading, tokenising or running is checked
first, with a one-line error and the documented exit code (2 bad input, 3 would not fit)."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import flashtrace
from flashtrace.engine import models
from flashtrace.cli import main
from flashtrace.engine.models import memory
from tests.conftest import _load

ENV = {**os.environ, "PYTHONPATH": str(Path(flashtrace.__file__).parents[1])}


def _capped(code: str, *args: str, room_mb: int = 500) -> list[str]:
    """Run `code` in a subprocess whose address space may grow only `room_mb` beyond what it uses after
    importing flashtrace; returns its stdout words."""
    script = textwrap.dedent(f"""
        import resource, sys
        import flashtrace
        from flashtrace.engine.models.loading import default_tokenizer
        default_tokenizer()
        size = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (size + {room_mb} * 2**20, size + {room_mb} * 2**20))
    """) + textwrap.dedent(code)
    out = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=240, env=ENV)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.split(maxsplit=2)


def test_a_model_larger_than_memory_is_refused_from_its_config():
    """Issue 13.4: random-qwen3-8b (~33 GB in float32) was allocated before any check; under an 8 GB cap the
    CLI died in the allocator at 7 GB. Now refused from the config, under a 500 MB cap."""
    words = _capped("""
        from flashtrace.engine.models import ResourceError, load_model
        try:
            load_model("random-qwen3-8b")
            print("loaded")
        except ResourceError as exc:
            print("refused", exc)
    """)
    assert words[0] == "refused", words
    assert " ".join(words[1:]).startswith("random-qwen3-8b needs ~30.5 GiB for its weights (8.19 B parameters in float32)")
    assert "refused before loading" in " ".join(words[1:])


def test_the_cli_exits_3_for_a_model_that_does_not_fit(monkeypatch, capsys):
    monkeypatch.setattr(memory, "available_bytes", lambda device=None: 4 * 2**30)
    code = main(["trace", "--model", "random-qwen3-8b", "--prompt", "hi", "--response", "ok", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 3 and err.count("\n") == 1 and "needs ~30.5 GiB" in err and "~3.6 GiB is available" in err


def test_a_16_mb_prompt_is_refused_before_it_is_tokenised():
    """Issue 13.5: 16 MB of text was tokenised in full (69 s, 3.8 GB) before the context check."""
    words = _capped("""
        from flashtrace.run.tracing import prepare
        from flashtrace.engine.models import load_model
        loaded = load_model("tiny-llama")

        def tokenised(*args, **kwargs):
            raise RuntimeError("tokenised")

        tok = type(loaded.tokenizer)
        tok.__call__ = tok.encode = tok.apply_chat_template = tok.tokenize = tokenised
        for n in (16_000_000, 1_000_000):  # over what a trace holds; over the context's character bound
            try:
                prepare(loaded, "a" * n, "Answer: 1")
                print("ran")
            except ValueError as exc:
                print("refused", exc, "|", end=" ")
    """)
    assert words[0] == "refused", words
    first, second = " ".join(words[1:]).split("|")[:2]
    assert first.strip() == "the prompt has 16,000,000 characters; a trace holds at most 2,000,000"
    assert "refused" in second and "more than tiny-llama's context of 4,096 tokens can hold" in second


def test_the_context_check_the_app_calls():
    """Issue 13.7 (library side): tiny-gpt2 with 5,000 tokens failed with IndexError in the app; the estimate's
    refusal offered more tokens than the context holds."""
    from flashtrace.app.state import run_estimate
    from flashtrace.engine.estimate import ResourceError, check_fits, estimate
    from flashtrace.engine.inputs import ResponseSpans
    from flashtrace.run.prechecks import max_input_chars

    gpt2 = _load("tiny-gpt2")
    prompt = "one two three four " * 1300
    with pytest.raises(ValueError, match=r"[\d,]+ tokens but tiny-gpt2 reads at most 4,?096"):
        run_estimate(gpt2, prompt, "Answer: 4", ResponseSpans(None, (8, 9), "user"), "answer", 1)
    with pytest.raises(ValueError, match="context of 4,096 tokens can hold"):
        run_estimate(gpt2, "x" * (max_input_chars(gpt2) + 1), "Answer: 4", ResponseSpans(None, (8, 9), "user"),
                     "answer", 1)
    assert 4096 <= max_input_chars(gpt2) <= 2_000_000
    with pytest.raises(ResourceError, match=r"at most ~4096 tokens would fit"):
        check_fits(gpt2, 30_000, budget_bytes=estimate(gpt2, 20_000).run_bytes)  # ~20,000 fit in memory


def _no_model(monkeypatch):
    def refuse(*_a, **_k):
        raise AssertionError("a model was loaded before the arguments were checked")

    monkeypatch.setattr(models, "load_model", refuse)


@pytest.mark.parametrize("extra, message", [
    (["--threshold", "2"], "--threshold must be between 0 and 1, got 2.0"),
    (["--top", "-5"], "--top must be at least 1, got -5"),
    (["--hops", "9"], "--hops must be between 0 and 8, got 9"),
    (["--json", "{dir}"], "is a folder; give a file name"),
    (["--json", "{file}/x.json"], "cannot be written"),
    (["--device", "nonsense"], "unknown device 'nonsense'"),
    (["--prompt-file", "{dir}"], "is a folder, not a text file"),
    (["--prompt-file", "/dev/zero"], "--prompt-file /dev/zero is a device, not a text file"),
    (["--prompt-file", "{dir}/missing.txt"], "does not exist"),
])
def test_bad_arguments_fail_before_loading_with_one_line(tmp_path, monkeypatch, capsys, extra, message):
    """Issue 13.10: these were reported after the whole run, as raw pydantic text, a traceback or exit 1."""
    _no_model(monkeypatch)
    (tmp_path / "f").write_text("x")
    extra = [a.format(dir=tmp_path, file=tmp_path / "f") for a in extra]
    base = ["trace", "--model", "tiny-llama", "--response", "Answer: 1", "--no-progress"]
    prompt = [] if "--prompt-file" in extra else ["--prompt", "hi"]
    code = main(base + prompt + extra)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and message in err and "Traceback" not in err, err


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a build or machine without CUDA")
def test_cuda_on_a_cpu_machine_is_one_line(monkeypatch, capsys):
    _no_model(monkeypatch)
    code = main(["trace", "--model", "tiny-llama", "--prompt", "hi", "--response", "ok", "--device", "cuda"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "device 'cuda' is not available" in err


def test_export_refuses_devices_folders_and_bad_destinations(tmp_path, capsys):
    for args, message in ((["/dev/zero", "--json", str(tmp_path / "o.json")], "/dev/zero is a device"),
                          ([str(tmp_path), "--json", str(tmp_path / "o.json")], "is a folder, not a trace file"),
                          ([str(tmp_path / "t.json"), "--html", str(tmp_path)], "--html")):
        assert main(["export", *args]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err


def test_generation_past_the_context_is_refused_before_generating(monkeypatch, capsys):
    from flashtrace.engine.models import generation

    def refuse(*_a, **_k):
        raise AssertionError("generation started")

    monkeypatch.setattr(generation, "generate_response", refuse)
    code = main(["trace", "--model", "tiny-llama", "--prompt", "hi", "--generate", "--max-new-tokens", "1000000"])
    err = capsys.readouterr().err
    assert code == 2 and "exceeds the 4,096 tokens tiny-llama reads" in err and err.count("\n") == 1


def test_model_folders_with_a_bad_or_remote_code_config_say_so(tmp_path, capsys):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text("{not json")
    (tmp_path / "remote").mkdir()
    (tmp_path / "remote" / "config.json").write_text(
        '{"model_type": "foo_custom", "auto_map": {"AutoConfig": "cfg.FooConfig"}}')
    for folder, message in (("bad", "config.json cannot be read as a model config"),
                            ("remote", "config.json needs the model's own Python code")):
        code = main(["trace", "--model", str(tmp_path / folder), "--prompt", "hi", "--response", "ok"])
        err = capsys.readouterr().err
        assert code == 2 and message in err and "neither a local folder" not in err, err


def test_options_are_checked_before_the_forward_pass(monkeypatch):
    from flashtrace.run import tracing

    def refuse(*_a, **_k):
        raise AssertionError("the model ran")

    monkeypatch.setattr(tracing, "record_forward", refuse)
    loaded = _load("tiny-llama")
    for options, message in (({"threshold": 1.5}, "threshold must (be between 0 and 1|satisfy 0.0 <= threshold)"),
                             ({"title": "t" * 501}, "the title has 501 characters; at most 500")):
        with pytest.raises(ValueError, match=message):
            tracing.trace(loaded, "Ann has 3 apples.", "Answer: 3", **options)
