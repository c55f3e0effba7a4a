"""Compare → Methods in the app: methods run live on a stored trace, one at a time, with progress.

- The warm-up (model load, the trace's forward pass, first-use setup) is done once per trace, cached, and
  reported apart: no method's time includes it.
- Each method's result (its attribution time, deletion curve and metrics, as `evaluate_context` writes
  them) is kept in the session as soon as it finishes, so a cancelled comparison keeps what it ran and a
  new one runs only what is missing.
- Fast methods read the one recorded forward pass; the slow ones (IG, segment ablation) run the model
  many times and are offered only on request.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

import streamlit as st

from .state import TraceRef, cached_model, load_trace, model_lock

FAST_METHODS = ("flashtrace-k0", "flashtrace-k1", "flashtrace-k2", "ifr", "attention", "rollout")
SLOW_METHODS = ("ig", "perturbation")  # many forward or backward passes each: opt-in
DEFAULT_CHOICE = ("flashtrace-k0", "flashtrace-k1", "ifr", "attention")
K = 20  # deletion steps


def stamp(ref: TraceRef) -> tuple[str, int, int]:
    """The trace's identity for caching: reference, modification time and size of its file."""
    stat = ref.path().stat()
    return str(ref), stat.st_mtime_ns, stat.st_size


@st.cache_resource(show_spinner=False, max_entries=1)
def warm_context(key: tuple[str, int, int]):
    """``(EvalContext, {step: seconds})`` for the trace behind `key`: the model loaded, the trace's prompt and
    response recorded, and one untimed FlashTrace pass so first-use costs land here, not on a method."""
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
                            chat_template=trace.settings.chat_template)
        warmup["forward pass"] = time.perf_counter() - start
        start = time.perf_counter()
        get_eval_method("flashtrace-k0")(ctx)
        warmup["first-use setup"] = time.perf_counter() - start
    return ctx, warmup


def run_method(ctx, name: str) -> dict:
    """One method on a warm context: its record entry (seconds = its attribution only, plus deletion_s)."""
    from ..evaluate.runner import evaluate_context

    with model_lock():
        record = evaluate_context(ctx, [name], K)
    return {**record["methods"][name], "deletion_s": record["deletion_s"], "_record": record}


def combined(results: dict[str, dict], names: list[str]) -> dict | None:
    """One evaluation record holding the finished methods among `names` (in that order), or None."""
    done = [n for n in names if n in results]
    if not done:
        return None
    base = {k: v for k, v in results[done[0]]["_record"].items() if k != "methods"}
    return {**base, "methods": {n: {k: v for k, v in results[n].items() if k != "_record"} for n in done}}


@contextmanager
def ticking(placeholder, label: str):
    """Show `label` with the seconds elapsed in `placeholder`, refreshed every half second from a helper
    thread while the block runs (a slow method gives no progress of its own)."""
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
