"""The `Trace`: a versioned, JSON-serialisable record of one attribution run.

It is the one object that crosses floors: the CLI, the app, the HTML export and the gallery all read
it. Loading validates everything (types, lengths, ranges, finite numbers, size limits, the shape of
the JSON before it is parsed, and the invariants below) and raises `TraceValidationError` with a
message that names the problem.

Invariants (checked within `REL_TOL`, which accepts values rounded to 6 significant digits, by
`flashtrace.analysis.invariants`): ``scores.final = Σ_k hops[k].contribution``; ``scores.prompt`` sums to 1
over the prompt (or is all zero); ``1 <= len(hops) <= settings.hops + 1`` (fewer when the hops stop early);
a token's character ``start <= end``; the target lies in the response; no attribution value is negative or
above float32's largest.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, Literal
from uuid import uuid4

from pydantic import Field, StrictInt, ValidationError, model_validator
from pydantic_core import from_json

from ..base.errors import InputError, EXIT_USAGE, FlashTraceError
from ..base.fileio import NotAFileError, atomic_write_text, read_regular_file
from ..base.json_budget import JsonBudgetError, check_json_budget, json_text
from .invariants import check_trace
from .readonly import ReadOnlyDict
from .limits import (HOP0_SPANS, MAX_EXTRA_DEPTH, MAX_EXTRA_NODES, MAX_FILE_BYTES, MAX_HOPS,  # noqa: F401 - re-exported
                     MAX_STOP_TOKEN_CHARS, MAX_STOP_TOKENS, MAX_TEXT, MAX_TIMINGS, MAX_TITLE, MAX_TOKENS, REL_TOL,
                     RECURSIVE_SPANS, STOP_PRESETS)
from .records import (MAX_EDITS, EditKind, EditRecord, InterventionRecord, ResampledStep,  # noqa: F401 - re-exported
                      ResampleRecord, StrictModel as _Strict)

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from rich.console import Console

SCHEMA_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)  # older traces are migrated on load (version 1: see `Settings`; 2: no interventions)
MAX_CONTAINERS = 3 * MAX_TOKENS + 100_000  # JSON arrays + objects in one file (a valid trace has ~2 per token)

Role = Literal["template", "prompt", "reasoning", "answer"]
# a JSON array of two integers (a list is taken for the tuple; the model is strict otherwise: no bool or str ints)
TokenRange = Annotated[tuple[StrictInt, StrictInt], Field(strict=False)]
Vector = Annotated[list[float], Field(fail_fast=True)]  # fail_fast: one error, not one per value (bounded memory)


class TraceValidationError(FlashTraceError, ValueError):
    """A trace file or object is malformed; the message names the field and the problem."""

    exit_code = EXIT_USAGE


class TokenRecord(_Strict):
    """One token: its text, role (template, prompt, reasoning, answer), vocabulary id and its character
    offsets into the prompt or response (None for template tokens)."""
    text: str = Field(max_length=1000)
    role: Role
    id: int = Field(ge=0)
    start: int | None = Field(default=None, ge=0)  # character offsets into prompt or response
    end: int | None = Field(default=None, ge=0)


class ModelInfo(_Strict):
    """The model a trace was made with: name, family, sizes (layers, heads, hidden size, vocabulary,
    parameters) and dtype."""
    name: str = Field(max_length=500)
    family: str = Field(max_length=50)
    n_layers: int = Field(ge=0)
    n_heads: int = Field(ge=0)
    n_kv_heads: int = Field(ge=0)
    hidden_size: int = Field(ge=0)
    vocab_size: int = Field(ge=0)
    n_params: int = Field(ge=0)
    dtype: str = Field(max_length=20)


# Settings a version-1 trace did not record, and the values that were in force when it was written.
LEGACY_DEFAULTS = {"stop_tokens": "punctuation", "hop0": "answer"}


class Settings(_Strict):
    """How a trace was computed. `stop_tokens`: a preset (``paper``, ``punctuation``, ``none``) or a
    user list; `hop0`: ``answer`` (hop 0 over the target span) or ``generation`` (hop 0 over reasoning +
    answer, the paper-era code). `assumed` names the settings an old trace did not record: they hold
    the defaults of the version that wrote it."""

    method: str = Field(max_length=50)
    hops: int = Field(ge=0, le=MAX_HOPS)
    target: TokenRange
    recursive: Literal[RECURSIVE_SPANS] = RECURSIVE_SPANS[0]
    stop_tokens: Literal[STOP_PRESETS] | Annotated[
        list[Annotated[str, Field(max_length=MAX_STOP_TOKEN_CHARS)]], Field(max_length=MAX_STOP_TOKENS,
                                                                             fail_fast=True)] = "paper"
    hop0: Literal[HOP0_SPANS] = HOP0_SPANS[0]
    chat_template: bool = True
    threshold: float | None = Field(default=None, ge=0, le=1)
    assumed: list[Literal["stop_tokens", "hop0"]] = Field(default_factory=list)

    def describe_assumed(self) -> str:
        """A sentence naming the settings filled in from an old trace's defaults ('' when none).

        Returns:
            The sentence, naming each assumed setting with its value, or '' when `assumed` is empty.
        """
        if not self.assumed:
            return ""
        parts = ", ".join(f"{name} = {getattr(self, name)}" for name in self.assumed)
        return f"written before these settings were recorded; the defaults then were {parts}"


def _migrate_v2(data: dict) -> dict:
    """A version-2 trace has every field of version 3 but `interventions` (absent means none were run)."""
    return {**data, "schema_version": SCHEMA_VERSION}


def _migrate_v1(data: dict) -> dict:
    """A version-1 trace: `stop_tokens` 'default' meant the punctuation rule, and hop 0 always covered
    the target span. Fill both in and remember that they were assumed."""
    data = {**data, "schema_version": SCHEMA_VERSION}
    settings = data.get("settings")
    if isinstance(settings, dict):
        settings = dict(settings)
        assumed = []
        if settings.get("stop_tokens", "default") == "default":
            settings["stop_tokens"] = LEGACY_DEFAULTS["stop_tokens"]
            assumed.append("stop_tokens")
        if "hop0" not in settings:
            settings["hop0"] = LEGACY_DEFAULTS["hop0"]
            assumed.append("hop0")
        settings["assumed"] = assumed
        data["settings"] = settings
    return data


class Spans(_Strict):
    """The token ranges of the prompt, the reasoning and the answer (None where absent), the rule that found
    the answer, and the answer's value inside it when the answer line restates the question (None when the
    value is the whole answer, or in a trace made before values were found). `prompt` runs from the first
    prompt token to the last; `prompt_ranges` lists each run of prompt tokens: one per message of a chat
    (the template between them left out), None in a trace made before they were kept."""
    prompt: TokenRange | None
    reasoning: TokenRange | None
    answer: TokenRange | None
    rule: str = Field(default="", max_length=50)
    value: TokenRange | None = None
    prompt_ranges: list[TokenRange] | None = Field(default=None, max_length=MAX_TOKENS, fail_fast=True)


class HopRecord(_Strict):
    """One hop `k`: rho (the share still on the reasoning after it), the weights it started from, its raw
    attribution and its contribution to the final scores (one value per token)."""
    k: int = Field(ge=0, le=MAX_HOPS)
    rho: float = Field(ge=0, le=1)
    weights: Vector
    raw: Vector
    contribution: Vector


class Scores(_Strict):
    """The final attribution: `final` over all positions, `prompt` normalised to sum 1 over the prompt."""
    final: Vector  # over all positions (non-zero on prompt positions only)
    prompt: Vector  # final normalised to sum 1 over prompt positions


class SegmentRecord(_Strict):
    """A prompt sentence/line, reasoning step, answer or chat-template run: tokens ``[start, end)``."""

    id: str = Field(min_length=1, max_length=20)
    role: Role
    text: str = Field(max_length=MAX_TEXT)
    start: int = Field(ge=0)
    end: int = Field(ge=1)
    order: int = Field(ge=0)
    char_start: int | None = Field(default=None, ge=0)  # offsets into the prompt or response text
    char_end: int | None = Field(default=None, ge=0)


class StepRecord(_Strict):
    """Step-level attribution: per segment id (each reasoning step and the answer), its attribution over
    all positions from one batched sweep (stop tokens zeroed), and the seconds that sweep took."""

    vectors: dict[str, Vector] = Field(max_length=MAX_TOKENS, fail_fast=True)
    seconds: float = Field(ge=0)


class Trace(_Strict):
    """The record of one attribution: texts, tokens, model, settings, spans, scores and hops (schema
    version `SCHEMA_VERSION`). Validated on creation and on load; `flashtrace.trace` makes one."""
    schema_version: int = SCHEMA_VERSION
    id: str = Field(default_factory=lambda: uuid4().hex[:12], max_length=64)
    created: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    title: str = Field(default="", max_length=MAX_TITLE)
    prompt: str = Field(max_length=MAX_TEXT)
    response: str = Field(max_length=MAX_TEXT)
    model: ModelInfo
    settings: Settings
    tokens: list[TokenRecord] = Field(max_length=MAX_TOKENS, fail_fast=True)
    spans: Spans
    scores: Scores
    hops: list[HopRecord] = Field(max_length=MAX_HOPS + 1, fail_fast=True)
    timings: dict[Annotated[str, Field(max_length=100)], float] = Field(default_factory=dict, max_length=MAX_TIMINGS,
                                                                        fail_fast=True)
    segments: list[SegmentRecord] | None = Field(default=None, max_length=MAX_TOKENS, fail_fast=True)
    steps: StepRecord | None = None
    interventions: InterventionRecord | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _version_first(cls, data: Any) -> Any:
        if isinstance(data, dict) and "schema_version" in data:
            version = data["schema_version"]
            if type(version) is not int or version not in READABLE_VERSIONS:  # 3.0, "3" and true are not 3
                raise InputError(f"unsupported schema_version {_short(version)}; this version of FlashTrace reads "
                                 f"versions {', '.join(map(str, READABLE_VERSIONS))}")
            if version == 1:
                return _migrate_v1(data)
            if version == 2:
                return _migrate_v2(data)
        return data

    @model_validator(mode="after")
    def _consistent(self) -> "Trace":
        check_trace(self)  # flashtrace.analysis.invariants
        if not isinstance(self.extra, ReadOnlyDict):
            object.__setattr__(self, "extra", ReadOnlyDict(self.extra))
        return self

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> "Trace":
        """A copy with the fields in `update` replaced (not validated, as pydantic's); the copy is a new, immutable
        trace: what was derived from this one (`analyse`, the hop graph) is derived anew for it.

        Args:
            update: ``{field: new value}`` for the fields to replace (not validated); an ``extra`` given here is
                made read-only as on creation. None or empty: an unchanged copy.
            deep: Whether to copy the fields deeply (pydantic's ``deep``).

        Returns:
            The new trace.
        """
        if update and "extra" in update:
            update = {**update, "extra": ReadOnlyDict(update["extra"])}
        return super().model_copy(update=update, deep=deep)

    # --- convenience views -------------------------------------------------------------------------
    @property
    def n_tokens(self) -> int:
        """The number of tokens."""
        return len(self.tokens)

    @property
    def response_start(self) -> int:
        """Index of the first response token (reasoning or answer; the number of tokens when there is none): the
        trace's counterpart of `TokenSequence.response_start`, for every caller that edits or extends a trace."""
        return next((i for i, t in enumerate(self.tokens) if t.role in ("reasoning", "answer")), len(self.tokens))

    def positions(self, *roles: str) -> list[int]:
        """The positions of the tokens whose role is one of `roles` ("prompt", "reasoning", ...).

        Args:
            *roles: The token roles to keep (``"template"``, ``"prompt"``, ``"reasoning"``, ``"answer"``).

        Returns:
            The matching token positions, in increasing order (empty when no role is given).
        """
        return [i for i, t in enumerate(self.tokens) if t.role in roles]

    # --- notebook views (drawn by the presentation floor, registered with `register_views`) -------
    def _repr_html_(self) -> str:
        return _view("html")(self)

    def heatmap(self, hop: int | None = None, **kwargs: Any) -> Any:
        """Plotly token heatmap: the combined prompt attribution, or hop `hop`'s own vector.

        Args:
            hop: The hop whose own vector is drawn, or None for the combined prompt attribution.
            **kwargs: Further options of the registered heatmap view (`flashtrace.viz.notebook.heatmap`).

        Returns:
            The heatmap, a Plotly ``Figure`` (typed `Any`: the analysis floor imports no drawing code).

        Raises:
            RuntimeError: When no heatmap view is registered (importing `flashtrace` registers it).
        """
        return _view("heatmap")(self, hop, **kwargs)

    def hop_graph(self, keep: float = 0.8, fold: bool = True) -> Any:
        """Plotly hop graph (prompt sentences → steps → answer); needs a trace made with ``steps=True``.

        Args:
            keep: The share of the influence the inputs shown hold together.
            fold: Whether to fold the other inputs into one node.

        Returns:
            The hop graph, a Plotly ``Figure`` (typed `Any`: the analysis floor imports no drawing code).

        Raises:
            RuntimeError: When no hop graph view is registered (importing `flashtrace` registers it).
            InputError: When the trace has no step-level attribution (from the view).
        """
        return _view("hop_graph")(self, keep, fold)

    def compare_depths(self, view: str = "added", shared: bool = True) -> Any:
        """Plotly strips of what each hop adds (``view="cumulative"``: the picture after hops 0..K).

        Args:
            view: ``"added"`` (what each hop adds) or ``"cumulative"`` (the picture after hops 0..K).
            shared: Whether every row shares one colour scale (else each row is scaled to its own maximum).

        Returns:
            The strips, a Plotly ``Figure`` (typed `Any`: the analysis floor imports no drawing code).

        Raises:
            RuntimeError: When no depth comparison view is registered (importing `flashtrace` registers it).
            InputError: When `view` is neither ``"added"`` nor ``"cumulative"`` (from the view).
        """
        return _view("compare_depths")(self, view, shared)

    def to_pandas(self) -> pd.DataFrame:
        """A pandas table, one row per token: text, role, offsets, final and prompt scores, per-hop contributions.

        Returns:
            The table, indexed by token position (`flashtrace.viz.notebook.to_pandas` names its columns).

        Raises:
            RuntimeError: When no table view is registered (importing `flashtrace` registers it).
        """
        return _view("to_pandas")(self)

    def show(self, k: int = 10, console: Console | None = None) -> None:
        """Display the trace: the HTML view in a notebook, coloured text (``rich``) in a terminal or on `console`.

        Args:
            k: How many top prompt words the terminal view lists.
            console: The ``rich`` console printed on; None for a new one (or the notebook's display in a Jupyter
                kernel).

        Raises:
            RuntimeError: When no show view is registered (importing `flashtrace` registers it).
        """
        return _view("show")(self, k, console)

    def scores_array(self, which: Literal["final", "prompt"] = "final") -> np.ndarray:
        """The scores as a NumPy array ``[n_tokens]`` (float64): ``final`` (the combined attribution over
        every token) or ``prompt`` (normalised over the user's prompt tokens, 0 elsewhere).

        Args:
            which: ``"final"`` or ``"prompt"``: which scores to return.

        Returns:
            A new float64 array of the scores, one per token.

        Raises:
            InputError: When `which` is neither ``"final"`` nor ``"prompt"``.
        """
        import numpy as np

        if which not in ("final", "prompt"):
            raise InputError(f"which must be 'final' or 'prompt', got {which!r}")
        return np.asarray(getattr(self.scores, which), dtype=np.float64)

    def hop_array(self, field: Literal["contribution", "weights", "raw"] = "contribution") -> np.ndarray:
        """The hops as a NumPy array ``[n_hops + 1, n_tokens]`` (float64): row k is hop k's ``contribution``
        (its additive share of the final scores), ``weights`` (what it attributed) or ``raw`` attribution.

        Args:
            field: ``"contribution"``, ``"weights"`` or ``"raw"``: which vector of each hop to return.

        Returns:
            A new float64 array, one row per recorded hop, one column per token.

        Raises:
            InputError: When `field` is not one of ``"contribution"``, ``"weights"``, ``"raw"``.
        """
        import numpy as np

        if field not in ("contribution", "weights", "raw"):
            raise InputError(f"field must be 'contribution', 'weights' or 'raw', got {field!r}")
        return np.asarray([getattr(h, field) for h in self.hops], dtype=np.float64).reshape(len(self.hops),
                                                                                            self.n_tokens)

    def __repr__(self) -> str:
        """One line (at most 200 characters): model, tokens, hops, target and the top prompt sentence."""
        line = _VIEWS.get("repr")  # `analysis.summary.trace_line`, registered when flashtrace is imported
        return line(self) if line else f"<Trace {self.model.name[:60]} · {self.n_tokens:,} tokens>"

    __str__ = __repr__

    def top_prompt_tokens(self, k: int = 10) -> list[tuple[int, str, float]]:
        """The `k` highest-scoring prompt positions as ``(index, text, normalised score)``.

        Args:
            k: How many positions to return.

        Returns:
            Up to `k` ``(index, text, normalised score)`` tuples, highest prompt score first (ties: earlier
                position first).
        """
        ranked = sorted(self.positions("prompt"), key=lambda i: -self.scores.prompt[i])
        return [(i, self.tokens[i].text, self.scores.prompt[i]) for i in ranked[:k]]

    # --- serialisation -----------------------------------------------------------------------------
    def to_json(self, indent: int | None = None) -> str:
        """The trace as JSON text (what `save` writes).

        Args:
            indent: The JSON indent (None: compact, one line).

        Returns:
            The JSON text of the trace.
        """
        return self.model_dump_json(indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> "Trace":
        """Parse and validate JSON text. Whatever the bytes, the only error is `TraceValidationError`, and the
        memory a parse may take is bounded before parsing (`json_budget`).

        Args:
            text: The JSON text, as a str or UTF-8 bytes (at most `MAX_FILE_BYTES`).

        Returns:
            The validated trace (an older schema version migrated).

        Raises:
            TraceValidationError: When the text is too large, not UTF-8, not JSON, over the parse budget, or not a
                valid trace.
        """
        return cls._from_owned([text])

    @classmethod
    def _from_owned(cls, holder: list) -> "Trace":
        """`from_json` of ``holder[0]``, which it takes over: each form of the text (UTF-8 bytes, ASCII JSON
        bytes) is freed once the next is made, so two are never held with the parse."""
        try:
            if len(holder[0]) > MAX_FILE_BYTES:
                raise TraceValidationError(f"trace is {len(holder[0])} bytes; the limit is {MAX_FILE_BYTES}")
            text = holder.pop()
            text = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
            text = json_text(text)  # ASCII: one byte a character, whatever the text holds
            check_json_budget(text, MAX_CONTAINERS)
            holder.append(text)
            del text
            return cls.from_dict(_parse(holder))
        except TraceValidationError:
            raise
        except JsonBudgetError as exc:
            raise TraceValidationError(str(exc)) from None
        except UnicodeError as exc:
            raise TraceValidationError(f"not valid JSON: the file is not UTF-8 text ({exc.reason} at byte "
                                       f"{getattr(exc, 'start', '?')})") from None
        except (ValueError, RecursionError) as exc:
            raise TraceValidationError(f"not valid JSON: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - the contract: a bad file is a TraceValidationError, never a crash
            raise TraceValidationError(f"invalid trace ({type(exc).__name__}: {exc})"[:500]) from None

    @classmethod
    def from_dict(cls, data: Any) -> "Trace":
        """Validate parsed JSON data as a Trace; raise TraceValidationError saying what is wrong.

        Args:
            data: The parsed JSON data (a dict for a trace; anything else is refused).

        Returns:
            The validated trace (an older schema version migrated).

        Raises:
            TraceValidationError: When `data` is not a dict or is not a valid trace (the message names the field
                and the problem).
        """
        if not isinstance(data, dict):
            raise TraceValidationError(f"a trace must be a JSON object, got {type(data).__name__}")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise TraceValidationError(_describe(exc)) from None
        except (ValueError, TypeError, RecursionError, ArithmeticError) as exc:
            raise TraceValidationError(str(exc)) from None

    def save(self, path: str | Path) -> Path:
        """Write atomically (temporary file + rename): a failed save never leaves a partial file.

        Args:
            path: The file to write (`to_json`); a regular file there is replaced.

        Returns:
            `path`, as a `Path`.

        Raises:
            DestinationError: When a folder, a device, a named pipe, a socket or a symbolic link is at `path`
                (from `atomic_write_text`).
        """
        return atomic_write_text(path, self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> "Trace":
        """Read and validate a trace file. Only regular files are read (a folder, a device, a named pipe or a
        socket is refused without being opened for reading), with the `MAX_FILE_BYTES` bound.

        Args:
            path: The trace file to read.

        Returns:
            The validated trace (an older schema version migrated).

        Raises:
            TraceValidationError: When `path` is not a regular file, or its content is not a valid trace.
            FileTooLargeError: When the file is over `MAX_FILE_BYTES` (from `read_regular_file`).
            FileNotFoundError: When the file is missing.
        """
        try:
            holder = [read_regular_file(path, MAX_FILE_BYTES, "trace file")]
        except NotAFileError as exc:
            raise TraceValidationError(str(exc)) from None
        return cls._from_owned(holder)


_VIEWS: dict[str, Callable] = {}


def register_views(**views: Callable) -> None:
    """Register how a `Trace` draws itself in a notebook (``html``, ``heatmap``, ``hop_graph``,
    ``compare_depths``, ``to_pandas``): importing `flashtrace` registers the presentation floor's views,
    so the record itself imports no figure code.

    Args:
        **views: The view functions by name (``html=...``, ``heatmap=...``, ...); one registered again replaces
            the earlier one.
    """
    _VIEWS.update(views)


def _view(name: str) -> Callable:
    try:
        return _VIEWS[name]
    except KeyError:
        raise RuntimeError(f"no '{name}' view is registered for traces (importing flashtrace registers them)") from None


def _parse(holder: list) -> Any:
    """The JSON of the ASCII bytes ``holder[0]``, which it takes over. pydantic-core's parser reads it (about
    three times as fast as the standard library's, and as `json` it shares equal object keys: through its
    cache of keys); what it refuses is read again by the standard library, which so decides what is JSON
    (it also reads lone UTF-16 surrogates) and names the error (NaN and Infinity: refused by both, in the
    standard library's words)."""
    text = holder.pop()  # freed on return, before the data is validated
    try:
        return from_json(text, allow_inf_nan=False, cache_strings="keys")
    except ValueError:
        pass
    text = text.decode("ascii")
    return json.loads(text, parse_constant=_reject_constant)


def _reject_constant(name: str) -> float:
    raise InputError(f"{name} is not allowed in a trace (numbers must be finite)")


def _short(value, limit: int = 80) -> str:
    """`value`'s repr cut to `limit` characters: an error message quotes a bad value, never all of it."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _loc_part(part) -> str:
    """One step of an error's location as one short printable word: a key written with line breaks or other
    control characters is shown escaped (``'\\n'``), a long one cut, so the message stays one line."""
    text = str(part)
    if not text.isprintable():
        return _short(text, 40)
    return text if len(text) <= 40 else text[:39] + "…"


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(_loc_part(p) for p in err["loc"]) or "trace"
        message = err["msg"] if err["msg"].isprintable() else repr(err["msg"])[1:-1]
        parts.append(f"{loc}: {message[:200]}")
    more = f" (+{exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
    return "invalid trace: " + "; ".join(parts) + more


def normalised(values: list[float], positions: list[int]) -> list[float]:
    """`values` restricted to `positions` and scaled to sum 1 (zeros elsewhere).

    Args:
        values: One value per position.
        positions: The positions to keep.

    Returns:
        A list as long as `values`: the kept values divided by their sum, zeros elsewhere (all zeros when that sum
            is not positive and finite).
    """
    out = [0.0] * len(values)
    total = sum(values[i] for i in positions)
    if total > 0 and math.isfinite(total):
        for i in positions:
            out[i] = values[i] / total
    return out
