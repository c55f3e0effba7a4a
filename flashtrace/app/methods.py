"""Compare → Methods in the app: methods run live on a stored trace, one at a time, with progress.

- The warm-up (model load, the trace's forward pass, first-use setup) is done once per trace, cached, and
  reported apart: no method's time includes it.
- Each method's result (its attribution time, deletion curve and metrics, as `evaluate_method` writes
  them) is kept in the session as soon as it finishes, so a cancelled comparison keeps what it ran and a
  new one runs only what is missing. Deletion states are scored once per trace (the cached context keeps
  them), so a method whose curve reaches a state another already scored does not run it again.
- Progress is drawn for every layer of every forward pass, and each of those calls is a point where Cancel
  stops the run (`LiveProgress`); an error clears the running panel and its Cancel button.
- Fast methods read the one recorded forward pass; the slow ones (IG, segment ablation) run the model
  many times and are offered only on request.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING

import streamlit as st

from ..analysis.text import counted
from .state import TraceRef, cached_model, load_trace, model_lock
from .ui import plain
from ..base.fileio import file_stamp
from ..base.units import time_range

if TYPE_CHECKING:
    from collections.abc import Iterator

    from streamlit.delta_generator import DeltaGenerator

    from ..analysis.schema import Trace
    from ..evaluate.estimate import RunEstimate
    from ..evaluate.methods import EvalContext
    from ..evaluate.runner import MethodProgress

FAST_METHODS = ("flashtrace-k0", "flashtrace-k1", "flashtrace-k2", "ifr", "attention", "rollout")
SLOW_METHODS = ("ig", "perturbation")  # many forward or backward passes each: opt-in
DEFAULT_CHOICE = ("flashtrace-k0", "flashtrace-k1", "ifr", "attention")
K = 20  # deletion steps
BATCH = 4  # deletion states per forward pass: as fast as 16 on a CPU, and a layer of it ends sooner on Cancel
_WARM: list = [None]  # the key `warm_context` last computed


def stamp(ref: TraceRef) -> tuple:
    """The trace's identity for caching: its reference and its file's `base.fileio.file_stamp`.

    Args:
        ref: The trace's reference (gallery or library).

    Returns:
        ``(str(ref), inode, size, modification time, change time)``, the times in nanoseconds.
    """
    return str(ref), *file_stamp(ref.path())


@st.cache_resource(show_spinner=False, max_entries=1)
def warm_context(key: tuple[str, int, int]) -> tuple[EvalContext, dict[str, float]]:
    """``(EvalContext, {step: seconds})`` for the trace behind `key`: the model loaded, the trace's prompt and
    response recorded, and one untimed FlashTrace pass so first-use costs land here, not on a method.

    Cached once per server for one trace (the last one warmed).

    Args:
        key: The first three items of `stamp`: the trace's reference, its inode and its size.

    Returns:
        The warm `EvalContext`, and the seconds of each warm-up step ("model load", "forward pass",
            "first-use setup").
    """
    from ..engine.models.scoring import scoring_model
    from ..evaluate.methods import build_context, get_eval_method
    from ..evaluate.tasks import Example

    trace = load_trace(key[0])
    gallery = trace.extra.get("gallery", {})
    example = Example(trace.prompt, trace.response, "", [tuple(g) for g in gallery.get("gold", [])],
                      gallery.get("task", "trace"))
    warmup = {}
    with model_lock():
        start = time.perf_counter()
        loaded = cached_model(trace.model.name)
        warmup["model load"] = time.perf_counter() - start
        start = time.perf_counter()
        ctx = build_context(loaded, example, target=tuple(trace.settings.target),
                            chat_template=trace.settings.chat_template, batch_size=BATCH)
        warmup["forward pass"] = time.perf_counter() - start
        start = time.perf_counter()
        get_eval_method("flashtrace-k0")(ctx)
        scoring_model(loaded, ctx.score_dtype)  # the deletion curves' scoring copy, when they use one
        warmup["first-use setup"] = time.perf_counter() - start
    _WARM[0] = key
    return ctx, warmup


def is_warm(key: tuple[str, int, int]) -> bool:
    """Whether the trace behind `key` has its warm context (the cache holds one trace: the last one warmed).

    Args:
        key: The key `warm_context` takes (the first three items of `stamp`).

    Returns:
        True when `warm_context` last computed this key.
    """
    return _WARM[0] == key


def precisions(trace: Trace) -> list[str]:
    """The deletion-scoring precisions offered for `trace`'s model, the default first.

    Args:
        trace: The trace whose model scores the deletion curves.

    Returns:
        ``[bfloat16, float32]`` where a copy of its float32 model with bfloat16 matrix products scores faster
            on this processor (`engine.models.scoring`), else only the model's own dtype.
    """
    from ..engine.models.scoring import choose

    info = trace.model
    chosen = choose(info.dtype, "cpu", info.n_params)
    return [chosen] if chosen == info.dtype else [chosen, info.dtype]


def run_method(ctx: EvalContext, name: str, progress: MethodProgress | None = None,
               precision: str | None = None) -> dict:
    """One method on a warm context: its record entry.

    Args:
        ctx: The warm context (`warm_context`); its scoring precision is set to `precision` when one is given.
        name: The method's evaluation name (e.g. ``flashtrace-k1``).
        progress: ``progress(method, phase, done, total)`` follows it
            (`flashtrace.evaluate.runner.evaluate_method`) and may raise to stop it; None for no progress.
        precision: The dtype name the deletion curve is scored in; None (the default) keeps the context's.

    Returns:
        The method's record entry (``seconds`` = its attribution only, ``deletion_s`` = its deletion curve,
            counting only the states no earlier method of this trace had scored in that `precision`), with
            ``_record``: the example record holding it alone.
    """
    import torch

    from ..evaluate.runner import evaluate_method, example_record

    with model_lock():
        if precision:  # the runner keeps one scorer per precision (`evaluate.runner.scorer`)
            ctx.score_dtype = getattr(torch, precision)
        entry = evaluate_method(ctx, name, K, progress)
    return {**entry, "_record": example_record(ctx, {name: entry}, K)}


class LiveProgress:
    """``progress(method, phase, done, total)`` drawn on a Streamlit progress bar with the time left in the
    run (`Countdown` of the run's estimate), and the cancel check of a running comparison: every call (each
    layer of each forward pass) is a point where Streamlit can stop the script run, so Cancel stops the work
    within a layer's time, not at the end of a method."""

    def __init__(self, bar, index: int, count: int, clock: tuple | None = None, every_s: float = 0.15):
        # clock: (Countdown, run start, estimated seconds done before this method, this method's (attr, del) s)
        self.bar, self.index, self.count, self.clock, self.every_s, self.last = bar, index, count, clock, every_s, 0.0

    def _left(self, phase: str, share: float, now: float) -> str:
        if self.clock is None:
            return ""
        countdown, started, before, (attribution_s, deletion_s) = self.clock
        done = before + (0.0 if phase == "attribution" else attribution_s + deletion_s * share)
        return f" · {time_range(*countdown.left(done, now - started))} left"

    def __call__(self, method: str, phase: str, done: int, total: int) -> None:
        _ = "methods_run" in st.session_state  # a yield point: Streamlit raises here when Cancel was clicked
        now = time.perf_counter()
        if now - self.last < self.every_s and done < total:
            return
        self.last = now
        share = done / total if total else 1.0
        what = "attribution" if phase == "attribution" else f"deletion curve {share:.0%}"
        overall = (self.index + (0.1 if phase == "attribution" else 0.1 + 0.9 * share)) / self.count
        self.bar.progress(min(overall, 1.0), text=f"{method} ({self.index + 1:d} of {self.count:d}): {what}"  # md-ok
                          + self._left(phase, share, now))  # md-ok: registry names, a phase and numbers


