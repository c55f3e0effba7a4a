"""``flashtrace show``: print what a saved trace says (the summary ``flashtrace trace`` prints after a run)."""

from __future__ import annotations

from pathlib import Path

from ...base.errors import InputError

HELP = "print the summary of a saved trace file: what reached the input and the top evidence at each depth"


def add_arguments(parser) -> None:
    """Add the options of `flashtrace show` (trace file, how many top words) to `parser`."""
    parser.add_argument("trace", type=Path, help="trace JSON file (validated on read)")
    parser.add_argument("--top", type=int, default=10, help="how many prompt words to list")


def run(args) -> int:
    """Print the summary of a trace file; returns the exit code."""
    from ...analysis.schema import Trace
    from ..summary import print_summary

    if args.top < 1:
        raise InputError(f"--top must be at least 1, got {args.top}")
    print_summary(Trace.load(args.trace), args.top)
    return 0
