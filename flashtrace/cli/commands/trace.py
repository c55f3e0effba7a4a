"""``flashtrace trace``: attribute a response to its prompt and print the top prompt tokens."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ...base.errors import InputError

if TYPE_CHECKING:
    import argparse

HELP = "trace which prompt tokens caused a model's answer (FlashTrace with recursive hops)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of `flashtrace trace` (model, prompt, response or generation, target, method) to `parser`.

    Args:
        parser: The `trace` subcommand's parser; the options are added to it in place.
    """
    from ...engine.choices import model_help
    from ...analysis.limits import (DEFAULT_HOPS, DEFAULT_STOP_TOKENS, HOP0_SPANS, MAX_HOPS, METHOD_THRESHOLD_RANGE,
                                    RECURSIVE_SPANS)
    from ...engine.attribution import METHODS
    from ...engine.attribution.registry import method_name

    parser.add_argument("--model", default="smollm2-135m", help=model_help())
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--prompt-file", type=Path, help="file holding the prompt ('-' for standard input)")
    src.add_argument("--prompt", help="the prompt text itself")
    resp = parser.add_mutually_exclusive_group()
    resp.add_argument("--response-file", type=Path, help="file holding the response to teacher-force")
    resp.add_argument("--response", help="the response text itself")
    resp.add_argument("--generate", action="store_true", help="let the model generate the response (greedy)")
    parser.add_argument("--max-new-tokens", type=int, default=256, help="generation length limit (with --generate)")
    parser.add_argument("--reasoning-instruction", action="store_true",
                        help="with --generate: append \"Think step by step, then give the final answer on a last line "
                             "starting with 'Answer:'.\" to the prompt (off by default); its tokens are marked as "
                             "template text and never count as evidence")
    parser.add_argument("--target", default="value",
                        help="what to explain: value (the answer's value when the answer line restates the question, "
                             "'15' in 'Tom has 15 marbles now.'; else the whole answer), answer (the whole answer "
                             "line), response, reasoning, or a token range START:END")
    parser.add_argument("--hops", type=int, default=None,
                        help=f"recursive hops through the reasoning (0-{MAX_HOPS}; default {DEFAULT_HOPS}: hop 0 alone, "
                             "the measured default, docs/evaluation.md; 0 for methods without hops)")
    parser.add_argument("--method", default="flashtrace", choices=sorted(METHODS), type=method_name,
                        help="attribution method (captum/inseq names such as integrated_gradients are accepted): "
                             + "; ".join(f"{m.name}: {m.description}" for m in METHODS.values()))
    parser.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                        help="a method option (repeatable): " + "; ".join(
                            f"{m.name} {o.name} ({o.kind.__name__}, default {o.default}): {o.help}"
                            for m in METHODS.values() for o in m.options))
    parser.add_argument("--recursive", default=RECURSIVE_SPANS[0], choices=RECURSIVE_SPANS,
                        help="span re-attributed by hops >= 1")
    stops = parser.add_mutually_exclusive_group()
    stops.add_argument("--stop-tokens", default=None, metavar="paper|punctuation|none|LIST",
                       help="tokens with weight 0 in targets and scores: paper (',' '.' and whitespace, the "
                            "authors' set), punctuation (every punctuation-only token), none, or a "
                            "whitespace-separated list such as ', . ?' (whitespace-only tokens are included); "
                            f"default {DEFAULT_STOP_TOKENS} (docs/evaluation.md, Defaults)")
    stops.add_argument("--no-stop-tokens", action="store_true", help="alias of --stop-tokens none")
    parser.add_argument("--hop0", default=HOP0_SPANS[0], choices=HOP0_SPANS,
                        help="span of hop 0: the target (default) or the whole generation, reasoning + answer "
                             "(the paper-era code)")
    parser.add_argument("--no-chat-template", action="store_true", help="use the raw prompt text, no chat template")
    parser.add_argument("--threshold", type=float, default=None,
                        help="prune (head, source) proximities whose share of the layer is below this "
                             f"(in {METHOD_THRESHOLD_RANGE})")
    parser.add_argument("--steps", action="store_true",
                        help="also attribute every reasoning step and the answer (for the hop graph), in one sweep")
    parser.add_argument("--device", default=None, help="torch device, e.g. cpu or cuda")
    parser.add_argument("--dtype", default=None, help="float32 (default), bfloat16 or float16")
    parser.add_argument("--json", type=Path, default=None, help="write the trace as JSON to this file")
    parser.add_argument("--top", type=int, default=10, help="how many prompt tokens to print")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def method_options(pairs: list[str]) -> dict:
    """The method options of `--option NAME=VALUE` flags (trace and batch), names and values stripped.

    Args:
        pairs: The values of the `--option` flags, each ``NAME=VALUE``.

    Returns:
        ``{name: value}``, both strings with surrounding whitespace stripped; a later flag wins.

    Raises:
        InputError: When a pair has no ``=`` or an empty name.
    """
    out = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise InputError(f"--option takes NAME=VALUE, got {pair!r}")
        out[name.strip()] = value.strip()
    return out


