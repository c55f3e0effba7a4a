"""``flashtrace show``: print what a saved trace says (the summary ``flashtrace trace`` prints after a run)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...base.errors import InputError

if TYPE_CHECKING:
    import argparse

HELP = "print the summary of a saved trace file: what reached the input and the top evidence at each depth"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of `flashtrace show` (trace file, how many top words) to `parser`.

    Args:
        parser: The `show` subcommand's parser; the options are added to it in place.
    """
    parser.add_argument("trace", type=Path, help="trace JSON file (validated on read)")
    parser.add_argument("--top", type=int, default=10, help="how many prompt words to list")


def run(args: argparse.Namespace) -> int:
    """Print the summary of a trace file; returns the exit code.

    Args:
        args: The parsed options of `flashtrace show` (trace, top).

    Returns:
        0 (the summary was printed).

    Raises:
        InputError: When --top is below 1.
    """
    from ...analysis.schema import Trace
    from ..summary import print_summary

    if args.top < 1:
        raise InputError(f"--top must be at least 1, got {args.top}")
    print_summary(Trace.load(args.trace), args.top)
    return 0
