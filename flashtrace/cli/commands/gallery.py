"""``flashtrace gallery``: rebuild (or list) the precomputed traces the app ships with."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from ...base.errors import InputError

if TYPE_CHECKING:
    import argparse

HELP = "rebuild the app's gallery of precomputed traces (assets/gallery) with the built-in model, or list it"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of `flashtrace gallery` (output, model, entries, list) to `parser`.

    Args:
        parser: The `gallery` subcommand's parser; the options are added to it in place.
    """
    from ...engine.choices import model_help
    from ...evaluate.gallery import GALLERY

    parser.add_argument("--out", type=Path, default=None,
                        help="folder to write the traces and index.json to (default: the checkout's assets/gallery)")
    parser.add_argument("--model", default="smollm2-135m", help=model_help())
    parser.add_argument("--only", nargs="+", metavar="NAME", default=None,
                        help=f"rebuild only these entries ({', '.join(s.name for s in GALLERY)})")
    parser.add_argument("--list", action="store_true", help="list the current gallery and exit")
    parser.add_argument("--spec", type=Path, default=None, metavar="FILE",
                        help="build a gallery the model writes itself from this JSON spec (tasks with their prompt, "
                             "gold facts, right answer and, for an honest failure, the edit that fixes it; "
                             "assets/gallery_spec.json) into --out (required with --spec); each task generates with "
                             "its own built-in model, greedy; tasks already built there are kept, --only names some")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (with --spec)")


def run(args: argparse.Namespace) -> int:
    """List the gallery, or rebuild its traces and index; returns the exit code.

    Args:
        args: The parsed options of `flashtrace gallery`.

    Returns:
        0 when the gallery was listed or built, 1 when --list finds it empty.

    Raises:
        InputError: When --spec is given without --out.
    """
    from ...evaluate.gallery import build_gallery
    from ...store.gallery import gallery_dir, list_gallery

    if args.list:
        items = list_gallery(args.out or gallery_dir())
        if not items:
            print(f"the gallery in {args.out or gallery_dir()} is empty; build it with `flashtrace gallery`")
            return 1
        for it in items:
            print(f"{it.name:<16} {it.task:<11} {it.model:<14} {it.n_tokens:>6} tokens  hops {it.hops}  {it.title}")
        return 0
    if args.out is not None:  # a file, a named pipe, a device or a link to one: refused before any model loads
        from ...base.fileio import check_folder

        check_folder(args.out, "--out")
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    if args.spec is not None:
        return _build_spec(args)
    start = time.perf_counter()
    items = build_gallery(args.out, model=args.model, only=args.only)
    total = sum(it.size for it in items)
    print(f"gallery: {len(items)} traces, {total / 1e6:.2f} MB in {args.out or gallery_dir()}, "
          f"{time.perf_counter() - start:.0f} s")
    for it in items:
        print(f"  {it.name:<18} {it.note}")
    return 0


def _build_spec(args) -> int:
    """``--spec FILE --out DIR``: the tasks built into DIR with a progress bar over their predicted time."""
    import sys

    from tqdm import tqdm

    from ...evaluate.gallery_spec import build_from_spec, load_spec

    if args.out is None:
        raise InputError("--spec needs --out DIR (the shipped gallery in assets/gallery is not replaced in place)")
    spec = load_spec(args.spec)
    start = time.perf_counter()
    bar = None if args.no_progress else (lambda total: tqdm(total=total, unit="s", desc="gallery", leave=False))
    written = build_from_spec(spec, args.out, args.only, log=lambda line: print(line, file=sys.stderr), bar=bar)
    size = sum(p.stat().st_size for p in written)
    print(f"{len(written)} trace files, {size / 1e6:.2f} MB in {args.out}, {time.perf_counter() - start:.0f} s")
    return 0
