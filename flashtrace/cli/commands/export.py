"""``flashtrace export``: a saved trace as standalone offline HTML, validated JSON, or PNG/SVG figures."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...base.errors import InputError, MissingDependencyError

if TYPE_CHECKING:
    import argparse

HELP = "export a trace file as one standalone offline HTML page, validated JSON, or PNG/SVG figures"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of `flashtrace export` (trace file, HTML, JSON, PNG, SVG) to `parser`.

    Args:
        parser: The `export` subcommand's parser; the options are added to it in place.
    """
    parser.add_argument("trace", type=Path, help="trace JSON file (validated on read)")
    parser.add_argument("--html", type=Path, default=None, help="write a standalone HTML page (works offline)")
    parser.add_argument("--json", type=Path, default=None, help="write the validated trace as JSON")
    parser.add_argument("--png", type=Path, default=None, help="write the token heatmap as PNG (needs Chromium)")
    parser.add_argument("--svg", type=Path, default=None, help="write the token heatmap as SVG (needs Chromium)")
    parser.add_argument("--hop", type=int, default=None, help="hop shown in PNG/SVG (default: the combined view)")
    from ...analysis.limits import GRAPH_THRESHOLD_RANGE

    parser.add_argument("--threshold", type=float, default=0.05,
                        help=f"hop-graph edge threshold in the HTML page (in {GRAPH_THRESHOLD_RANGE})")


def run(args: argparse.Namespace) -> int:
    """Write the trace in each format asked for; returns the exit code.

    Args:
        args: The parsed options of `flashtrace export`.

    Returns:
        0 (every format asked for was written).

    Raises:
        InputError: When no output format is given, or a destination or the threshold is refused.
        MissingDependencyError: When a PNG or SVG cannot be rendered (kaleido or a Chromium browser missing).
    """
    from ...base.fileio import atomic_write_bytes, atomic_write_text, check_destination, check_not_input
    from ...analysis.limits import check_graph_threshold
    from ...analysis.schema import Trace

    if not any((args.html, args.json, args.png, args.svg)):
        raise InputError("nothing to do: give at least one of --html, --json, --png, --svg")
    check_graph_threshold(args.threshold, "--threshold")
    for flag in ("html", "json", "png", "svg"):
        if getattr(args, flag):
            check_destination(getattr(args, flag), f"--{flag}")
            if flag != "json":  # --json of the input rewrites the same trace, which is harmless
                check_not_input(getattr(args, flag), args.trace, f"--{flag}")
    trace = Trace.load(args.trace)
    if args.json:
        atomic_write_text(args.json, trace.to_json(), "--json")
        print(f"JSON written to {args.json}")
    if args.html:
        from ...viz.report import trace_report_html

        atomic_write_text(args.html, trace_report_html(trace, graph_threshold=args.threshold), "--html")
        print(f"HTML written to {args.html}")
    if args.png or args.svg:
        from ...viz.heatmap import token_heatmap

        fig = token_heatmap(trace, hop=args.hop)
        for flag, path in (("--png", args.png), ("--svg", args.svg)):
            if not path:
                continue
            try:  # rendered to bytes, then written like every output (atomically, never over a special file)
                image = fig.to_image(format=flag[2:])
            except Exception as exc:  # kaleido missing, or no Chrome/Chromium to render with
                raise MissingDependencyError(f"cannot render {flag[2:].upper()} here ({type(exc).__name__}): install "
                                   "kaleido and a Chromium browser (apt-get install chromium); HTML and JSON "
                                   "export work without them") from None
            atomic_write_bytes(path, image, flag)
            print(f"figure written to {path}")
    return 0

