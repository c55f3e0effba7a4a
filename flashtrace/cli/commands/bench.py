"""``flashtrace bench``: speed and memory of FlashTrace vs token-wise IFR vs a plain forward pass."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...base.errors import InputError

if TYPE_CHECKING:
    import argparse

HELP = "benchmark FlashTrace (K hops) against token-wise IFR and one plain forward pass, one process per cell"


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of `flashtrace bench` (model, lengths, modes, hops, repeats) to `parser`.

    Args:
        parser: The `bench` subcommand's parser; the options are added to it in place.
    """
    from ...engine.choices import model_help

    parser.add_argument("--model", default="smollm2-135m", help=model_help())
    parser.add_argument("--prompt-lengths", type=_ints, default=[512], help="comma-separated prompt lengths (tokens)")
    parser.add_argument("--response-lengths", type=_ints, default=[128, 512, 1536],
                        help="comma-separated response (target) lengths (tokens)")
    parser.add_argument("--modes", default="forward,flashtrace,ifr,ifr-rowwise",
                        help="comma-separated subset of forward, flashtrace, ifr, ifr-rowwise")
    parser.add_argument("--hops", type=int, default=1, help="FlashTrace hops")
    parser.add_argument("--target-tokens", type=int, default=0,
                        help="hop 0 (and token-wise IFR) attributes the last this many response tokens, later hops "
                             "the response before them (an answer after its reasoning); 0 = the whole response")
    parser.add_argument("--repeats", type=int, default=1,
                        help="time the forward, and FlashTrace's recording and attribution, this many times per "
                             "cell (same process) and report the medians")
    parser.add_argument("--threads", type=_ints, default=[1],
                        help="torch threads per cell; a comma-separated list (e.g. 2,1) runs the grid once per "
                             "count and writes one table per count")
    parser.add_argument("--settle", type=float, default=0.0,
                        help="before each cell, wait up to this many seconds for the 1-minute load to fall to the "
                             "idle rule (0.5 x max(1, CPUs - threads + 1)); a cell that starts above it is flagged")
    parser.add_argument("--ifr-max-rows", type=int, default=None,
                        help="time only this many IFR target rows per cell and extrapolate (marked *)")
    parser.add_argument("--ifr-sample-rows", type=int, default=None,
                        help="row-wise IFR: time this many rows at evenly spaced positions, one at a time, and "
                             "scale their sum to all target rows (marked *)")
    parser.add_argument("--warmup", action="store_true",
                        help="record and attribute a short prefix first, untimed, in each cell (GPU start-up, JIT)")
    parser.add_argument("--device", default=None, help="torch device (cpu, cuda)")
    parser.add_argument("--dtype", default=None, help="float32 (default), bfloat16, float16")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"), help="output folder")
    parser.add_argument("--name", default="speed_smollm2", help="file name stem for the JSON and Markdown")
    parser.add_argument("--cell-timeout", type=float, default=3600, help="seconds before a cell is abandoned")


def run(args: argparse.Namespace) -> int:
    """Time and measure the chosen modes over the length grid, print the table; returns the exit code.

    Args:
        args: The parsed options of `flashtrace bench`.

    Returns:
        0 when every cell was measured, 1 when a cell ended in an error.

    Raises:
        InputError: When a mode is unknown, --target-tokens is negative, --repeats is below 1, or
            --target-tokens leaves no response before the target for a response length.
    """
    from ...run.bench.sweep import MODES, run_sweep

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad = sorted(set(modes) - set(MODES))
    if bad:
        raise InputError(f"unknown mode(s) {', '.join(bad)}; choose from {', '.join(MODES)}")
    if args.target_tokens < 0 or args.repeats < 1:
        raise InputError("--target-tokens must be >= 0 and --repeats >= 1")
    bad_sizes = [r for r in args.response_lengths if r <= args.target_tokens]
    if bad_sizes:
        raise InputError(f"--target-tokens {args.target_tokens} leaves no response before the target for "
                         f"response length(s) {bad_sizes}")
    cells = [dict(model=args.model, n_prompt=p, n_response=r, mode=m, hops=args.hops, threads=t,
                  target_tokens=args.target_tokens, repeats=args.repeats,
                  device=args.device, dtype=args.dtype, max_rows=args.ifr_max_rows if m.startswith("ifr") else None,
                  **({"sample_rows": args.ifr_sample_rows} if m == "ifr-rowwise" and args.ifr_sample_rows else {}),
                  **({"warmup": True} if args.warmup else {}))
             for t in args.threads for p in args.prompt_lengths for r in args.response_lengths for m in modes]
    report = run_sweep(cells, args.out, args.name, timeout=args.cell_timeout, settle=args.settle)
    print((args.out / f"{args.name}.md").read_text())
    return 1 if any("error" in c for c in report["cells"]) else 0
