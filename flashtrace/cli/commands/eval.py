"""``flashtrace eval``: faithfulness of FlashTrace and baselines on tasks with gold spans."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ...base.errors import InputError

if TYPE_CHECKING:
    import argparse

EVAL_LENGTH = 100  # the command's default prompt length, as in the published runs (the tasks' own run 200-512 tokens)
HELP = "evaluate attribution faithfulness (RISE, MAS, Recovery@10%) on synthetic tasks or a JSONL file"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of `flashtrace eval` (model, tasks or JSONL, methods, sizes, output) to `parser`.

    Args:
        parser: The `eval` subcommand's parser; the options are added to it in place.
    """
    from ...engine.choices import model_help
    from ...engine.models.scoring import SCORE_DTYPES
    from ...evaluate.names import DEFAULT_METHODS
    from ...evaluate.tasks import TASKS

    parser.add_argument("--model", default="smollm2-135m", help=model_help())
    parser.add_argument("--task", default="all",
                        help=f"comma-separated tasks ({', '.join(TASKS)}) or 'all'; ignored with --jsonl")
    parser.add_argument("--jsonl", type=Path, default=None,
                        help="evaluate your own examples: one JSON object per line with prompt, response, "
                             "optional answer and gold ([[start, end], ...] or gold_text [...])")
    parser.add_argument("--vartrack-layout", default=None, choices=("text", "lines", "words"),
                        help="how vartrack states its chains: 'text' (VAR X = VAR Y among filler, the default with "
                             "--protocol templated and in the published runs), 'lines' (one per line) or 'words' "
                             "(people and locker codes in plain prose, the default with paper or own)")
    parser.add_argument("--n", type=int, default=10, help="examples per task (seeds seed..seed+n-1)")
    parser.add_argument("--length", type=int, default=EVAL_LENGTH,
                        help=f"approximate prompt length in tokens (default {EVAL_LENGTH}, as in the published runs of "
                             "docs/evaluation.md; the run prints its predicted time first; 0 for each task's own "
                             "default, e.g. needle 512)")
    parser.add_argument("--methods", default="flashtrace,ifr,attention",
                        help="comma-separated: flashtrace (expands over --hops), flashtrace-kK, "
                             "flashtrace-kK-nostop (stop tokens keep their score), "
                             f"{', '.join(m for m in DEFAULT_METHODS if not m.startswith('flashtrace'))}")
    parser.add_argument("--hops", default="0,1,2", help="hop counts K for 'flashtrace' (comma-separated)")
    parser.add_argument("--seed", type=int, default=0, help="first example seed")
    parser.add_argument("--k", type=int, default=20,
                        help="deletion groups of the RISE/MAS curves (20, as the paper); 0 runs no deletion curve: "
                             "Recovery@10%% only, the attributions alone (no RISE or MAS), far faster on a big model")
    parser.add_argument("--ig-steps", type=int, default=16, help="integrated-gradients steps (batched)")
    parser.add_argument("--batch-size", type=int, default=16, help="sequences per forward pass when scoring")
    parser.add_argument("--target", default=None,
                        help="span explained and scored: answer, value (the answer's number or short phrase, not a "
                             "line restating the question) or response; default: answer with --protocol templated, "
                             "value with paper or own")
    from ...evaluate.protocols import PAPER_WRITER, PROTOCOLS, WRITE_TOKENS

    parser.add_argument("--protocol", default="templated", choices=PROTOCOLS,
                        help="where the reasoning comes from: 'templated' (default), the task's own templated chain; "
                             f"'paper', a writer model (--writer, default {PAPER_WRITER}) answers each prompt "
                             "greedily, only its right answers are kept and the model under test is teacher-forced "
                             "on them; 'own', the model under test writes its own reasoning, right and wrong answers "
                             "both kept and every metric split by them. Written responses are kept in OUT/responses/")
    parser.add_argument("--writer", default=None,
                        help=f"the model that writes the reasoning under --protocol paper (default {PAPER_WRITER})")
    parser.add_argument("--write-tokens", type=int, default=WRITE_TOKENS,
                        help=f"new tokens a written response may use (default {WRITE_TOKENS}; greedy, asked to think "
                             "step by step and end with an 'Answer:' line)")
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--dtype", default=None, help="model dtype: float32 (default), bfloat16, float16")
    parser.add_argument("--score-dtype", default="auto", choices=SCORE_DTYPES,
                        help="precision of the deletion curves' forward passes: 'auto' (default) scores a float32 "
                             "model in a copy whose matrix products run in bfloat16 where the processor multiplies "
                             "bfloat16 fast (1.6-2.3x faster on the CPUs with AMX we measured; docs/evaluation.md "
                             "measures the effect on the metrics), else in the model's dtype; 'model' always uses "
                             "the model itself")
    parser.add_argument("--device", default=None, help="torch device")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--no-resume", action="store_true", help="recompute examples already in --out (by default an example "
                        "written for the same prompt, --target and --k is kept, and only methods it lacks are added)")
    parser.add_argument("--report-only", action="store_true", help="only rebuild the summary and charts of --out")
    parser.add_argument("--no-plots", action="store_true", help="skip the charts (report.html, metrics.png, deletion_curves.png)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    ray = parser.add_argument_group("Ray (the ray extra: README, Install)")
    ray.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                     help="run the examples on Ray: alone, a cluster started on this machine for the run; 'auto' "
                          "joins the cluster of `ray start --head`; or ray://HOST:10001")
    ray.add_argument("--workers", type=int, default=None, help="Ray workers (default: as many as the cluster holds)")
    ray.add_argument("--num-cpus-per-worker", type=float, default=1, help="CPUs Ray reserves for each worker")
    ray.add_argument("--num-gpus-per-worker", type=float, default=0, help="GPUs Ray reserves for each worker "
                     "(> 0: the worker runs on its GPU)")
    ray.add_argument("--max-retries", type=int, default=2, help="retries of an example whose worker died")