def _read(path: Path | None, text: str | None, what: str) -> str | None:
    from ...run.prechecks import read_text_bounded

    if text is not None:
        return text
    return None if path is None else read_text_bounded(path, what)


def _check_arguments(args) -> None:
    """Everything that can be checked before a file is read or a model loaded (one-line errors, exit 2)."""
    from ...base.fileio import check_destination
    from ...analysis.limits import check_hops, check_method_threshold, check_options
    from ...engine.models.memory import check_device

    if args.hops is not None:
        check_hops(args.hops, "--hops")
    check_method_threshold(args.threshold, "--threshold")
    if args.top < 1:
        raise InputError(f"--top must be at least 1, got {args.top}")
    if args.generate and args.max_new_tokens < 1:
        raise InputError(f"--max-new-tokens must be at least 1, got {args.max_new_tokens}")
    check_options(recursive=args.recursive)
    check_device(args.device)
    for flag, text in (("--prompt", args.prompt), ("--response", args.response)):
        _check_utf8(flag, text)
    if args.json:
        check_destination(args.json, "--json")


def _check_utf8(flag: str, text: str | None) -> None:
    """A command-line argument that was not UTF-8 reaches Python with its bad bytes as lone surrogates."""
    if text is None:
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(f"{flag} is not valid UTF-8 text (character {exc.start + 1}); pass the text in a UTF-8 "
                         "file with --prompt-file/--response-file") from None


def run(args: argparse.Namespace) -> int:
    """Trace one prompt and response, print the summary and save the trace when asked; returns the exit code.

    Args:
        args: The parsed options of `flashtrace trace`.

    Returns:
        0 (the trace was made, printed and, with --json, written).

    Raises:
        InputError: When an option is out of range, there is neither a response nor --generate, or the
            prompt is empty.
        OSError: When the --json file cannot be written.
    """
    from tqdm import tqdm

    from ..summary import print_summary

    from ...analysis.limits import DEFAULT_HOPS, DEFAULT_STOP_TOKENS
    from ...base.fileio import atomic_write_text
    from ...engine.attribution import get_method
    from ...engine.inputs import parse_stop_tokens
    from ...engine.models import load_model
    from ...run.tracing import attribute, prepare, resolve_target

    _check_arguments(args)
    spec = get_method(args.method)
    options = method_options(args.option)
    if args.threshold is not None:
        options["threshold"] = args.threshold
    spec.resolve_options(options)  # a bad option fails before the model loads
    if args.hops is None:
        args.hops = DEFAULT_HOPS if spec.hops else 0
    prompt = _read(args.prompt_file, args.prompt, "--prompt-file")
    response = _read(args.response_file, args.response, "--response-file")
    stop_tokens = "none" if args.no_stop_tokens else parse_stop_tokens(args.stop_tokens or DEFAULT_STOP_TOKENS)
    if response is None and not args.generate:
        raise InputError("give --response-file/--response to teacher-force, or --generate")
    if not prompt.strip():
        raise InputError("the prompt is empty")
    loaded = load_model(args.model, device=args.device, dtype=args.dtype)
    with _generation_progress(args, loaded, prompt, response) as on_text:
        prepared = prepare(loaded, prompt, response, generate=args.generate, max_new_tokens=args.max_new_tokens,
                           chat_template=not args.no_chat_template, reasoning_instruction=args.reasoning_instruction,
                           on_estimate=_warn_if_long, hops=args.hops, on_text=on_text)
    resolve_target(prepared.sequence, args.target)  # fail on a bad target before any progress output
    bar = None if args.no_progress else tqdm(desc=f"{args.method} K={args.hops}", unit=spec.progress_unit, leave=False)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    trace = attribute(prepared, target=args.target, hops=args.hops, method=args.method, recursive=args.recursive,
                      stop_tokens=stop_tokens, hop0=args.hop0, options=options,
                      progress=progress if bar is not None else None, steps=args.steps)
    if bar is not None:
        bar.close()
    print_summary(trace, args.top)
    if args.json:
        try:
            atomic_write_text(args.json, trace.to_json(), "--json")
        except OSError as exc:
            raise OSError(f"cannot write --json {args.json}: {exc.strerror or exc}") from None
        print(f"trace written to {args.json}")
    return 0


@contextmanager
def _generation_progress(args, loaded, prompt: str, response: str | None):
    """With --generate: the estimate on stderr first, then a bar over the new tokens (none with --no-progress);
    yields the `on_text` callback for `prepare` (None when nothing is generated or shown)."""
    if response is not None or not args.generate:
        yield None
        return
    from tqdm import tqdm

    from ...engine.estimate import generation_note

    print(generation_note(loaded, prompt, args.max_new_tokens, not args.no_chat_template,
                          args.reasoning_instruction), file=sys.stderr)
    if args.no_progress:
        yield None
        return
    bar = tqdm(desc="generate", total=args.max_new_tokens, unit="token", leave=False)
    try:
        yield lambda _text, n: bar.update(n - bar.n)
    finally:
        bar.close()


def _warn_if_long(est) -> None:
    if est.seconds > 20 or est.peak_bytes > 4 * 2**30:
        print(f"note: this trace is predicted to take {est.describe()}", file=sys.stderr)
