"""The built-in models as a model picker shows them: which are prepared, their size and licence, and what a
generated token and a trace cost (the cost estimate's numbers, `estimate`). The app's Trace page and
``flashtrace prepare --list`` quote this machine now; the command line's ``--model`` help quotes the reference
machine the estimate is calibrated on (2 CPU cores, idle, one thread), so that help stays instant and torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..base.units import time_range
from .estimate import RANGE_FACTOR, Speed, generation_step_seconds
from .models.builtin import BUILTINS, DEFAULT_ALIAS, BuiltinModel
from .models.prepare import prepare_command, prepared_dtypes

TRACE_TOKENS, TRACE_HOPS = 1_000, 2  # the trace whose cost a picker quotes: a 1,000-token reasoning trace, K = 2
GENERATION_CONTEXT = 300  # tokens before the generated one (a question and the start of its reasoning)
REFERENCE = Speed(forward=1.0, slow=1.0, threads=1)  # the estimate's reference machine, one thread, idle


@dataclass(frozen=True)
class BuiltinChoice:
    """One built-in model in a picker: the model, the dtypes it is prepared in (none: not prepared), the predicted
    seconds of one generated token and (on this machine only) of a `TRACE_TOKENS`-token trace, `TRACE_HOPS` hops."""

    model: BuiltinModel
    prepared: tuple[str, ...]
    token_s: float
    trace_s: float | None
    here: bool  # the costs are this machine's now (else the reference machine's)

    @property
    def facts(self) -> str:
        """Size, licence and speed, in one line."""
        m = self.model
        where = "here" if self.here else "on 2 idle CPU cores"
        trace = (f", a {TRACE_TOKENS:,}-token trace {time_range(self.trace_s / RANGE_FACTOR, self.trace_s * RANGE_FACTOR)}"
                 if self.trace_s is not None else "")
        return (f"{m.n_params / 1e9:.2f} B parameters, {m.converted_bytes() / 1e9:.1f} GB, {m.licence}; about "
                f"{self.token_s:.2f} s per generated token{trace} {where}")

    @property
    def label(self) -> str:
        """What a picker lists: the name, what it is for, then its facts, or how to prepare it."""
        state = self.facts if self.prepared else f"{self.facts}; not prepared: {prepare_command(self.model)}"
        return f"{self.model.name} ({self.model.note}): {state}"


def builtin_choices(here: bool = True) -> list[BuiltinChoice]:
    """Every built-in model, most capable first (float32), with its predicted costs on this machine now (`here`:
    imports torch to measure it) or on the reference machine (torch-free).

    Args:
        here: Whether the costs are this machine's now (imports torch to measure it, and predicts a trace's time)
            or the reference machine's (torch-free, no trace time).

    Returns:
        One choice per built-in model, most capable first.
    """
    from .estimate import estimate, speed_of

    speed = speed_of() if here else REFERENCE
    choices = []
    for model in BUILTINS.values():
        info = model.info()
        trace_s = (estimate(info, TRACE_TOKENS, TRACE_HOPS, n_target=16, n_recursive=TRACE_TOKENS // 2,
                            warm=True).seconds if here else None)
        choices.append(BuiltinChoice(model, tuple(prepared_dtypes(model.name)),
                                     generation_step_seconds(info, GENERATION_CONTEXT, speed), trace_s, here))
    return choices


def default_model_name() -> str:
    """The model a picker starts on: the most capable prepared built-in, else the default (prepared on first use).

    Returns:
        The built-in model's name (the default alias when none is prepared).
    """
    return next((c.model.name for c in builtin_choices(here=False) if c.prepared), DEFAULT_ALIAS)


def model_help() -> str:
    """The ``--model`` help of every command that runs a model: the built-ins with their facts, then the rest.

    Returns:
        The help text, with the reference machine's costs (torch-free).
    """
    listed = "; ".join(c.label for c in builtin_choices(here=False))
    return (f"a built-in model ({listed}; `flashtrace prepare --list` gives this machine's speeds); a tiny-<family> "
            "random-weight test model; a local folder with config.json; or a Hugging Face id")


__all__ = ["BuiltinChoice", "builtin_choices", "default_model_name", "model_help", "TRACE_TOKENS", "TRACE_HOPS"]
