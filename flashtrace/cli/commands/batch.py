"""``flashtrace batch``: trace every line of a JSONL file into a folder of traces (a Library collection)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ...base.errors import InputError

if TYPE_CHECKING:
    import argparse

HELP = ("trace every prompt of a JSONL file into one trace file each (resumable; --ray spreads the "
        "examples over a Ray cluster)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of `flashtrace batch` (input JSONL, output, model, method, Ray) to `parser`.

    Args:
        parser: The `batch` subcommand's parser; the options are added to it in place.
    """
    from ...engine.choices import model_help
    from ...analysis.limits import DEFAULT_HOPS, DEFAULT_STOP_TOKENS, HOP0_SPANS, MAX_HOPS, RECURSIVE_SPANS
    from ...engine.attribution import METHODS

    parser.add_argument("input", type=Path, help="JSONL file: one object per line with prompt, and optionally response "
                        "or generate, target, hops, title, gold, task")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", type=Path, help="output folder (a rerun into it skips finished examples)")
    where.add_argument("--collection", help="write into this collection (a folder) of the app's library")
    parser.add_argument("--model", default="smollm2-135m", help=model_help())
    parser.add_argument("--method", default="flashtrace", choices=sorted(METHODS), help="attribution method")
    parser.add_argument("--option", action="append", default=[], metavar="NAME=VALUE", help="a method option (repeatable)")
    parser.add_argument("--hops", type=int, default=None, help=f"hops for lines without their own (0-{MAX_HOPS}; default "
                        f"{DEFAULT_HOPS}, docs/evaluation.md; 0 for methods without hops)")
    parser.add_argument("--target", default="value", help="target for lines without their own: value (the answer's "
                        "value when the answer line restates the question, else the whole answer), answer, response, "
                        "reasoning or START:END")
    parser.add_argument("--recursive", default=RECURSIVE_SPANS[0], choices=RECURSIVE_SPANS,
                        help="span re-attributed by hops >= 1")
    stops = parser.add_mutually_exclusive_group()
    stops.add_argument("--stop-tokens", default=None, metavar="paper|punctuation|none|LIST",
                       help=f"tokens with weight 0 in targets and scores (as in flashtrace trace; default "
                            f"{DEFAULT_STOP_TOKENS})")
    stops.add_argument("--no-stop-tokens", action="store_true", help="alias of --stop-tokens none")
    parser.add_argument("--hop0", default=HOP0_SPANS[0], choices=HOP0_SPANS,
                        help="span of hop 0: the target, or the whole generation")
    parser.add_argument("--no-chat-template", action="store_true", help="use the raw prompt text, no chat template")
    parser.add_argument("--generate", action="store_true", help="generate the response of lines that have none")
    parser.add_argument("--reasoning-instruction", action="store_true",
                        help="when generating, append the reasoning instruction to the prompt (as `trace`; its tokens "
                             "are template text, never evidence)")
    parser.add_argument("--max-new-tokens", type=int, default=256, help="generation length limit")
    parser.add_argument("--steps", action="store_true", help="also attribute every reasoning step (hop graph data)")
    parser.add_argument("--dtype", default=None, help="float32 (default), bfloat16 or float16")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads without --ray (on a busy "
                        "machine 1 can be much faster than 2; a Ray worker uses --num-cpus-per-worker threads)")
    parser.add_argument("--device", default=None, help="torch device without --ray (Ray GPU workers use their GPU)")
    ray = parser.add_argument_group("Ray (the ray extra: README, Install)")
    ray.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                     help="run on Ray: alone, a cluster started on this machine for the run; 'auto' joins the "
                          "cluster of `ray start --head`; or ray://HOST:10001")
    ray.add_argument("--workers", type=int, default=None, help="Ray workers (default: as many as the cluster's "
                     "resources hold, at most one per example)")
    ray.add_argument("--num-cpus-per-worker", type=float, default=1, help="CPUs Ray reserves for each worker")
    ray.add_argument("--num-gpus-per-worker", type=float, default=0, help="GPUs Ray reserves for each worker "
                     "(> 0: the worker runs on its GPU)")
    ray.add_argument("--max-retries", type=int, default=2, help="retries of an example whose worker died")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    """Trace every line of the input file into the output folder or collection; returns the exit code.

    Args:
        args: The parsed options of `flashtrace batch`.

    Returns:
        0 when every example was traced or kept, 1 when one failed or a line was bad.

    Raises:
        FileNotFoundError: When the input file does not exist.
        InputError: When --workers or --num-gpus-per-worker is given without --ray, or --threads is below 1.
    """
    from tqdm import tqdm

    from ...run.batch import BatchSettings, run_batch
    from .trace import method_options
    from ...engine.inputs import DEFAULT_STOP_TOKENS, parse_stop_tokens
    from ...base.fileio import check_folder
    from ...store.library import default_root, sanitize_name

    if not args.input.is_file():
        raise FileNotFoundError(f"no input file {args.input}")
    if args.ray is not None:
        from ...run.distributed import require_ray

        require_ray()  # before anything loads or is written
    if args.ray is None and (args.workers or args.num_gpus_per_worker):
        raise InputError("--workers and --num-gpus-per-worker need --ray")
    if args.threads is not None:
        if args.threads < 1:
            raise InputError("--threads must be at least 1")
        import torch

        torch.set_num_threads(args.threads)
    out = args.out if args.out is not None else default_root() / sanitize_name(args.collection)
    check_folder(out, "--out" if args.out is not None else "--collection")
    settings = BatchSettings(
        model=args.model, method=args.method, options=method_options(args.option), hops=args.hops, target=args.target,
        recursive=args.recursive,
        stop_tokens="none" if args.no_stop_tokens else parse_stop_tokens(args.stop_tokens or DEFAULT_STOP_TOKENS),
        hop0=args.hop0, chat_template=not args.no_chat_template, generate=args.generate,
        reasoning_instruction=args.reasoning_instruction,
        max_new_tokens=args.max_new_tokens, steps=args.steps, dtype=args.dtype, device=args.device)
    state = {"bar": None}

    def plan(total: int, todo: int, bad) -> None:
        for b in bad:
            print(f"{args.input}:{b.line}: {b.error}", file=sys.stderr)
        print(f"{total} examples, {total - todo} already in {out}, {todo} to trace"
              + (f" on Ray ({args.ray})" if args.ray and todo else ""), file=sys.stderr)
        state["bar"] = tqdm(total=todo, desc="batch", unit="ex", disable=args.no_progress)

    def record(rec: dict) -> None:
        bar = state["bar"]
        if bar is None or rec["status"] == "skipped":
            return
        bar.update(1)
        if rec["status"] == "failed":
            bar.write(f"line {rec['line']}: failed: {rec['error'].splitlines()[0][:300]}", file=sys.stderr)

    try:
        result = run_batch(args.input, out, settings, ray_address=args.ray, workers=args.workers,
                           num_cpus_per_worker=args.num_cpus_per_worker, num_gpus_per_worker=args.num_gpus_per_worker,
                           max_retries=args.max_retries, on_record=record, on_plan=plan)
    finally:
        if state["bar"] is not None:
            state["bar"].close()
    print(f"{result.count('done')} traced, {result.count('skipped')} kept, {result.count('failed')} failed, "
          f"{len(result.bad)} bad lines in {result.seconds:.1f} s; traces in {out}/, summary in "
          f"{out}/_batch/summary.json")
    return 0 if result.ok else 1
