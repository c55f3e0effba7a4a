"""``flashtrace prepare``: install, check and convert a built-in model once (idempotent; quick afterwards)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ...engine.models.builtin import BUILTINS, DEFAULT_ALIAS, DTYPES, describe

if TYPE_CHECKING:
    import argparse

HELP = ("install, check and convert a built-in model once into a cached safetensors folder (quick afterwards): "
        + "; ".join(f"{m.name} ({m.gguf_bytes / 1e9:.2f} GB download, {m.converted_bytes() / 1e9:.1f} GB converted)"
                    for m in BUILTINS.values()))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of `flashtrace prepare` (model, dtype, list, quiet) to `parser`.

    Args:
        parser: The `prepare` subcommand's parser; the options are added to it in place.
    """
    parser.add_argument("--model", default=DEFAULT_ALIAS, choices=list(BUILTINS), metavar="NAME",
                        help="the built-in model: " + "; ".join(describe(m) for m in BUILTINS.values()))
    parser.add_argument("--dtype", default="float32", choices=DTYPES,
                        help="the converted weights' dtype. float32 is the default: on CPUs without native bfloat16 "
                             "products (AVX2, AVX-512 without BF16) a bfloat16 forward pass is several times slower "
                             "(docs/benchmarks.md, Built-in models); bfloat16 halves the disk and memory")
    parser.add_argument("--list", action="store_true", help="list the built-in models and which are prepared, then exit")
    parser.add_argument("--quiet", action="store_true", help="print nothing when the model is already prepared")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars (the stage lines still print)")


def _listing() -> str:
    from ...engine.choices import builtin_choices

    lines = []
    for choice in builtin_choices(here=True):
        state = f"prepared ({', '.join(choice.prepared)})" if choice.prepared else "not prepared"
        lines.append(f"{choice.label}\n    {state}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Prepare the model (nothing when it is already prepared) and say where it is; returns 0.

    Args:
        args: The parsed options of `flashtrace prepare`.

    Returns:
        0 (the model is prepared, or the list was printed).
    """
    from tqdm import tqdm

    from ...engine.estimate import cpu_slowdown
    from ...engine.models.prepare import Reporter, is_prepared, prepare_builtin

    if args.list:
        print(_listing())
        return 0
    already = is_prepared(args.model, args.dtype)
    say = (lambda text: None) if already else (lambda text: print(text, file=sys.stderr, flush=True))
    reporter = Reporter(say=say, bar=lambda **kw: tqdm(disable=args.no_progress, file=sys.stderr, **kw),
                        slowdown=cpu_slowdown())
    folder = prepare_builtin(args.model, args.dtype, reporter=reporter)
    if not (already and args.quiet):
        took = sum(reporter.timings.values())
        print(f"{args.model} ready ({args.dtype}): {folder}" + (f"  (prepared in {took:.0f} s)" if took else ""))
    return 0
