"""The command line, run as a user would from a fresh shell."""

import json
import re
import subprocess
import sys

import pytest

from flashtrace.cli import build_parser, command_names, main

from .cli_run import run_main


def run_cli(*args, input=None):
    return subprocess.run([sys.executable, "-m", "flashtrace.cli", *args], capture_output=True, text=True,
                          input=input, timeout=300)


def test_every_flag_is_documented():
    parser = build_parser()
    assert "trace" in parser.format_help()  # help strings with % must not break the top-level help
    subparsers = next(a for a in parser._actions if a.dest == "command").choices
    assert {"trace", "prepare", "app"} <= set(subparsers)
    for name, sub in subparsers.items():
        help_text = sub.format_help()
        for action in sub._actions:
            if action.option_strings and action.dest != "help":
                assert action.help, f"{name} {action.option_strings} has no help"
                assert action.option_strings[0] in help_text


def test_trace_on_a_tiny_model(tmp_path):
    out = tmp_path / "t.json"
    prompt = tmp_path / "p.txt"
    prompt.write_text("Lisa has 2 cats and 3 dogs. How many pets does she have?")
    res = run_cli("trace", "--model", "tiny-qwen3", "--prompt-file", str(prompt), "--response",
                  "2 cats and 3 dogs.\nAnswer: 5", "--hops", "2", "--json", str(out), "--top", "4")
    assert res.returncode == 0, res.stderr
    assert "rank" in res.stdout and len([l for l in res.stdout.splitlines() if l.strip().startswith(("1 ", "2 ", "3 ", "4 "))]) == 4
    data = json.loads(out.read_text())
    assert data["settings"]["hops"] == 2 and data["model"]["family"] == "qwen3"


def test_stop_token_and_hop0_flags_reach_the_trace(tmp_path):
    from flashtrace.cli import main

    base = ["trace", "--model", "tiny-llama", "--prompt", "Tom has 2 pens. Why?", "--response", "He has 2.\nAnswer: 2",
            "--no-progress", "--hops", "0"]
    from flashtrace.analysis.limits import DEFAULT_STOP_TOKENS

    for extra, stops, hop0 in [([], DEFAULT_STOP_TOKENS, "answer"), (["--no-stop-tokens"], "none", "answer"),
                               (["--stop-tokens", "punctuation", "--hop0", "generation"], "punctuation", "generation"),
                               (["--stop-tokens", ", . ?"], [",", ".", "?"], "answer")]:
        out = tmp_path / "t.json"
        assert main([*base, *extra, "--json", str(out)]) == 0
        settings = json.loads(out.read_text())["settings"]
        assert (settings["stop_tokens"], settings["hop0"]) == (stops, hop0)
    with pytest.raises(SystemExit):  # the alias and the option are exclusive
        main([*base, "--no-stop-tokens", "--stop-tokens", "punctuation"])


def test_bad_target_exits_2_with_one_line(capsys):
    res = run_main(capsys, "trace", "--model", "tiny-llama", "--prompt", "hi there", "--response", "ok", "--target",
                   "0:9999", "--no-progress")
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0 and "outside the sequence" in res.stderr


def test_missing_response_is_a_usage_error(capsys):
    res = run_main(capsys, "trace", "--model", "tiny-llama", "--prompt", "hi there")
    assert res.returncode == 2 and "--generate" in res.stderr


@pytest.mark.slow
def test_trace_on_the_default_model():
    res = run_cli("trace", "--prompt", "What is the capital of France?", "--response",
                  "The capital of France is Paris.", "--target", "response", "--hops", "1")
    assert res.returncode == 0, res.stderr
    assert "France" in res.stdout


def test_a_run_that_would_not_fit_exits_3(monkeypatch, capsys):
    from flashtrace.engine import estimate
    from flashtrace.cli import main

    monkeypatch.setattr(estimate, "available_bytes", lambda: 64 * 2**10)  # less than even a short run adds
    code = main(["trace", "--model", "tiny-llama", "--prompt", "hello there", "--response", "ok", "--no-progress"])
    assert code == 3
    assert "would fit" in capsys.readouterr().err