def _task_names(task: str) -> list[str]:
    """The tasks ``--task`` names, 'all' spelled out (so a folder's settings say which tasks it was run on, even
    after new tasks are added to the registry)."""
    from ...evaluate.tasks import TASKS

    return list(TASKS) if task == "all" else [t.strip() for t in task.split(",") if t.strip()]


def _examples(args):
    from ...evaluate.tasks import TASKS, load_jsonl, make_example

    if args.jsonl is not None:
        for i, ex in enumerate(load_jsonl(args.jsonl)):
            yield f"{ex.task}-{i:04d}", ex
        return
    tasks = _task_names(args.task)
    for t in tasks:
        if t not in TASKS:
            raise InputError(f"unknown task '{t}'; available: {', '.join(TASKS)}")
    layout = args.vartrack_layout or ("text" if args.protocol == "templated" else "words")
    for seed in range(args.seed, args.seed + args.n):  # seed-major: every task advances together
        for t in tasks:
            options = {"layout": layout} if t == "vartrack" else {}
            yield f"{t}-{seed:04d}", make_example(t, seed, length=args.length or None, **options)


def _charts(args) -> str:
    """The chart files `write_report` wrote, as listed after the run (and why there are no PNGs)."""
    if args.no_plots:
        return ""
    from ...viz.export import image_export_problem

    problem = image_export_problem()
    return ", report.html" + (f"; no PNG charts: {problem}" if problem else ", metrics.png, deletion_curves.png")


def _write_charts(args, summary: dict) -> None:
    if not args.no_plots:
        from ...viz.evaluation import write_charts

        write_charts(summary, args.out)


def _announce(loaded, examples, methods, args):
    """Print what the run will compute and how long it should take (one range) before it starts; returns
    the estimate (`flashtrace.evaluate.estimate.RunEstimate`)."""
    from ...base.units import time_range
    from ...evaluate.estimate import estimate_eval
    from ...engine.models.scoring import dtype_name, score_dtype, speedup
    from ...evaluate.runner import pending

    chosen = score_dtype(loaded, args.score_dtype)
    jobs = pending(examples, methods, args.out, args.k, args.target, not args.no_resume, dtype_name(chosen))
    plan = estimate_eval(loaded, jobs, args.k, args.ig_steps, args.target,
                         score_speedup=speedup(dtype_name(loaded.dtype), loaded.device.type, dtype_name(chosen)))
    if jobs:
        per = [plan.example_seconds(i) for i in range(len(jobs))]
        print(f"{len(jobs)} of {len(examples)} examples to compute ({len(methods)} methods); estimated "
              f"{time_range(*plan.range())} in all, {time_range(min(per) / 2, max(per) * 2)} per example",
              file=sys.stderr)
    return plan


