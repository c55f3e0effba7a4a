"""FlashTrace's own errors: one base class with an exit code, mapped by the CLI in one place; the
cost estimate before a run uses the hops that will run (issue 18 item 10)."""

import pytest

from flashtrace.cli import exit_code, main
from flashtrace.base.errors import EXIT_FAILURE, EXIT_TOO_BIG, EXIT_USAGE, FlashTraceError
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
    (ChecksumError, RuntimeError, EXIT_FAILURE), (ModelNotPreparedError, RuntimeError, EXIT_USAGE)])
def test_every_error_derives_from_the_base_and_keeps_its_builtin(cls, builtin, code):
    err = cls("x")
    assert isinstance(err, FlashTraceError) and isinstance(err, builtin)  # `except ValueError` still catches it
    assert exit_code(err) == code


def test_other_errors_map_by_kind():
    assert exit_code(ValueError("bad input")) == EXIT_USAGE
    assert exit_code(FileNotFoundError("nope")) == EXIT_USAGE
    assert exit_code(RuntimeError("boom")) == EXIT_FAILURE and exit_code(PermissionError("no")) == EXIT_FAILURE


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
