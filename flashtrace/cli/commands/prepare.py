"""``flashtrace prepare``: convert and cache the built-in default model (idempotent)."""

from __future__ import annotations

HELP = "convert the built-in SmolLM2-135M-Instruct model to a cached safetensors copy (once; quick afterwards)"


def add_arguments(parser) -> None:
    """Add the options of `flashtrace prepare` (quiet) to `parser`."""
    parser.add_argument("--quiet", action="store_true", help="print nothing when the model is already prepared")


def run(args) -> int:
    """Convert the built-in model once (nothing when already converted) and say where it is; returns 0."""
    from ...engine.models.default_model import ensure_default_model, is_converted

    already = is_converted()
    folder = ensure_default_model()
    if not (already and args.quiet):
        print(f"default model ready: {folder}")
    return 0