def comparison_plan(trace: Trace, pending: list[str], first: bool, warm: bool,
                    precision: str | None = None) -> RunEstimate:
    """The `RunEstimate` of running `pending` on `trace` (model shape from the trace: nothing is loaded).

    Args:
        trace: The trace the methods run on.
        pending: The methods to run, in order.
        first: Whether no deletion state of this trace is scored yet in that precision.
        warm: Whether the trace is warm already; unless it is, the warm-up (model load, forward pass,
            first-use setup) is counted.
        precision: The dtype name each method's deletion curve is scored in; None (the default) means the
            first of `precisions`.

    Returns:
        The estimate: the warm-up as its setup, then each method.
    """
    from ..engine.estimate import estimate, speed_of
    from ..engine.models.scoring import speedup
    from ..evaluate.estimate import ExampleSize, RunEstimate, example_estimate

    n = len(trace.tokens)
    lo, hi = trace.settings.target
    size = ExampleSize(n, hi - lo, len(trace.positions("reasoning", "answer")), len(trace.positions("prompt")),
                       max(1, sum(1 for s in trace.segments or [] if s.role == "prompt")))
    methods = pending if first else ["(scored)", *pending]  # a method before: the end states are scored
    info = trace.model  # warm_context loads it on the CPU
    faster = speedup(info.dtype, "cpu", precision or precisions(trace)[0])
    example = example_estimate(info, size, methods, K, speed=speed_of(), recorded=True, score_speedup=faster)
    example["methods"].pop("(scored)", None)
    setup = 0.0 if warm else estimate(trace.model, n, 0, n_target=hi - lo, load=True, warm=False).seconds
    return RunEstimate(setup, [example])


def combined(results: dict[str, dict], names: list[str]) -> dict | None:
    """One evaluation record holding the finished methods among `names` (in that order), or None.

    Args:
        results: ``{method: its entry}`` as `run_method` returns them.
        names: The methods wanted, in order.

    Returns:
        The record of the first finished method with every finished one of `names` under ``methods`` (their
            ``_record`` dropped); None when none of them has finished.
    """
    done = [n for n in names if n in results]
    if not done:
        return None
    base = {k: v for k, v in results[done[0]]["_record"].items() if k != "methods"}
    return {**base, "methods": {n: {k: v for k, v in results[n].items() if k != "_record"} for n in done}}


