"""Long runs on the Trace page, shown as they go: generation streamed into the page, the forward pass by layer.

Every callback the engine makes while it runs (a new token, a layer starting) is a point where Streamlit
may stop the script run: a click on Cancel (or any widget) interrupts the model within a token's or a
layer's time, instead of after the run. The panels live in placeholders cleared however the run ends.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING

import streamlit as st

from ..base.units import time_range
from ..evaluate.estimate import Countdown

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ..engine.models.generation import Generated
    from ..engine.models.loading import LoadedModel

DRAW_EVERY_S = 0.15


def _yield_point() -> None:
    """Let Streamlit stop the script run here if a rerun or stop was asked for (any session-state read is a
    point where it checks)."""
    _ = "cancel_requested" in st.session_state


def _keep_partial() -> None:
    """Cancel's click: the text generated so far becomes the response, to keep or edit."""
    ss = st.session_state
    ss["generation_cancelled"] = True
    if ss.get("generation_partial") is not None:
        ss["pending_response"], ss["pending_prompt"] = ss["generation_partial"], ss.get("generation_prompt", "")


def streamed_generation(loaded: LoadedModel, prompt: str, max_new: int, chat_template: bool,
                        reasoning_instruction: bool) -> Generated:
    """`flashtrace.engine.models.generation.generate` with the response drawn as it grows, a bar over the new
    tokens with the time left, and a Cancel button that stops within a token and keeps the text so far.

    Args:
        loaded: The model that generates, with its tokenizer.
        prompt: The prompt text.
        max_new: The most tokens to generate.
        chat_template: Whether the prompt is wrapped in the model's chat template.
        reasoning_instruction: Whether the reasoning instruction is appended to the prompt.

    Returns:
        The `Generated` (the bar, the text and the Cancel button are removed however the generation ends).
    """
    from ..engine.estimate import generation_seconds
    from ..engine.models.generation import generate, generation_ids

    ss = st.session_state
    shown_prompt, ids = generation_ids(loaded, prompt, max_new, chat_template, reasoning_instruction)
    countdown = Countdown(generation_seconds(loaded, len(ids), max_new))
    ss["generation_prompt"], ss["generation_partial"], ss["generation_cancelled"] = shown_prompt, None, False
    cancel, panel = st.empty(), st.empty()
    cancel.button("Cancel", key="cancel_generation", on_click=_keep_partial,
                  help="stops within a token; the text so far becomes the response")
    with panel.container(border=True):
        bar, text_box = st.progress(0.0, text=f"Generating up to {max_new:d} tokens…"), st.empty()
    started, last = time.perf_counter(), [0.0]

    def on_text(text: str, n: int) -> None:
        ss["generation_partial"] = text  # also a point where Cancel stops the generation
        now = time.perf_counter()
        if now - last[0] < DRAW_EVERY_S and n < max_new:
            return
        last[0] = now
        left = time_range(*countdown.left(countdown.total_s * n / max_new, now - started))
        bar.progress(min(n / max_new, 1.0), text=f"{n:d} of at most {max_new:d} tokens · {left} left")  # md-ok
        text_box.text(text)

    try:
        return generate(loaded, prompt, max_new_tokens=max_new, chat_template=chat_template,
                        reasoning_instruction=reasoning_instruction, on_text=on_text)
    finally:
        cancel.empty()
        panel.empty()


@contextmanager
def forward_progress(loaded: LoadedModel, label: str) -> Iterator[None]:
    """A progress bar by layer for the forward passes run inside the block (a cached function's included:
    a helper thread draws, so nothing is recorded into its cache); each layer is a point where Cancel stops
    the run. The bar is removed when the block ends.

    Args:
        loaded: The model whose layers are followed, with its tokenizer.
        label: The bar's text (a constant), before ``layer i of n``.

    Yields:
        None, once: the block runs the forward passes.
    """
    from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

    from ..engine.models.progress import each_layer

    bar = st.progress(0.0, text=label)  # md-ok: callers pass a constant
    state, stop = {"layer": 0, "of": 1}, threading.Event()

    def on_layer(i: int, n: int) -> None:
        state["layer"], state["of"] = i + 1, n
        _yield_point()

    def draw() -> None:
        while not stop.wait(DRAW_EVERY_S):
            bar.progress(state["layer"] / state["of"], text=f"{label} layer {state['layer']:d} of {state['of']:d}")  # md-ok

    thread = threading.Thread(target=draw, daemon=True)
    add_script_run_ctx(thread, get_script_run_ctx())
    thread.start()
    try:
        with each_layer(loaded, on_layer):
            yield
    finally:
        stop.set()
        thread.join()
        bar.empty()


class CancellableRun:
    """The callbacks of a run under a Cancel button: `stop_point` (a point where the run can stop) and
    `progress` (draws the bar, then a stop point)."""

    def __init__(self, cancelled: str, label: str, estimate_s: float | None):
        from .state import Progress

        self.cancelled, self.bar = cancelled, Progress(label, estimate_s)

    def stop_point(self, *_args: object) -> None:
        """A point where the run stops if Cancel was clicked (any arguments, so it serves as a layer hook).

        Args:
            *_args: Whatever the caller passes (ignored), so it serves as a layer hook.
        """
        _ = self.cancelled in st.session_state  # a point where Streamlit stops the run when Cancel was clicked

    def progress(self, done: int, total: int) -> None:
        """Draw `done` of `total` on the bar, after a stop point.

        Args:
            done: How many steps are done.
            total: How many steps there are in all.
        """
        self.stop_point()
        self.bar(done, total)


@contextmanager
def cancellable(button_key: str, cancelled: str, running: str, label: str,
                estimate_s: float | None = None) -> Iterator[CancellableRun]:
    """A Cancel button and a progress bar while the block runs: the click sets ``session_state[cancelled]`` and
    Streamlit stops the run at the next stop point.

    Args:
        button_key: The Cancel button's widget key.
        cancelled: The session-state key the click sets to True.
        running: The session-state key cleared (set to None) however the block ends.
        label: The progress bar's text.
        estimate_s: The predicted seconds, from which the bar shows the time left; None when unknown.

    Yields:
        The `CancellableRun` (its callbacks are the run's stop points); ``session_state[running]`` is cleared
            and the button and the bar removed however the block ends.
    """
    ss = st.session_state
    cancel = st.empty()
    cancel.button("Cancel", key=button_key, help="stops within a second", on_click=lambda: ss.update({cancelled: True}))
    run = CancellableRun(cancelled, label, estimate_s)
    try:
        yield run
    finally:
        ss[running] = None
        cancel.empty()
        run.bar.bar.empty()  # a failed run leaves no bar behind (its error shows instead)


__all__ = ["streamed_generation", "forward_progress", "cancellable", "CancellableRun"]