def _settings(args, methods: list[str], loaded) -> dict:
    """The run's settings as written to ``settings.json``; a resumed or extended folder lists every method and
    task it holds."""
    import torch

    from ...engine.models.scoring import dtype_name

    if args.ray:
        dtype, threads = args.dtype or "float32", args.num_cpus_per_worker
    else:
        dtype, threads = dtype_name(loaded.dtype), torch.get_num_threads()
    settings = {"model": args.model, "dtype": dtype, "score_dtype": _score_dtype_name(args, loaded),
                "methods": ",".join(methods),
                "n": args.n, "length": args.length, "seed": args.seed, "k": args.k, "ig_steps": args.ig_steps,
                "target": args.target, "threads": threads,
                "source": str(args.jsonl) if args.jsonl else ",".join(_task_names(args.task))}
    if args.ray:
        settings["ray"] = {"address": args.ray, "workers": args.workers, "num_cpus_per_worker": args.num_cpus_per_worker,
                           "num_gpus_per_worker": args.num_gpus_per_worker}
    before = {} if args.no_resume or args.jsonl else _held_settings(args.out)
    for key in ("methods", "source"):
        if isinstance(before.get(key), str) and before[key]:
            merged = before[key].split(",") + [v for v in settings[key].split(",") if v not in before[key].split(",")]
            settings[key] = ",".join(merged)
    return settings


def _held_settings(out) -> dict:
    """The folder's saved settings, its method and task listings restricted to what its records hold: never a
    stale listing, and an older folder's 'all' spelled out as its tasks, in the registry's order."""
    from ...evaluate.report import load_records, load_settings

    before = load_settings(out)
    records = load_records(out) if before else []
    if isinstance(before.get("methods"), str):
        held = {name for record in records for name in (record.get("methods") or {})}
        before["methods"] = ",".join(m for m in before["methods"].split(",") if m in held)
    if before.get("source") == "all":
        held = {record.get("task") for record in records}
        before["source"] = ",".join(t for t in _task_names("all") if t in held)
    return before


def _score_dtype_name(args, loaded) -> str:
    """The deletion curves' precision, by name. On Ray the model is not loaded here, and ``auto`` is decided
    for workers with this machine's processor (or a GPU, with --num-gpus-per-worker), so a run gives the same
    numbers with and without Ray."""
    from ...engine.models.scoring import choose, dtype_name, score_dtype

    if args.ray:
        if args.dtype == "auto":  # the checkpoint's dtype, known only where it loads: each worker decides
            return args.score_dtype
        device = "cuda" if args.num_gpus_per_worker > 0 else "cpu"
        return choose(args.dtype or "float32", device, 0, args.score_dtype)
    return dtype_name(score_dtype(loaded, args.score_dtype))


def _written(args, examples):
    """``(examples, loaded model under test or None, protocol record)``: under --protocol paper or own, each
    example's reasoning written by the writer model (kept under OUT/responses/), with the estimate first and a
    bar. The writer is freed before the model under test loads unless they are the same model."""
    import gc

    from ...base.units import time_range
    from ...engine.estimate import generation_seconds
    from ...engine.models import load_model
    from ...evaluate.protocols import PAPER_WRITER, apply_protocol, cached_responses, write_responses

    if args.protocol == "templated":
        return examples, None, apply_protocol("templated", examples).record
    if args.write_tokens < 1:
        raise InputError("--write-tokens must be >= 1")
    writer = args.model if args.protocol == "own" else (args.writer or PAPER_WRITER)
    kept = cached_responses(examples, args.out, writer, args.write_tokens)
    todo = [ex for ex_id, ex in examples if ex_id not in kept]
    loaded = load_model(writer, device=args.device, dtype=args.dtype) if todo else None
    if todo:
        from tqdm import tqdm

        tokens = [len(loaded.tokenizer(ex.prompt)["input_ids"]) for ex in todo]
        seconds = sum(generation_seconds(loaded, n, args.write_tokens) for n in tokens)
        print(f"{writer} writes {len(todo)} of {len(examples)} responses (--protocol {args.protocol}, at most "
              f"{args.write_tokens} new tokens each): up to {time_range(seconds / 2, seconds * 2)}", file=sys.stderr)
        bar = tqdm(total=len(examples), desc="write", unit="ex", disable=args.no_progress)
        written = write_responses(loaded, examples, args.out, writer, args.write_tokens,
                                  lambda _id, done, total: bar.update(1))
        bar.close()
    else:
        written = write_responses(None, examples, args.out, writer, args.write_tokens)
    applied = apply_protocol(args.protocol, examples, written)
    if loaded is not None and writer != args.model:
        del loaded
        gc.collect()
        loaded = None
    if args.ray:
        loaded = None
    return applied.examples, loaded, applied.record


