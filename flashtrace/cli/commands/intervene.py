"""``flashtrace intervene``: remove reasoning steps and prompt sentences from a saved trace and score its
answer again (step influence by intervention; top, random and gold sentence removal), or run one edit."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ...base.errors import InputError

if TYPE_CHECKING:
    import argparse

HELP = ("remove reasoning steps and prompt sentences from a saved trace and score the answer again: step influence "
        "by intervention beside the hop graph's, top/random/gold sentence removal, or one edit (--remove)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of `flashtrace intervene` (trace file, model, the edits) to `parser`.

    Args:
        parser: The `intervene` subcommand's parser; the options are added to it in place.
    """
    from ...analysis.interventions import DEFAULT_NEW_TOKENS, DEFAULT_RANDOM, DEFAULT_TEMPERATURE, DEFAULT_TOP_P
    from ...engine.choices import model_help

    parser.add_argument("trace", type=Path, help="trace JSON file (validated on read)")
    parser.add_argument("--model", default=None,
                        help="the model the trace was made with (default: the name the trace records): "
                             + model_help())
    parser.add_argument("--remove", action="append", default=[], metavar="ID",
                        help="one edit instead of the standard set: remove this segment (a prompt sentence P3 or a "
                             "reasoning step S1, as `flashtrace show` and the app's Details name them; repeatable)")
    parser.add_argument("--replace", default=None, metavar="TEXT",
                        help="with --remove: put TEXT in place of the first removed segment")
    parser.add_argument("--regenerate", action="store_true",
                        help="with --remove: let the model write its answer again after the edit (greedy)")
    parser.add_argument("--retrace", type=Path, default=None, metavar="OUT",
                        help="with --remove: trace the edited prompt and the new response (implies --regenerate) "
                             "with the trace's settings and write that trace to OUT")
    parser.add_argument("--max-new-tokens", type=int, default=DEFAULT_NEW_TOKENS,
                        help="with --regenerate/--retrace: most tokens the model may write")
    parser.add_argument("--no-steps", action="store_true", help="standard set: do not remove the reasoning steps")
    parser.add_argument("--no-sentences", action="store_true",
                        help="standard set: do not remove the top, random and gold prompt sentences")
    parser.add_argument("--random", type=int, default=DEFAULT_RANDOM, metavar="N",
                        help="standard set: how many random prompt sentences to remove, one at a time")
    parser.add_argument("--seed", type=int, default=0, help="standard set: seed of the random sentences")
    parser.add_argument("--batch-size", type=int, default=8, help="edited sequences scored per forward pass")
    parser.add_argument("--resample", type=int, default=0, metavar="N",
                        help="standard set: also sample N continuations per reasoning step, with the step kept and "
                             "removed, and score the answer after each (default 0: teacher-forced only)")
    parser.add_argument("--resample-tokens", type=int, default=None, metavar="T",
                        help="with --resample: most tokens per continuation (default: the trace's reasoning and "
                             "answer length + 16)")
    parser.add_argument("--temperature", type=float, default=DEFAULT_TEMPERATURE,
                        help=f"with --resample: sampling temperature (default {DEFAULT_TEMPERATURE})")
    parser.add_argument("--top-p", type=float, default=DEFAULT_TOP_P,
                        help=f"with --resample: nucleus sampling mass (default {DEFAULT_TOP_P})")
    parser.add_argument("--out", type=Path, default=None,
                        help="standard set: write the trace with the results stored in it (schema version 3)")
    parser.add_argument("--device", default=None, help="torch device, e.g. cpu or cuda")
    parser.add_argument("--dtype", default=None, help="float32 (default), bfloat16 or float16")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


MAX_REPLACE_CHARS = 20_000  # --replace: the text put in place of one sentence or step


