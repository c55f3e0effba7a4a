"""One source for the limits and choices of a trace and of the options that make one. The schema
validates with them, the command line takes its choices, ranges and help from them, the app its widget
bounds, and the API its checks; nothing else writes these numbers or names again.

Checks of a run's inputs against a model (its context, the size of a prompt file) are in
`flashtrace.run.prechecks`.
"""

from __future__ import annotations

from ..engine.inputs.sequence import DEFAULT_STOP_TOKENS, STOP_PRESETS
from ..base.errors import InputError

MAX_TOKENS = 200_000  # tokens in one trace
MAX_HOPS = 8  # recursive hops (0..MAX_HOPS)
MAX_TEXT = 2_000_000  # characters of prompt, and of response, a trace stores
MAX_FILE_BYTES = 256 * 2**20  # a trace file
MAX_TITLE = 500  # characters of a trace's title
MAX_INPUT_CHARS = MAX_TEXT  # what the app's text areas and the API accept (a trace must be able to store it)
MAX_INPUT_BYTES = 4 * MAX_INPUT_CHARS  # UTF-8 needs at most 4 bytes a character
MAX_STOP_TOKENS = 1_000  # entries of a user stop-token list, each at most MAX_STOP_TOKEN_CHARS characters
MAX_STOP_TOKEN_CHARS = 100
MAX_TIMINGS = 100  # named timings (seconds) in one trace
MAX_SCORE = 3.4028234663852886e38  # float32's largest: attribution values are computed in float32 or narrower
MAX_EXTRA_DEPTH = 16  # nesting of a trace's `extra` (free-form metadata)
MAX_EXTRA_NODES = 100_000  # values in `extra`
REL_TOL = 1e-4  # relative tolerance of a trace's sum invariants (6-significant-digit rounding passes)

RECURSIVE_SPANS = ("reasoning+answer", "reasoning")  # the span G re-attributed by hops >= 1 (first: default)
HOP0_SPANS = ("answer", "generation")  # hop 0 over the target, or over the whole generation (first: the API's default)
APP_HOP0 = "answer"  # the app's default, as the API's: the best mean Recovery@10% on the Qwen models' own reasoning
# (docs/evaluation.md, "Defaults, decided on the models' own reasoning"; tests/evaluate/test_defaults_decision.py)
GALLERY_HOP0 = "generation"  # the committed gallery was built with hop 0 over reasoning + answer; each trace says so
GALLERY_STOP_TOKENS = "paper"  # and with the paper stop tokens (the default then); a rebuild keeps them
EVAL_STOP_TOKENS = "paper"  # the evaluation's unsuffixed rows (flashtrace-kK, ifr), as committed, whatever the default
DEFAULT_HOPS = 0  # K: the app's, the API's and the CLI's; recursive hops (K >= 1) did not beat K = 0 beyond their
# intervals on the Qwen models' own reasoning, so the simpler variant (docs/evaluation.md, "Defaults, decided on the
# models' own reasoning"; tests/evaluate/test_defaults_decision.py)
GRAPH_THRESHOLD_RANGE = "[0, 1)"  # a hop graph's edge threshold τ: 0 <= τ < 1 (1 would drop every edge)
METHOD_THRESHOLD_RANGE = "[0, 1]"  # a method's proximity threshold

__all__ = ["MAX_TOKENS", "MAX_HOPS", "MAX_TEXT", "MAX_FILE_BYTES", "MAX_TITLE", "MAX_INPUT_CHARS", "MAX_INPUT_BYTES",
           "MAX_STOP_TOKENS", "MAX_STOP_TOKEN_CHARS", "MAX_TIMINGS", "MAX_SCORE", "MAX_EXTRA_DEPTH", "MAX_EXTRA_NODES",
           "REL_TOL",
           "RECURSIVE_SPANS", "HOP0_SPANS", "APP_HOP0", "GALLERY_HOP0", "GALLERY_STOP_TOKENS", "EVAL_STOP_TOKENS", "STOP_PRESETS", "DEFAULT_STOP_TOKENS", "DEFAULT_HOPS", "check_hops",
           "check_recursive", "check_hop0", "check_title", "check_graph_threshold", "check_method_threshold",
           "check_options"]


