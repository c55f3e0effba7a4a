"""`flashtrace ARGS` run by `main` in the test's own process (no interpreter and torch start per call)."""

from __future__ import annotations

from types import SimpleNamespace

from flashtrace.cli import main


def run_main(capsys, *args: str) -> SimpleNamespace:
    """The command's ``returncode`` (argparse's usage errors included), ``stdout`` and ``stderr``."""
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code
    out = capsys.readouterr()
    return SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err)
