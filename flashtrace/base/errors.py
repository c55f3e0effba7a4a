"""The errors FlashTrace raises on purpose, and the command line's exit codes.

Every one derives from `FlashTraceError`, which carries the exit code the CLI returns for it (mapped
in one place, `flashtrace.cli.main`). Each also stays a subclass of the builtin it derived from
before (ValueError or RuntimeError), so ``except ValueError`` callers keep working.
"""

from __future__ import annotations

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_TOO_BIG, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_INTERNAL = 70  # a bug (sysexits' EX_SOFTWARE): an error FlashTrace did not raise on purpose


class FlashTraceError(Exception):
    """Base of FlashTrace's own errors; `exit_code` is what the CLI exits with."""

    exit_code = EXIT_FAILURE


class InputError(FlashTraceError, ValueError):
    """A deliberate refusal of bad input (an argument, a file, a setting) with a message saying what is wrong;
    still a ValueError for ``except ValueError`` callers."""

    exit_code = EXIT_USAGE


class MissingDependencyError(FlashTraceError, RuntimeError):
    """An optional package (an extra) or program the asked-for work needs is not installed; the message names
    the one command that installs it."""


class FlashTraceWarning(UserWarning):
    """Base of FlashTrace's own warnings: the work went on, but on a guess the caller should know about."""


class AnswerGuessedWarning(FlashTraceWarning):
    """The response has no answer line (no ``\\boxed{}``, no "Answer:", no ``</think>``), so the answer target is
    its last line: often a reasoning step cut off by ``max_new_tokens``, not an answer."""


__all__ = ["FlashTraceError", "InputError", "MissingDependencyError", "FlashTraceWarning", "AnswerGuessedWarning", "EXIT_OK", "EXIT_FAILURE",
           "EXIT_USAGE", "EXIT_TOO_BIG", "EXIT_INTERRUPTED", "EXIT_INTERNAL"]
