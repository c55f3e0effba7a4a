"""App-side state shared across reruns, sessions and browser tabs (Streamlit caches).

- Models and recordings are cached with ``st.cache_resource``, so changing a target, hop count or
  method reuses the one forward pass, in every tab.
- One process-wide lock serialises model use (forward passes, generation, attribution): a second tab
  waits for its turn while every tab stays free to browse traces.
- Traces are addressed by a reference string kept in the URL: ``gallery:NAME`` or ``lib:NAME``.
- `read_only`: a server started for a shared demo browses and exports only. Its library refuses every
  write and `cached_model` refuses to load a model, whatever a page, a URL or a session asks for.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass

import streamlit as st

from typing import TYPE_CHECKING

from ..base.units import time_range  # noqa: F401 - the pages read it from here
from ..store.gallery import gallery_path, list_gallery
from ..engine.inputs import ResponseSpans, answer_value, build_sequence
from ..base.errors import InputError, FlashTraceError
from ..base.fileio import file_stamp
from ..store.app_files import READ_ONLY_ENV
from ..store.library import Library
from ..run.prechecks import check_text_size
from ..analysis.schema import Trace

if TYPE_CHECKING:  # the engine (torch, transformers) is imported only when a model is used
    from collections.abc import Iterator
    from pathlib import Path

    from ..analysis.graph import HopGraph
    from ..engine.estimate import Estimate
    from ..engine.models import LoadedModel
    from ..run.tracing import Prepared

CharRange = tuple[int, int]


_MODEL_LOCK = threading.Lock()  # module state, not a Streamlit cache: "Clear caches" must not drop it


def model_lock() -> threading.Lock:
    """The one lock guarding model use, shared by every session of this server (it survives cache clears).

    Returns:
        The process-wide lock (module state, not a Streamlit cache: "Clear caches" does not drop it).
    """
    return _MODEL_LOCK


@contextmanager
def using_model(message: str = "Waiting for the model: another tab is running a trace…") -> Iterator[None]:
    """Hold the model lock; shows `message` while waiting for another session to finish.

    Args:
        message: The spinner's text (a constant) while another session holds the lock.

    Yields:
        None, once, with the lock held; it is released however the block ends.
    """
    lock = model_lock()
    if not lock.acquire(blocking=False):
        with st.spinner(message):  # md-ok: a constant
            lock.acquire()
    try:
        yield
    finally:
        lock.release()


class ReadOnlyError(FlashTraceError, PermissionError):
    """The app is a read-only demo: it runs no model and writes nothing."""


def read_only() -> bool:
    """Whether this server is a read-only demo: ``flashtrace app --read-only``, ``$FLASHTRACE_READ_ONLY`` set
    to 1/true/yes, or ``read_only = true`` under ``[flashtrace]`` in ``.streamlit/secrets.toml`` (Streamlit's
    place for an app's own settings, also on a hosted deployment). Only the server's own settings count:
    nothing in a URL or a session can turn it off.

    Returns:
        True when one of those settings says so; False otherwise, also when there is no secrets file or
            Streamlit cannot read it.
    """
    if os.environ.get(READ_ONLY_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        return True
    try:
        value = st.secrets.get("flashtrace", {}).get("read_only", False)
    except Exception:  # noqa: BLE001 - no secrets file (the usual case), or one Streamlit cannot read
        return False
    return value is True or str(value).strip().lower() in ("1", "true", "yes", "on")


def require_writable(what: str) -> None:
    """`ReadOnlyError` in a read-only demo: the last guard behind every control that runs or writes.

    Args:
        what: What is refused, in words ("running a model"), for the message.

    Raises:
        ReadOnlyError: When this server is a read-only demo (`read_only`).
    """
    if read_only():
        raise ReadOnlyError(f"this is a read-only demo: {what} is switched off")


def cached_model(name: str) -> LoadedModel:
    """`load_model(name)`, once per server (errors are not cached, so a fixed name can be retried); refused in
    a read-only demo.

    Args:
        name: The model's name or alias, as `flashtrace.engine.models.load_model` takes it.

    Returns:
        The loaded model with its tokenizer, shared by every session (at most 3 are kept).

    Raises:
        ReadOnlyError: In a read-only demo.
    """
    require_writable("running a model")
    return _cached_model(name)


@st.cache_resource(show_spinner=False, max_entries=3)
def _cached_model(name: str) -> LoadedModel:
    return load_model(name)


cached_model.clear = _cached_model.clear  # as on any Streamlit cache: drop the loaded models


@dataclass(frozen=True)
class ModelOption:
    """A model the Trace page offers: its name, a short label for the picker, its facts (size, licence, speed
    here) and whether it can run now (a built-in not prepared yet cannot: `command` prepares it)."""

    name: str
    label: str
    facts: str
    ready: bool = True
    command: str = ""


@st.cache_data(ttl=30, show_spinner=False)
def model_options() -> list[ModelOption]:
    """The Trace page's models: the prepared built-ins most capable first (it opens on the first), then those not
    prepared, then the random-weight test models (re-read every 30 s: a prepare in a terminal shows up).

    Returns:
        One `ModelOption` per model, in that order.
    """
    from ..engine.choices import builtin_choices
    from ..engine.models.aliases import SHAPED_CONFIGS, TINY_ALIASES
    from ..engine.models.builtin import SMOLLM2
    from ..engine.models.prepare import prepare_command

    options = []
    for c in builtin_choices():
        ready = bool(c.prepared) or c.model is SMOLLM2  # the default converts itself on first use (seconds)
        label = f"{c.model.name} · {c.model.n_params / 1e9:.2f} B · {c.token_s:.2f} s/token" + ("" if ready else
                                                                                               " · not prepared")
        options.append(ModelOption(c.model.name, label, f"{c.model.note}; {c.facts}", ready, prepare_command(c.model)))
    options.sort(key=lambda o: not o.ready)  # stable: the most capable first among those ready, then the others
    return options + [ModelOption(name, name, "random weights, for tests") for name in (*TINY_ALIASES, *SHAPED_CONFIGS)]


def load_model(name: str) -> LoadedModel:
    """`flashtrace.engine.models.load_model`, importing the engine (torch, transformers) on first use.

    Args:
        name: The model's name or alias.

    Returns:
        The loaded model with its tokenizer (not cached: `cached_model` caches it).

    Raises:
        ReadOnlyError: In a read-only demo.
    """
    require_writable("running a model")
    from ..engine.models import load_model as load

    return load(name)


@st.cache_resource(show_spinner=False, max_entries=2)
def cached_prepared(model_name: str, prompt: str, response: str, chat_template: bool,
                    reasoning: CharRange | None, answer: CharRange | None, rule: str) -> Prepared:
    """The recorded forward pass of prompt + response with the given spans (cached by all inputs).

    Args:
        model_name: The model's name (loaded through `cached_model`).
        prompt: The prompt text.
        response: The response text.
        chat_template: Whether the prompt is wrapped in the model's chat template.
        reasoning: The reasoning's character range in the response; None for no reasoning.
        answer: The answer's character range in the response; None when there is none.
        rule: The rule that found the answer (`ResponseSpans.rule`).

    Returns:
        The `Prepared` trace input: the model, the sequence, its recording and the forward pass's seconds.

    Raises:
        ReadOnlyError: In a read-only demo (no model is loaded).
    """
    from ..engine.models import record_forward
    from ..run.tracing import Prepared

    loaded = cached_model(model_name)
    sequence = build_sequence(loaded.tokenizer, prompt, response, chat_template,
                              spans=ResponseSpans(reasoning, answer, rule))
    recording = record_forward(loaded, sequence.ids)
    return Prepared(loaded, sequence, recording, {"forward_s": recording.forward_seconds})


def library() -> Library:
    """The library in ``$FLASHTRACE_LIBRARY`` (read on every call so tests can point it elsewhere); read-only
    (it writes nothing to its folder) in a read-only demo.

    Returns:
        A new `Library` over that folder.
    """
    return Library(read_only=read_only())


@st.cache_resource(show_spinner=False, max_entries=16)
def _load_file(path: str, stamp: tuple[int, int, int, int]) -> Trace:
    return Trace.load(path)


@dataclass(frozen=True)
class TraceRef:
    """Where a trace lives: ``gallery:NAME``, ``lib:NAME`` or ``lib:COLLECTION/NAME``."""

    source: str  # "gallery" | "lib"
    name: str

    def __str__(self) -> str:
        return f"{self.source}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> "TraceRef":
        """Read a reference written as `gallery:NAME` or `lib:NAME` (`lib:COLLECTION/NAME`); ValueError otherwise.

        Args:
            text: The reference's text, ``gallery:NAME``, ``lib:NAME`` or ``lib:COLLECTION/NAME``.

        Returns:
            The reference (its source, ``"gallery"`` or ``"lib"``, and its name).

        Raises:
            InputError: When `text` is not a trace reference (a ValueError).
        """
        source, sep, name = (text or "").partition(":")
        if not sep or source not in ("gallery", "lib") or not name:
            raise InputError(f"'{text}' is not a trace reference; expected gallery:NAME or lib:NAME")
        return cls(source, name)

    def path(self) -> Path:
        """The trace file this reference names (in the gallery or the library).

        Returns:
            The path of the trace's file (which may not exist).

        Raises:
            LibraryError: When a ``lib:`` name (or its collection) is not a valid library name (a ValueError).
        """
        if self.source == "gallery":
            return gallery_path(self.name)
        collection, sep, name = self.name.rpartition("/")  # lib:COLLECTION/NAME: a trace in a collection
        return (library().collection(collection) if sep else library()).path(name)


def load_trace(ref: TraceRef | str) -> Trace:
    """The trace behind `ref`, cached until its file changes.

    Args:
        ref: The trace's reference, or its text (``gallery:NAME``, ``lib:NAME`` or ``lib:COLLECTION/NAME``).

    Returns:
        The trace, validated on read.

    Raises:
        InputError: When `ref` is not a trace reference or its file does not exist (a ValueError).
        ValueError: When the file is not a valid trace (with a message).
        OSError: When the file cannot be read (with a message).
    """
    ref = TraceRef.parse(ref) if isinstance(ref, str) else ref
    path = ref.path()
    if not path.is_file():
        raise InputError(f"trace '{ref}' does not exist (deleted or renamed?)")
    return _load_file(str(path), file_stamp(path))


def trace_choices() -> dict[str, str]:
    """``{reference: label}`` for every gallery trace and readable library trace.

    Returns:
        ``{"gallery:NAME": "Gallery · <title>", "lib:NAME": "Library · NAME"}``, the gallery first.
    """
    out = {f"gallery:{it.name}": f"Gallery · {it.title}" for it in list_gallery()}
    for entry in library().entries():
        if entry.readable:
            out[f"lib:{entry.name}"] = f"Library · {entry.name}"
    return out


class Progress:
    """Adapts ``attribute(progress=...)`` callbacks to a Streamlit progress bar (throttled), with the time left
    when the part's estimate (`estimate_s`) is given. Each call is a point where Streamlit can stop the run."""

    def __init__(self, label: str, estimate_s: float | None = None):
        from ..evaluate.estimate import Countdown

        self.bar = st.progress(0.0, text=label)  # md-ok: callers pass a constant
        self.label, self.last, self.started = label, 0.0, time.perf_counter()
        self.countdown = Countdown(estimate_s) if estimate_s else None

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        if now - self.last > 0.1 or done >= total:
            share = min(done / max(total, 1), 1.0)
            left = "" if self.countdown is None else \
                f" · {time_range(*self.countdown.left(self.countdown.total_s * share, now - self.started))} left"
            self.bar.progress(share, text=f"{self.label} {done:d}/{total:d}{left}")  # md-ok
            self.last = now


def generation_estimate(loaded: LoadedModel, prompt: str, max_new: int, chat_template: bool,
                        reasoning_instruction: bool) -> str:
    """One line before generating: how long up to `max_new` new tokens should take, as a range
    (`engine.estimate.generation_note`).

    Args:
        loaded: The model that is to generate, with its tokenizer.
        prompt: The prompt text.
        max_new: The most tokens generated.
        chat_template: Whether the prompt is wrapped in the model's chat template.
        reasoning_instruction: Whether the reasoning instruction is added to the prompt.

    Returns:
        The line, naming the prompt's tokens and the predicted time.

    Raises:
        InputError: When the prompt plus `max_new` would not fit the model (a ValueError).
    """
    from ..engine.estimate import generation_note

    return generation_note(loaded, prompt, max_new, chat_template, reasoning_instruction)


def explained_value(response: str, spans: ResponseSpans, prompt: str) -> tuple[str, str]:
    """What the default target (the answer's value, `inputs.answer_value`) explains, and why it is the whole answer
    when it is, for the Trace page.

    Args:
        response: The response text.
        spans: The response's spans; the answer's is searched for the value.
        prompt: The prompt text (words of the question are not the value).

    Returns:
        ``(text, why)``: the text the default target explains, and why it is the whole answer ("" when it is
            the value).
    """
    value = answer_value(response, spans.answer, prompt)
    if value is None:
        return response[spans.answer[0]:spans.answer[1]], "the whole answer: it does not restate the question"
    return response[value[0]:value[1]], ""


def spans_with_answer(response: str, answer_text: str) -> ResponseSpans:
    """Spans where the answer is the last occurrence of `answer_text` and the reasoning is everything
    before it (both trimmed of surrounding whitespace).

    Args:
        response: The response text.
        answer_text: The answer as the user marked it (surrounding whitespace ignored).

    Returns:
        The spans, with rule ``user``; no reasoning span when nothing but whitespace comes before the answer.

    Raises:
        InputError: When `answer_text` is empty or does not occur in the response.
    """
    needle = answer_text.strip()
    at = response.rfind(needle) if needle else -1
    if at < 0:
        raise InputError(f"the answer text {needle[:60]!r} does not occur in the response")
    before = response[:at]
    lead = len(before) - len(before.lstrip())
    reasoning = (lead, len(before.rstrip())) if before.strip() else None
    return ResponseSpans(reasoning, (at, at + len(needle)), "user")


@st.cache_resource(show_spinner=False, max_entries=32)
def _graph(ref: str, stamp: tuple[int, int, int, int], threshold: float):
    from ..analysis.graph import HopGraph

    return HopGraph.from_trace(load_trace(ref), threshold)


def hop_graph(ref: TraceRef | str, threshold: float) -> HopGraph:
    """The `HopGraph` of a stored trace at `threshold` (cached until the file changes).

    Args:
        ref: The trace's reference, or its text.
        threshold: The graph's threshold (`HopGraph.from_trace`).

    Returns:
        The trace's hop graph.
    """
    ref = TraceRef.parse(ref) if isinstance(ref, str) else ref
    return _graph(str(ref), file_stamp(ref.path()), threshold)


def run_estimate(loaded: LoadedModel, prompt: str, response: str, spans: ResponseSpans, target: str, hops: int,
                 chat_template: bool = True, target_chars: CharRange | None = None,
                 steps: bool = True) -> tuple[int, Estimate | None]:
    """``(n_tokens, estimate or None)`` for tracing `prompt` + `response` with `loaded`. Everything that can be
    checked before the forward pass is, with a one-line ValueError/ResourceError: the text's length (before
    tokenising), the sequence against the model's context, the target (a non-empty span of the response),
    the memory the run needs.

    Args:
        loaded: The model that is to trace, with its tokenizer.
        prompt: The prompt text.
        response: The response text.
        spans: The response's reasoning and answer spans.
        target: What is explained (``value``, ``answer``, ``response``, ``reasoning``, ``START:END``), or
            ``character range`` for `target_chars`.
        hops: The hops after hop 0.
        chat_template: Whether the prompt is wrapped in the model's chat template.
        target_chars: The target's character range in the response, with target ``character range``.
        steps: Whether the step sweep (hop graph data) runs too.

    Returns:
        The sequence's length in tokens and the run's estimate.

    Raises:
        InputError: When `target_chars` is empty, the text is too long, the sequence exceeds the model's context,
            or the target is not a non-empty span of the response (a ValueError).
        ResourceError: When the run would not fit in memory.
    """
    from ..engine.estimate import check_run
    from ..run.tracing import resolve_target

    if target_chars is not None and target_chars[0] >= target_chars[1]:
        raise InputError("the character range is empty: select at least one character of the response")
    check_text_size(loaded, prompt, response)  # a bound on characters, before tokenising
    sequence = build_sequence(loaded.tokenizer, prompt, response, chat_template, spans=spans)
    lo, hi = resolve_target(sequence, "answer" if target == "character range" else target, target_chars)
    estimate = check_run(loaded, len(sequence), hops=hops, n_target=hi - lo,  # the CLI's and the API's check
                         n_recursive=len(sequence.positions("reasoning", "answer")), steps=steps)
    return len(sequence), estimate


def describe_estimate(n_tokens: int, estimate: Estimate | None) -> str:
    """One line for the page: the time as a range, the peak memory and the size.

    Args:
        n_tokens: The sequence's length in tokens.
        estimate: The run's estimate (`run_estimate`); None when there is none.

    Returns:
        The line: the time range with the one-time parts it includes (model load, warm-up), the tokens and the
            peak memory in GiB; only the tokens when there is no estimate.
    """
    if estimate is None:
        return f"{n_tokens:,} tokens (no cost estimate in this version)"
    one_time = " and ".join(what for what, s in (("model load", estimate.load_s), ("warm-up", estimate.warmup_s)) if s)
    return (f"{time_range(*estimate.range())} for {n_tokens:,} tokens"
            + (f" (with the {one_time})" if one_time else "")
            + f", peak memory about {estimate.peak_bytes / 2**30:.1f} GiB")


@st.cache_data(show_spinner=False, max_entries=16)
def _faithfulness(ref: str, stamp: tuple[int, int, int, int]) -> dict:
    from ..evaluate.faithfulness import faithfulness_check

    trace = load_trace(ref)
    with model_lock():  # no spinner here: a cached function must not draw
        return faithfulness_check(cached_model(trace.model.name), trace)


def live_faithfulness(ref: TraceRef | str) -> dict:
    """The Story page's faithfulness check of a stored trace, run now with its model (cached per file).

    Args:
        ref: The trace's reference, or its text.

    Returns:
        The check's record (`evaluate.faithfulness.faithfulness_check`): the answer's log-probability before
            deletion, after deleting the top prompt tokens, and after deleting as many at random.

    Raises:
        ReadOnlyError: In a read-only demo (no model is loaded).
    """
    ref = TraceRef.parse(ref) if isinstance(ref, str) else ref
    return _faithfulness(str(ref), file_stamp(ref.path()))