def _check_arguments(args) -> None:
    from ...base.fileio import check_destination, check_not_input
    from ...engine.models.memory import check_device

    if args.random < 0:
        raise InputError(f"--random must be at least 0, got {args.random}")
    if args.batch_size < 1:
        raise InputError(f"--batch-size must be at least 1, got {args.batch_size}")
    if args.max_new_tokens < 1:
        raise InputError(f"--max-new-tokens must be at least 1, got {args.max_new_tokens}")
    if args.replace is not None and len(args.replace) > MAX_REPLACE_CHARS:
        raise InputError(f"--replace is {len(args.replace):,} characters; at most {MAX_REPLACE_CHARS:,} (one sentence "
                         "or step in place of another)")
    single = (("--replace", args.replace is not None), ("--regenerate", args.regenerate),
              ("--retrace", args.retrace is not None))
    for flag, given in single:
        if given and not args.remove:
            raise InputError(f"{flag} needs --remove (the segment to edit)")
    if args.remove and args.out:
        raise InputError("--out stores the standard set; with --remove use --retrace to save the new trace")
    _check_resample(args)
    if args.no_steps and args.no_sentences and not args.remove:
        raise InputError("--no-steps and --no-sentences leave nothing to run")
    check_device(args.device)
    for flag, path in (("--out", args.out), ("--retrace", args.retrace)):
        if path:
            check_destination(path, flag)
    if args.retrace:  # --out may name the input: it stores the standard set in that trace, as documented
        check_not_input(args.retrace, args.trace, "--retrace")


def _check_resample(args) -> None:
    from ...analysis.records import MAX_EDITS

    if args.resample < 0:
        raise InputError(f"--resample must be at least 0, got {args.resample}")
    if args.resample > MAX_EDITS:  # the record holds at most this many: refused before any continuation
        raise InputError(f"--resample must be at most {MAX_EDITS:,}, got {args.resample:,}")
    if args.resample and (args.remove or args.no_steps):
        raise InputError("--resample resamples the reasoning steps of the standard set: not with --remove or "
                         "--no-steps")
    if args.resample_tokens is not None and args.resample_tokens < 1:
        raise InputError(f"--resample-tokens must be at least 1, got {args.resample_tokens}")
    if not args.temperature > 0 or not 0 < args.top_p <= 1:
        raise InputError("--temperature must be > 0 and --top-p in (0, 1]")


def _bar(args, desc: str, unit: str = "layer"):
    from tqdm import tqdm

    if args.no_progress:
        return None, None
    bar = tqdm(desc=desc, unit=unit, leave=False)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    return bar, progress


def _note(seconds: float, what: str) -> None:
    print(f"{what}: about {seconds:.0f} s predicted", file=sys.stderr)


def _write(trace, path: Path, flag: str) -> None:
    from ...base.fileio import atomic_write_text

    try:
        atomic_write_text(path, trace.to_json(), flag)
    except OSError as exc:
        raise OSError(f"cannot write {flag} {path}: {exc.strerror or exc}") from None
    print(f"trace written to {path}")


def _print_standard(trace) -> None:
    from ...analysis.interventions import intervention_facts

    facts = intervention_facts(trace)
    print(f"answer log-probability, unedited: {facts.before:.3f} (summed over the target's tokens, nats)")
    if facts.steps is not None:
        info = facts.steps
        print("\nstep influence: fall of the answer's log-probability when the step is removed, beside the hop "
              "graph's influence (of the answer's attribution)")
        print(f"  {'step':6} {'drop (nats)':>11} {'graph':>7}  text")
        for seg_id, label, drop, graph in zip(info.ids, info.labels, info.drops, info.graph):
            print(f"  {seg_id:6} {drop:11.3f} {graph:7.1%}  {label}")
        print(info.sentence)
    if facts.resampled is not None:
        res = facts.resampled
        print(f"\nresampled: {res.n} continuations per step with the step kept and removed (mean log-probability "
              "of the answer, drop = kept - removed, teacher-forced drop, share matching the original answer)")
        print(f"  {'step':6} {'kept':>8} {'removed':>8} {'drop':>7} {'forced':>7} {'match k':>7} {'match r':>7}  text")
        for row in zip(res.ids, res.kept, res.removed, res.drops, res.teacher_forced, res.kept_match,
                       res.removed_match, res.labels):
            forced = "-" if row[4] is None else f"{row[4]:.3f}"
            print(f"  {row[0]:6} {row[1]:8.3f} {row[2]:8.3f} {row[3]:7.3f} {forced:>7} {row[5]:7.0%} {row[6]:7.0%}  "
                  f"{row[7]}")
        print(res.sentence)
    if facts.removal is not None:
        print("\nprompt sentences removed (fall of the answer's log-probability, nats)")
        print(facts.removal.sentence)