@contextmanager
def ticking(placeholder: DeltaGenerator, label: str) -> Iterator[None]:
    """Show `label` with the seconds elapsed in `placeholder`, refreshed every half second from a helper
    thread while the block runs (a slow method gives no progress of its own).

    Args:
        placeholder: The Streamlit placeholder (`st.empty()`) the caption is drawn in.
        label: What is running, escaped by the caller.

    Yields:
        None, once: the block runs while the seconds tick.
    """
    from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

    stop = threading.Event()
    start = time.perf_counter()

    def beat() -> None:
        while not stop.wait(0.5):
            placeholder.caption(f"{label}: {time.perf_counter() - start:.0f} s elapsed")  # md-ok: the caller escapes

    thread = threading.Thread(target=beat, daemon=True)
    add_script_run_ctx(thread, get_script_run_ctx())
    placeholder.caption(f"{label}: 0 s elapsed")  # md-ok: the caller escapes
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def run_comparison(key: tuple[str, int, int], pending: list[str], results: dict, plan: RunEstimate,
                   precision: str | None = None) -> None:
    """Run the `pending` methods (warm-up first), each method's progress and the time left drawn as it goes;
    Cancel (or an error) stops at the next layer of the forward pass running. The panel is gone after an error.

    The warm-up's step times go to ``session_state["methods_warmup"]`` and the run's wall time and its parts to
    ``session_state["methods_timing"]``.

    Args:
        key: The trace's key for `warm_context` (the first three items of `stamp`).
        pending: The methods to run, in order.
        results: ``{method: its entry}``; each method's entry is added as soon as it finishes.
        plan: The run's `RunEstimate` (`comparison_plan`), for the time left.
        precision: The dtype name the deletion curves are scored in; None keeps the context's.
    """
    from ..evaluate.estimate import Countdown

    ss = st.session_state
    cancel, panel = st.empty(), st.empty()  # both cleared when the run ends, however it ends
    cancel.button("Cancel", key="cancel_methods", help="stops within a second; the methods that finished stay",
                  on_click=lambda: ss.update(methods_cancelled=True))
    started, timing = time.perf_counter(), {"warm-up": 0.0, "attribution": 0.0, "deletion curves": 0.0}
    try:
        with panel.container(), st.status("Running the methods…", expanded=True) as status:
            ticker, bar = st.empty(), st.progress(0.0)
            with ticking(ticker, "Warm-up (model load, the trace's forward pass)"):
                ctx, ss["methods_warmup"] = warm_context(key)
            timing["warm-up"] = time.perf_counter() - started
            ticker.empty()
            countdown, done_s = Countdown(plan.seconds), timing["warm-up"]
            for i, name in enumerate(pending):
                cost = plan.examples[0]["methods"][name]
                progress = LiveProgress(bar, i, len(pending), (countdown, started, done_s, cost))
                results[name] = run_method(ctx, name, progress, precision)
                done_s += sum(cost)
                timing["attribution"] += results[name]["seconds"]
                timing["deletion curves"] += results[name]["deletion_s"]
                st.write(f"{plain(name)}: attribution {results[name]['seconds']:.2f} s, deletion curve "
                         f"{results[name]['deletion_s']:.1f} s ({results[name]['deletion_runs']:d} new model runs)")
            status.update(label=f"Ran {plain(counted(len(pending), 'method'))}", state="complete")
    except Exception:
        ss["methods_run"] = None  # an error is shown once, not retried on every rerun
        panel.empty()
        raise
    finally:
        cancel.empty()
    ss["methods_timing"] = {"wall": time.perf_counter() - started, **timing}


def precision_caption(record: dict) -> str:
    """What the deletion curves were scored in (records made before it was stored: float32).

    Args:
        record: An evaluation record (`combined`).

    Returns:
        A caption in Markdown: for bfloat16, how it was scored and how to get the model's own precision.
    """
    dtype = record.get("score_dtype", "float32")
    if dtype == "bfloat16":
        return ("Deletion curves scored with bfloat16 matrix products (a copy of the model; 1.6-2.3x faster "
                "than float32 on the processors with AMX we measured; docs/evaluation.md measures how far RISE "
                "and MAS move from float32's). Choose float32 (exact) above for the model's own precision.")
    return f"Deletion curves scored in {plain(dtype)}."


def timing_caption(timing: dict) -> str:
    """The last run's wall time and the parts it adds up from (the rest: drawing the page).

    Args:
        timing: ``{"wall": seconds, part: seconds, ...}`` as `run_comparison` stores it.

    Returns:
        ``Last run: W s = part s + ... + page updates R s.``
    """
    parts = {k: v for k, v in timing.items() if k != "wall"}
    rest = max(0.0, timing["wall"] - sum(parts.values()))
    return (f"Last run: {timing['wall']:.1f} s = " + " + ".join(f"{k} {v:.1f} s" for k, v in parts.items())
            + f" + page updates {rest:.1f} s.")