def test_export_writes_offline_html_and_refuses_bad_files(tmp_path, capsys):
    trace_file = tmp_path / "t.json"
    res = run_main(capsys, "trace", "--model", "tiny-llama", "--prompt", "Tom has 2 pens. How many pens?",
                   "--response", "Answer: 2", "--json", str(trace_file), "--no-progress")
    assert res.returncode == 0, res.stderr
    res = run_main(capsys, "export", str(trace_file), "--html", str(tmp_path / "t.html"))
    assert res.returncode == 0, res.stderr
    page = (tmp_path / "t.html").read_text()
    assert "<html" in page and "<script src=" not in page  # plotly.js is inlined
    (tmp_path / "bad.json").write_text('{"schema_version": 1, "tokens": "nope"}')
    res = run_main(capsys, "export", str(tmp_path / "bad.json"), "--html", str(tmp_path / "bad.html"))
    assert res.returncode == 2 and "invalid trace" in res.stderr and not (tmp_path / "bad.html").exists()


def test_methods_and_their_options_come_from_the_registry(tmp_path, capsys):
    """Any registered method runs from the CLI; an option the method does not declare (IFR has no
    threshold) is refused before the model loads, with exit code 2 (issue 18 items 3 and 7)."""
    from flashtrace.cli import main

    base = ["trace", "--model", "tiny-llama", "--prompt", "Tom has 2 pens. How many pens?", "--response",
            "Answer: 2", "--no-progress"]
    assert main(base + ["--method", "ifr", "--threshold", "0.1"]) == 2
    assert "ifr has no option threshold" in capsys.readouterr().err
    assert main(base + ["--option", "residual"]) == 2
    out = tmp_path / "r.json"
    assert main(base + ["--method", "perturbation", "--option", "batch_size=4", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["settings"]["method"] == "perturbation" and data["settings"]["hops"] == 0  # no --hops: 0 without hops
    assert data["extra"]["method_options"] == {"batch_size": 4}


@pytest.mark.parametrize("argv", [["--help"], *([name, "--help"] for name in command_names())])
def test_help_does_not_import_torch(argv):
    """Help is instant: `flashtrace --help` and every command's help used to import torch, transformers
    and numba (~5 s on this machine) for the method and model lists. Only the command being run builds its
    arguments, and the method registry, model aliases and evaluation method names import without torch."""
    code = ("import sys\nfrom flashtrace.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n"
            "    assert e.code == 0, e.code\nprint('TORCH', 'torch' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "usage: flashtrace" in res.stdout
    assert res.stdout.strip().endswith("TORCH False")


def test_an_unknown_flag_is_reported_with_the_commands_own_usage():
    res = run_cli("export", "t.json", "--nope")
    assert res.returncode == 2
    assert "usage: flashtrace export" in res.stderr
    assert "flashtrace export: error: unrecognized arguments: --nope" in res.stderr


def test_trace_with_generate_says_how_long_first_and_shows_a_bar_over_the_new_tokens(capsys, tmp_path):
    from flashtrace.engine.estimate import generation_note
    from flashtrace.engine.models import load_model

    args = ["trace", "--model", "tiny-llama", "--prompt", "Count to three.", "--generate", "--max-new-tokens", "6",
            "--json", str(tmp_path / "t.json")]
    assert main(args) == 0
    err = capsys.readouterr().err
    note = generation_note(load_model("tiny-llama"), "Count to three.", 6)
    assert err.startswith(note + "\n") and "Generating up to 6 tokens after a" in note
    assert re.search(r"generate: +\d+%.*\| *\d/6 ", err)  # a bar over the (at most) 6 new tokens
    assert main(args + ["--no-progress"]) == 0
    assert "generate:" not in capsys.readouterr().err


def test_help_states_each_default_once_and_never_none(capsys):
    """Issue 49 item 7: ``--help`` showed a hand-written default and then ``(default: None)``."""
    from flashtrace.cli import build_parser, command_names

    for name in command_names():
        parser = build_parser(only=name).commands[name]
        for action in parser._actions:
            if not action.help:
                continue
            shown = parser.formatter_class(prog="x")._get_help_string(action) % {**vars(action), "prog": "x"}
            assert "(default: None)" not in shown and "(default: False)" not in shown, (name, action.dest)
            assert shown.lower().count("default") <= max(1, action.help.lower().count("default")), (name, shown)
