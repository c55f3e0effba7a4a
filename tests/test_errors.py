"""FlashTrace's own errors: one base class with an exit code, mapped by the CLI in one place; the
cost estimate before a run uses the hops that will run (issue 18 item 10)."""

import pytest

from flashtrace.cli import exit_code, main
from flashtrace.base.errors import (EXIT_FAILURE, EXIT_INTERNAL, EXIT_TOO_BIG, EXIT_USAGE, FlashTraceError, InputError,
                                   MissingDependencyError)
from flashtrace.base.fileio import DestinationError, FileTooLargeError, NotAFileError
from flashtrace.base.json_budget import JsonBudgetError
from flashtrace.engine.models.gguf_convert import GGUFConversionError
from flashtrace.engine.estimate import ResourceError
from flashtrace.store.library import LibraryError
from flashtrace.engine.models import ModelLoadError, UnsupportedModelError
from flashtrace.engine.models.chunks import ChecksumError, PrepareError
from flashtrace.engine.models.prepare import ModelNotPreparedError
from flashtrace.analysis.schema import TraceValidationError
from flashtrace.run.tracing import prepare


@pytest.mark.parametrize("cls, builtin, code", [
    (ModelLoadError, RuntimeError, EXIT_USAGE), (ResourceError, RuntimeError, EXIT_TOO_BIG),
    (TraceValidationError, ValueError, EXIT_USAGE), (LibraryError, ValueError, EXIT_USAGE),
    (UnsupportedModelError, ValueError, EXIT_USAGE), (PrepareError, RuntimeError, EXIT_FAILURE),
    (ChecksumError, RuntimeError, EXIT_FAILURE), (ModelNotPreparedError, RuntimeError, EXIT_USAGE),
    (InputError, ValueError, EXIT_USAGE), (DestinationError, ValueError, EXIT_USAGE),
    (NotAFileError, ValueError, EXIT_USAGE), (FileTooLargeError, ValueError, EXIT_USAGE),
    (JsonBudgetError, ValueError, EXIT_USAGE), (GGUFConversionError, RuntimeError, EXIT_FAILURE),
    (MissingDependencyError, RuntimeError, EXIT_FAILURE)])
def test_every_error_derives_from_the_base_and_keeps_its_builtin(cls, builtin, code):
    err = cls("x")
    assert isinstance(err, FlashTraceError) and isinstance(err, builtin)  # `except ValueError` still catches it
    assert exit_code(err) == code


def test_other_errors_map_by_kind():
    """Only FlashTrace's own errors and the machine's (OSError) are the user's; a ValueError or RuntimeError
    FlashTrace did not raise on purpose is a bug (issue 47 item 2)."""
    assert exit_code(FileNotFoundError("nope")) == EXIT_USAGE and exit_code(PermissionError("no")) == EXIT_FAILURE
    assert exit_code(ValueError("from numpy")) == EXIT_INTERNAL and exit_code(RuntimeError("boom")) == EXIT_INTERNAL


def test_a_numpy_error_inside_a_command_is_an_internal_error_with_its_traceback_in_a_file(tmp_path, capsys,
                                                                                          monkeypatch):
    """A bug (here numpy refusing to reshape, raised inside `flashtrace show`) is not reported as the user's bad
    input: exit 70, one line naming the error and a file holding the traceback."""
    import numpy as np

    from flashtrace.store.gallery import gallery_path
    import flashtrace.cli.commands.show as show

    def broken(*_args, **_kwargs):
        return np.arange(3).reshape(2, 2)

    monkeypatch.setattr(show, "run", broken)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.delenv("FLASHTRACE_DEBUG", raising=False)
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    assert main(["show", str(gallery_path("arithmetic"))]) == EXIT_INTERNAL
    err = capsys.readouterr().err.strip()
    assert err.startswith("flashtrace show: error: internal error (ValueError; the traceback is in ")
    report = next(tmp_path.glob("flashtrace-show-error-*.txt"))
    assert str(report) in err and "cannot reshape array" in err
    text = report.read_text()
    assert "Traceback" in text and "reshape" in text and "command: flashtrace" in text


def test_the_cli_exits_with_the_errors_code(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 1}')
    assert main(["export", str(bad), "--html", str(tmp_path / "x.html")]) == EXIT_USAGE
    assert main(["trace", "--model", str(tmp_path / "missing-model"), "--prompt", "hi", "--response", "ok",
                 "--no-progress"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("error:") == 2


def test_the_cost_estimate_uses_the_hops_that_will_run(tiny_llama):
    prompt, response = "Ann has 3 balls. Ben has 4. How many?", "3 + 4 = 7.\nAnswer: 7"
    seen = {}
    for hops in (0, 3):
        prepare(tiny_llama, prompt, response, hops=hops, on_estimate=lambda est, h=hops: seen.__setitem__(h, est))
    assert seen[0].hops == 0 and seen[3].hops == 3
    assert seen[3].attribution_s > seen[0].attribution_s
