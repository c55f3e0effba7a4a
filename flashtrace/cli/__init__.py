"""The ``flashtrace`` command line. Each subcommand lives in `flashtrace.cli.commands.<name>` and
provides ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``.

Exit codes: 0 success, 1 failure while running, 2 bad usage or bad input, 3 refused because the run
would not fit in memory, 70 internal error (a bug: the traceback is written to a file whose path is
printed), 130 interrupted. `exit_code` maps an error to its code, in this one place: FlashTrace's own
errors carry theirs (`flashtrace.base.errors.FlashTraceError`); an OSError is the machine's answer (a
missing file, a full disk); any other exception is not one FlashTrace raised on purpose.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import warnings

from .. import __version__
from . import commands
from ..base.errors import (EXIT_FAILURE, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, EXIT_TOO_BIG, EXIT_USAGE,
                           FlashTraceError, FlashTraceWarning)

__all__ = ["main", "build_parser", "command_names", "exit_code", "EXIT_OK", "EXIT_FAILURE", "EXIT_USAGE", "EXIT_TOO_BIG"]


def command_names() -> list[str]:
    """The subcommands, as typed (``flashtrace <name>``).

    Returns:
        The names of the modules of `flashtrace.cli.commands` not starting with ``_``, sorted, with ``_`` written
            as ``-``.
    """
    return [m.name.replace("_", "-") for m in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name)
            if not m.name.startswith("_")]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with `only`, only that command's arguments are built.

    Some commands list methods and models in their help, which imports torch (seconds): `main`
    builds just the command being run, so ``flashtrace --help``, ``app``, ``export`` start at once.

    Args:
        only: A command name, or "" for none; None (the default) builds every command's arguments.

    Returns:
        The top-level parser, with one subparser per command (also in its ``commands`` attribute, name to
            parser); each subparser's ``_run`` default is its command's `run`.
    """
    parser = argparse.ArgumentParser(prog="flashtrace", description="FlashTrace Studio: multi-token attribution "
                                     "for reasoning language models.",
                                     epilog="exit codes: 0 success, 1 failure while running, 2 bad input or usage, "
                                     "3 refused (would not fit in memory), 70 internal error (a bug: its traceback "
                                     "is written to a file named on stderr), 130 interrupted")
    parser.add_argument("--version", action="version", version=f"flashtrace-studio {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.commands = sub.choices  # name -> its parser (`main` reports a command's bad arguments with its usage)
    for name in command_names():
        module = importlib.import_module(f"{commands.__name__}.{name.replace('-', '_')}")
        cmd = sub.add_parser(name, help=module.HELP.replace("%", "%%"), description=module.HELP,
                             formatter_class=_HelpFormatter)
        if only is None or only == name:
            module.add_arguments(cmd)
        cmd.set_defaults(_run=module.run)
    return parser


def _command_in(argv: list[str]) -> str:
    """The command `argv` runs: its first word that is not an option (the top level's options take no
    value), or "" when there is none."""
    return next((a for a in argv if not a.startswith("-")), "")


class _warnings_as_lines(warnings.catch_warnings):
    """FlashTrace's own warnings (`FlashTraceWarning`) printed as one ``warning: ...`` line on stderr, every time
    (a batch warns once per example); other warnings as Python shows them."""

    def __enter__(self):
        result = super().__enter__()
        shown = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            if issubclass(category, FlashTraceWarning):
                print(f"warning: {message}", file=sys.stderr)
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        warnings.simplefilter("always", FlashTraceWarning)
        return result


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Adds "(default: X)" to an option's help only where it tells something: not for an option without a
    default (None) or a flag (False), nor where the help already says its default in words."""

    def _get_help_string(self, action):
        text = action.help or ""
        if action.default is None or action.default is False or "default" in text.lower():
            return text
        return super()._get_help_string(action)


def main(argv: list[str] | None = None) -> int:
    """Run the `flashtrace` command line on `argv` and return its exit code.

    Args:
        argv: The command-line words after the program name; None (the default) reads `sys.argv[1:]`.

    Returns:
        The exit code: the command's own, 2 for no command, or `exit_code` of the error it ended with (130 when
            interrupted, 70 for an internal error, whose traceback is written to a file named on stderr).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(only=_command_in(argv))
    args, extra = parser.parse_known_args(argv)
    if extra:  # with the command's own usage line, not the top level's
        parser.commands.get(args.command, parser).error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "_run", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        with _warnings_as_lines():
            return int(args._run(args) or EXIT_OK)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (FlashTraceError, OSError, MemoryError) as exc:
        _error(args.command, exc)
        return exit_code(exc)
    except Exception as exc:  # noqa: BLE001 - a bug: one line, and the traceback in a file
        if os.environ.get("FLASHTRACE_DEBUG"):
            raise
        report = _traceback_file(args.command, exc)
        _error(args.command, exc, f"internal error ({type(exc).__name__}; the traceback is in {report}, please "
                                  "report it): ")
        return EXIT_INTERNAL


def _traceback_file(command: str, exc: BaseException) -> str:
    """Write `exc`'s traceback (with the command line and versions) to a new file in the temporary folder;
    returns its path (or why it could not be written)."""
    import platform
    import tempfile
    import traceback

    try:
        fd, path = tempfile.mkstemp(prefix=f"flashtrace-{command}-error-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(f"flashtrace {__version__}, Python {platform.python_version()}, {platform.platform()}\n")
            out.write(f"command: flashtrace {' '.join(sys.argv[1:])}\n\n")
            out.write("".join(traceback.format_exception(exc)))
        return path
    except OSError as write_error:
        return f"(no file: {write_error}; rerun with FLASHTRACE_DEBUG=1 to see it)"


def _error(command: str, exc: BaseException, prefix: str = "") -> None:
    """One line on stderr, whatever the message holds (pydantic and torch messages span lines)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, MemoryError):
        text = f"out of memory ({text})"
    print(f"flashtrace {command}: error: {prefix}{text[:1000]}", file=sys.stderr)


def exit_code(exc: BaseException) -> int:
    """The exit code for an error.

    Args:
        exc: The error a command ended with.

    Returns:
        A FlashTrace error's own code; 130 for an interrupt; running out of memory 3; a missing file is a usage
            error (2), another OSError a failure while running (1); anything else is an internal error (70).
    """
    if isinstance(exc, FlashTraceError):
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(exc, MemoryError):
        return EXIT_TOO_BIG
    if isinstance(exc, OSError):
        return EXIT_USAGE if isinstance(exc, FileNotFoundError) else EXIT_FAILURE
    return EXIT_INTERNAL