def check_hops(hops: int, what: str = "hops") -> int:
    """Return `hops` if it is an int from 0 to MAX_HOPS, else refuse it (`InputError`, a ValueError) naming `what`.

    Args:
        hops: The number of recursive hops to check.
        what: The name the error message gives the value (an option or argument name).

    Returns:
        `hops`, unchanged.

    Raises:
        InputError: When `hops` is not an int (a bool is not) from 0 to `MAX_HOPS`.
    """
    if isinstance(hops, bool) or not isinstance(hops, int) or not 0 <= hops <= MAX_HOPS:
        raise InputError(f"{what} must be between 0 and {MAX_HOPS}, got {hops!r}")
    return hops


def check_recursive(recursive: str, what: str = "recursive") -> str:
    """Return `recursive` if it is one of RECURSIVE_SPANS, else refuse it (`InputError`, a ValueError) naming `what`.

    Args:
        recursive: The span re-attributed by hops >= 1 to check.
        what: The name the error message gives the value (an option or argument name).

    Returns:
        `recursive`, unchanged.

    Raises:
        InputError: When `recursive` is not one of `RECURSIVE_SPANS`.
    """
    if recursive not in RECURSIVE_SPANS:
        raise InputError(f"{what} must be {' or '.join(repr(c) for c in RECURSIVE_SPANS)}, got {recursive!r}")
    return recursive


def check_hop0(hop0: str, what: str = "hop0") -> str:
    """Return `hop0` if it is one of HOP0_SPANS, else refuse it (`InputError`, a ValueError) naming `what`.

    Args:
        hop0: The span hop 0 is taken over, to check.
        what: The name the error message gives the value (an option or argument name).

    Returns:
        `hop0`, unchanged.

    Raises:
        InputError: When `hop0` is not one of `HOP0_SPANS`.
    """
    if hop0 not in HOP0_SPANS:
        raise InputError(f"{what} must be {' or '.join(repr(c) for c in HOP0_SPANS)}, got {hop0!r}")
    return hop0


def check_title(title: str) -> str:
    """Return `title` if it has at most MAX_TITLE characters, else refuse it (`InputError`, a ValueError).

    Args:
        title: The trace's title (an empty or None title passes).

    Returns:
        `title`, unchanged.

    Raises:
        InputError: When `title` has more than `MAX_TITLE` characters.
    """
    if len(title or "") > MAX_TITLE:
        raise InputError(f"the title has {len(title)} characters; at most {MAX_TITLE}")
    return title


def check_graph_threshold(threshold: float, what: str = "threshold") -> float:
    """A hop graph's edge threshold: ``0 <= τ < 1``.

    Args:
        threshold: The edge threshold τ to check.
        what: The name the error message gives the value (an option or argument name).

    Returns:
        `threshold`, unchanged.

    Raises:
        InputError: When `threshold` is below 0 or at least 1.
    """
    if not 0 <= threshold < 1:
        raise InputError(f"{what} must be at least 0 and below 1 (0 keeps every edge), got {threshold}")
    return threshold


def check_method_threshold(threshold: float | None, what: str = "threshold") -> float | None:
    """A method's proximity threshold: ``0 <= τ <= 1`` (None: off).

    Args:
        threshold: The proximity threshold τ to check (None: off).
        what: The name the error message gives the value (an option or argument name).

    Returns:
        `threshold`, unchanged.

    Raises:
        InputError: When `threshold` is not None and lies outside 0..1.
    """
    if threshold is not None and not 0 <= threshold <= 1:
        raise InputError(f"{what} must be between 0 and 1, got {threshold}")
    return threshold


def check_options(hops: int = DEFAULT_HOPS, title: str = "", recursive: str = RECURSIVE_SPANS[0],
                  hop0: str = HOP0_SPANS[0]) -> None:
    """`ValueError` for attribution options the run would reject only at its end.

    Args:
        hops: The number of recursive hops (`check_hops`).
        title: The trace's title (`check_title`).
        recursive: The span re-attributed by hops >= 1 (`check_recursive`).
        hop0: The span hop 0 is taken over (`check_hop0`).

    Raises:
        InputError: When any option is out of range (from the checks named above).
    """
    check_hops(hops)
    check_title(title)
    check_recursive(recursive)
    check_hop0(hop0)
