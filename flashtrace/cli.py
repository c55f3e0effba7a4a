"""The ``flashtrace`` command line. Each subcommand lives in `flashtrace.commands.<name>` and
provides ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``.

Exit codes: 0 success, 1 failure while running, 2 bad usage or bad input, 3 refused because the run
would not fit in memory, 130 interrupted. `exit_code` maps an error to its code, in this one place:
FlashTrace's own errors carry theirs (`flashtrace.errors.FlashTraceError`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys

from . import __version__, commands
from .errors import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_TOO_BIG, EXIT_USAGE, FlashTraceError

__all__ = ["main", "build_parser", "exit_code", "EXIT_OK", "EXIT_FAILURE", "EXIT_USAGE", "EXIT_TOO_BIG"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="flashtrace", description="FlashTrace Studio: multi-token attribution "
                                     "for reasoning language models.",
                                     epilog="exit codes: 0 success, 1 failure while running, 2 bad input or usage, "
                                     "3 refused (would not fit in memory), 130 interrupted")
    parser.add_argument("--version", action="version", version=f"flashtrace-studio {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        cmd = sub.add_parser(info.name.replace("_", "-"), help=module.HELP.replace("%", "%%"), description=module.HELP,
                             formatter_class=argparse.ArgumentDefaultsHelpFormatter)
        module.add_arguments(cmd)
        cmd.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args._run(args) or EXIT_OK)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (FlashTraceError, ValueError, OSError, RuntimeError, MemoryError) as exc:
        _error(args.command, exc)
        return exit_code(exc)
    except Exception as exc:  # noqa: BLE001 - a bug: still one line (the traceback with FLASHTRACE_DEBUG=1)
        if os.environ.get("FLASHTRACE_DEBUG"):
            raise
        _error(args.command, exc, f"internal error ({type(exc).__name__}; rerun with FLASHTRACE_DEBUG=1 "
                                  "for the traceback): ")
        return EXIT_FAILURE


def _error(command: str, exc: BaseException, prefix: str = "") -> None:
    """One line on stderr, whatever the message holds (pydantic and torch messages span lines)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, MemoryError):
        text = f"out of memory ({text})"
    print(f"flashtrace {command}: error: {prefix}{text[:1000]}", file=sys.stderr)


def exit_code(exc: BaseException) -> int:
    """The exit code for an error: a FlashTrace error's own; other bad input (ValueError, a missing
    file) is a usage error; anything else a failure while running."""
    if isinstance(exc, FlashTraceError):
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(exc, MemoryError):
        return EXIT_TOO_BIG
    return EXIT_USAGE if isinstance(exc, (ValueError, FileNotFoundError)) else EXIT_FAILURE

if __name__ == "__main__":
    sys.exit(main())