def _standard(args, trace, loaded) -> None:
    from ...run.interventions import check_standard_set, estimate_seconds, plan, with_interventions
    from ...run.resample import check_resampling, estimate_resample_seconds, intervene_and_resample

    edits = plan(trace, not args.no_steps, not args.no_sentences, args.random, args.seed)
    if args.resample and not args.no_steps:  # both refused before any estimate is printed
        check_resampling(loaded, trace, args.resample, args.resample_tokens, args.batch_size)
    check_standard_set(loaded, trace, len(edits), args.batch_size)
    _note(estimate_seconds(loaded, trace, len(edits)), f"{len(edits)} edits of a {trace.n_tokens}-token trace")
    options = {"max_new_tokens": args.resample_tokens, "temperature": args.temperature, "top_p": args.top_p}
    if args.resample:
        _note(estimate_resample_seconds(loaded, trace, args.resample, args.resample_tokens),
              f"{args.resample} resampled continuations per step, kept and removed")
    bar, progress = _bar(args, "interventions")
    rbar, rprogress = _bar(args, "resampling", "batch") if args.resample else (None, None)
    record = intervene_and_resample(loaded, trace, args.resample, resample_options=options,
                                    resample_progress=rprogress, progress=progress, steps=not args.no_steps,
                                    sentences=not args.no_sentences, n_random=args.random, seed=args.seed,
                                    batch_size=args.batch_size)
    for one in (bar, rbar):
        if one is not None:
            one.close()
    trace = with_interventions(trace, record)
    _print_standard(trace)
    if args.out:
        _write(trace, args.out, "--out")


def _single(args, trace, loaded) -> None:
    from ...run.interventions import estimate_seconds
    from ...run.rerun import checked_edit, edit

    regenerate = args.regenerate or args.retrace is not None
    checked_edit(loaded, trace, args.remove, args.replace, regenerate=regenerate, retrace=args.retrace is not None,
                 max_new_tokens=args.max_new_tokens)  # refused before the estimate is printed
    _note(estimate_seconds(loaded, trace, 1, args.max_new_tokens if regenerate else 0), "the edit")
    bar, progress = _bar(args, "scoring")
    result = edit(loaded, trace, args.remove, args.replace, regenerate=regenerate, retrace=args.retrace is not None,
                  max_new_tokens=args.max_new_tokens, progress=progress)
    if bar is not None:
        bar.close()
    what = "replaced" if args.replace is not None else "removed"
    print(f"{', '.join(result.edited.segments)} {what}")
    print(f"answer log-probability: {result.before:.3f} before, {result.after:.3f} after "
          f"(change {result.change:+.3f} nats)")
    if result.generated is not None:
        print("the model now writes:")
        print(result.generated)
    if args.retrace is not None:
        if result.trace is None:
            raise InputError("the model wrote nothing after the edit; there is no new trace to write")
        _write(result.trace, args.retrace, "--retrace")


def run(args: argparse.Namespace) -> int:
    """Rerun the trace's model with segments removed or replaced and report the changes; returns the exit code.

    Args:
        args: The parsed options of `flashtrace intervene`.

    Returns:
        0 (the changes were reported).

    Raises:
        InputError: When the options contradict each other or are out of range, or the model wrote
            nothing after an edit.
    """
    from ...analysis.schema import Trace
    from ...engine.models import load_model

    _check_arguments(args)
    trace = Trace.load(args.trace)
    loaded = load_model(args.model or trace.model.name, device=args.device, dtype=args.dtype)
    (_single if args.remove else _standard)(args, trace, loaded)
    return 0