def _evaluate(args, loaded, examples, methods) -> dict[str, str]:
    """Run the examples (here, or on Ray), with the estimate first and the bars while it runs; returns
    ``{id: error}`` of the examples that failed."""
    from ..eval_progress import EvalBars
    from ...evaluate.runner import run_eval, run_eval_ray

    plan = None if args.ray else _announce(loaded, examples, methods, args)
    bars = EvalBars(len(examples), len(methods), plan, disable=args.no_progress)
    failed = {}
    options = dict(k=args.k, ig_steps=args.ig_steps, batch_size=args.batch_size, target=args.target,
                   score_dtype=_score_dtype_name(args, loaded), resume=not args.no_resume,
                   on_example=bars.example_done)
    if args.ray:
        _, failed = run_eval_ray(args.model, examples, methods, args.out, dtype=args.dtype, address=args.ray,
                                 workers=args.workers, num_cpus=args.num_cpus_per_worker,
                                 num_gpus=args.num_gpus_per_worker, max_retries=args.max_retries, **options)
    else:
        run_eval(loaded, examples, methods, args.out, progress=bars.method_step, **options)
    bars.close()
    return failed


def run(args: argparse.Namespace) -> int:
    """Run the faithfulness evaluation (or only rewrite its report), print the summary; returns the exit code.

    Args:
        args: The parsed options of `flashtrace eval`.

    Returns:
        0 when every example was evaluated (or the report rewritten), 1 when an example failed.

    Raises:
        InputError: When --n, --k, --ig-steps or --length is out of range, a task is unknown, or no example
            is left to evaluate (the writer model answered none right).
    """
    from ...evaluate.report import markdown, write_report
    from ...base.fileio import atomic_write_text, check_folder

    check_folder(args.out, "--out")  # a file, a named pipe, a device or a link to one: refused before any work
    if args.report_only:
        summary = write_report(args.out)
        _write_charts(args, summary)
        print(markdown(summary))
        return 0
    import torch

    from ...evaluate.methods import parse_methods
    from ...engine.models import load_model

    if args.n < 1 or (args.k != 0 and args.k < 2) or args.ig_steps < 1 or args.length < 0:
        raise InputError("--n must be >= 1, --k 0 or >= 2, --ig-steps >= 1 and --length >= 0")
    if args.ray:
        from ...run.distributed import require_ray

        require_ray()  # before the examples are made or any file is written
    if args.threads:
        torch.set_num_threads(args.threads)
    methods = parse_methods(args.methods, [int(h) for h in args.hops.split(",") if h.strip()])
    examples = list(_examples(args))
    args.target = args.target or ("answer" if args.protocol == "templated" else "value")
    examples, loaded, protocol = _written(args, examples)
    if loaded is None and not args.ray:
        loaded = load_model(args.model, device=args.device, dtype=args.dtype)
    settings = {**_settings(args, methods, loaded), "protocol": protocol}
    if not examples:
        raise InputError(f"no example is left to evaluate: the writer answered none of the {protocol['written']} right")
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out / "settings.json", json.dumps(settings, indent=1))
    failed = _evaluate(args, loaded, examples, methods)
    summary = write_report(args.out, settings)
    _write_charts(args, summary)
    print(markdown(summary))
    print(f"results in {args.out}/ (examples/*.json, summary.md, summary.json{_charts(args)})")
    for ex_id, error in failed.items():
        print(f"{ex_id}: failed: {error.splitlines()[0][:300]}")
    return 1 if failed else 0
