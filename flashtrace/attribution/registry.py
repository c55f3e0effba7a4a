"""Attribution methods by name. A method turns a recording into an aggregator: target weight
vectors ``[B, N]`` → scores ``[B, N]``; recursive hops work with any of them.

A new method is one function registered here (or in its own module) with `register`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from ..models.recording import Recording
from .span import span_aggregate
from .tokenwise import tokenwise_aggregate

Tick = Callable[[int], None]


@dataclass(frozen=True)
class Method:
    name: str
    description: str
    build: Callable[..., Callable[[torch.Tensor], torch.Tensor]]  # (recording, tick, **options) -> aggregator
    progress_unit: str  # what one tick counts: "layer" or "row"


METHODS: dict[str, Method] = {}


def register(name: str, description: str, progress_unit: str = "layer"):
    def wrap(build):
        METHODS[name] = Method(name, description, build, progress_unit)
        return build

    return wrap


def get_method(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method '{name}'; available: {', '.join(sorted(METHODS))}") from None


@register("flashtrace", "span-wise aggregation: the whole target in one sweep per hop")
def _flashtrace(recording: Recording, tick: Tick | None = None, threshold: float | None = None, **_):
    return lambda w: span_aggregate(recording, w, threshold=threshold, on_layer=(lambda _l: tick(1)) if tick else None).scores


@register("ifr", "token-wise IFR, one row per target token, batched over rows", progress_unit="row")
def _ifr(recording: Recording, tick: Tick | None = None, **_):
    return lambda w: tokenwise_aggregate(recording, w, batched=True, on_rows=tick)


@register("ifr-rowwise", "token-wise IFR, one target row at a time (the paper's timing protocol)", progress_unit="row")
def _ifr_rowwise(recording: Recording, tick: Tick | None = None, **_):
    return lambda w: tokenwise_aggregate(recording, w, batched=False, on_rows=tick)
