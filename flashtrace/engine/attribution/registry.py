"""Attribution methods by name: the one registry behind `attribute`, the CLI, the app and the evaluation.

A method declares its options (name, type, default, valid range), what one progress tick counts and
its capabilities (recursive hops, batched step vectors, signed scores). ``build(source, tick, **options)``
turns one recorded sequence into an aggregator: target weight vectors ``[B, N]`` → scores ``[B, N]``;
recursive hops and step graphs work with any method that declares them.

A new method is one function registered here (or in its own module) with `register`.

This module imports without torch (the command line's help lists the methods): each built-in method
imports its implementation when it is built.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from ...base.errors import InputError

if TYPE_CHECKING:
    import torch

    from ..models.recording import Recording

Tick = Callable[[int], None]
Aggregator = Callable[["torch.Tensor"], "torch.Tensor"]  # weights [B, N] -> scores [B, N]
PROGRESS_UNITS = ("layer", "row", "run")


@dataclass(frozen=True)
class Option:
    """A method option: ``kind`` (int or float), default, and an allowed range ``low <= v`` (and
    ``v < high`` or ``v <= high`` with `high_inclusive`)."""

    name: str
    kind: type
    default: object
    help: str
    low: float | None = None
    high: float | None = None
    high_inclusive: bool = True

    def parse(self, value: object, method: str) -> object:
        """`value` as this option's kind within its bounds (the default when None); a ValueError naming the
        method and the option otherwise.

        Args:
            value: The given value (a number or its text), or None for the default.
            method: The method's name, for the error message.

        Returns:
            The value converted to this option's kind (``int`` or ``float``), or the default when `value` is None.

        Raises:
            InputError: When `value` is not of this option's kind (a bool, or a non-integral float for an int
                option, included) or lies outside its bounds (or is NaN); a ValueError naming the method and the
                option.
        """
        if value is None:
            return self.default
        try:
            if isinstance(value, bool) or (self.kind is int and isinstance(value, float) and not value.is_integer()):
                raise ValueError
            parsed = self.kind(value)
        except (TypeError, ValueError):
            raise InputError(f"method {method}: option {self.name} must be {self.kind.__name__}, "
                             f"got {value!r}") from None
        too_high = self.high is not None and (parsed > self.high if self.high_inclusive else parsed >= self.high)
        if (self.low is not None and parsed < self.low) or too_high or parsed != parsed:
            bound = f"{self.low} <= {self.name} {'<=' if self.high_inclusive else '<'} {self.high}" \
                if self.high is not None else f"{self.name} >= {self.low}"
            raise InputError(f"method {method}: option {self.name} must satisfy {bound}, got {value!r}")
        return parsed


@dataclass
class Source:
    """What a method may read: the recording, and for model-running baselines the model, the explained
    positions (the user's prompt tokens), prompt segments (token positions) and the id used to delete."""

    recording: Recording
    model: torch.nn.Module | None = None
    explained: list[int] = field(default_factory=list)
    segments: list[list[int]] = field(default_factory=list)
    replace_id: int | None = None


@dataclass(frozen=True)
class Method:
    """A registered attribution method: its name, description, builder of aggregators, progress unit,
    options, and whether it supports hops, the step-level hop graph and signed scores."""
    name: str
    description: str
    build: Callable[..., Aggregator]  # (source, tick, **options) -> aggregator
    progress_unit: str  # what one tick counts: "layer" (per weight batch), "row" (target row) or "run" (weight vector)
    options: tuple[Option, ...] = ()
    hops: bool = True  # an aggregator over any weight vector: recursive hops work
    steps: bool = True  # many weight vectors at once: the step-level hop graph works
    signed: bool = False  # scores may be negative (a trace keeps the positive part)

    def resolve_options(self, given: dict | None = None) -> dict:
        """All options with defaults filled in; a `ValueError` for an unknown option or a bad value.

        Args:
            given: The options given, by name (None or empty: all defaults).

        Returns:
            Every option of this method by name, given values parsed and checked, defaults for the others.

        Raises:
            InputError: When `given` names an option this method does not have, or (from `Option.parse`) a value
                is of the wrong kind or out of bounds.
        """
        given = dict(given or {})
        known = {o.name: o for o in self.options}
        unknown = sorted(set(given) - set(known))
        if unknown:
            have = ", ".join(known) or "none"
            raise InputError(f"method {self.name} has no option {', '.join(unknown)} (its options: {have})")
        return {name: opt.parse(given.get(name), self.name) for name, opt in known.items()}

    def units(self, weights: torch.Tensor, n_layers: int) -> int:
        """Progress ticks one aggregator call on ``weights [B, N]`` makes.

        Args:
            weights: The target weight vectors ``[B, N]`` of one aggregator call.
            n_layers: The model's number of layers (the count for the ``"layer"`` unit).

        Returns:
            The number of ticks: `n_layers` for ``"layer"``, the number of target rows with weight for ``"row"``,
            and ``B`` for ``"run"``.
        """
        if self.progress_unit == "layer":
            return n_layers
        if self.progress_unit == "row":
            return int((weights.sum(0) > 0).sum())
        return int(weights.shape[0])

    def aggregator(self, source: Source, tick: Tick | None = None, **options: object) -> Aggregator:
        """Build this method's aggregator over `source`, with `options` checked and defaults filled in.

        Args:
            source: What the method may read (the recording, and for model-running baselines the model).
            tick: Called with the number of progress ticks made (see `units`), or None.
            **options: The method's options by name; the ones left out take their defaults.

        Returns:
            The aggregator: target weight vectors ``[B, N]`` to scores ``[B, N]``.

        Raises:
            InputError: From `resolve_options`, when an option is unknown or its value is bad.
        """
        return self.build(source, tick, **self.resolve_options(options))


METHODS: dict[str, Method] = {}


def register(name: str, description: str, progress_unit: str = "layer", options: tuple[Option, ...] = (),
             hops: bool = True, steps: bool = True, signed: bool = False
             ) -> Callable[[Callable[..., Aggregator]], Callable[..., Aggregator]]:
    """Decorator: register an aggregator builder as the attribution method `name` (see `Method`).

    Args:
        name: The method's name.
        description: What the method does, in one line.
        progress_unit: What one progress tick counts: ``"layer"`` (per weight batch), ``"row"`` (target row) or
            ``"run"`` (weight vector).
        options: The method's options.
        hops: Whether the aggregator takes any weight vector, so recursive hops work.
        steps: Whether it takes many weight vectors at once, so the step-level hop graph works.
        signed: Whether its scores may be negative (a trace keeps the positive part).

    Returns:
        The decorator, which registers the builder ``(source, tick, **options) -> aggregator`` in `METHODS`
        and returns it unchanged.

    Raises:
        InputError: When `progress_unit` is not one of `PROGRESS_UNITS`.
    """
    if progress_unit not in PROGRESS_UNITS:
        raise InputError(f"progress_unit must be one of {PROGRESS_UNITS}")

    def wrap(build):
        METHODS[name] = Method(name, description, build, progress_unit, tuple(options), hops, steps, signed)
        return build

    return wrap


# the names captum and inseq give the same methods (case, "-" and "_" aside): an alias resolves to ours
ALIASES = {"integrated_gradients": "ig", "integratedgradients": "ig", "layer_integrated_gradients": "ig",
           "layerintegratedgradients": "ig", "feature_ablation": "perturbation", "featureablation": "perturbation",
           "occlusion": "perturbation", "attention_rollout": "rollout", "ifr_rowwise": "ifr-rowwise"}


def method_name(name: str) -> str:
    """Our name for `name`: a registered one as it is, a captum or inseq name (`ALIASES`) resolved.

    Args:
        name: A method's name, ours or captum's or inseq's (case, "-" and "_" aside).

    Returns:
        The registered name; `name` itself when it names no method.
    """
    if name in METHODS:
        return name
    key = name.strip().lower().replace("-", "_")
    return ALIASES.get(key, key if key in METHODS else name)


def get_method(name: str) -> Method:
    """The registered method `name` (or a captum/inseq alias of one: `ALIASES`).

    Args:
        name: A method's name, ours or captum's or inseq's.

    Returns:
        The registered method.

    Raises:
        InputError: When no method has that name (a ValueError listing the available ones).
    """
    try:
        return METHODS[method_name(name)]
    except KeyError:
        raise InputError(f"unknown method '{name}'; available: {', '.join(sorted(METHODS))} (captum's and "
                         "inseq's names for them work too, such as integrated_gradients)") from None


def _per_layer(tick: Tick | None):
    return (lambda _l: tick(1)) if tick else None


def _rows(fn: Callable[[torch.Tensor], torch.Tensor], tick: Tick | None) -> Aggregator:
    """An aggregator from a one-vector function ``[N] -> [N]``, one tick per vector."""
    import torch

    def run(weights: torch.Tensor) -> torch.Tensor:
        out = []
        for w in weights:
            out.append(fn(w))
            if tick:
                tick(1)
        return torch.stack(out)

    return run


def _target_range(w: torch.Tensor) -> tuple[int, int]:
    nz = (w > 0).nonzero().flatten()
    return int(nz[0]), int(nz[-1]) + 1


def _needs_model(source: Source, name: str) -> None:
    if source.model is None or source.replace_id is None:
        raise InputError(f"method {name} runs the model: its source needs the model and a replacement token id")


THRESHOLD = Option("threshold", float, None, "prune (head, source) proximities whose share of the layer is below τ",
                   low=0.0, high=1.0, high_inclusive=False)


@register("flashtrace", "span-wise aggregation: the whole target in one sweep per hop", options=(THRESHOLD,))
def _flashtrace(source: Source, tick: Tick | None = None, threshold: float | None = None):
    from .span import span_aggregate

    return lambda w: span_aggregate(source.recording, w, threshold=threshold, on_layer=_per_layer(tick)).scores


@register("ifr", "token-wise IFR, one row per target token, batched over rows", progress_unit="row")
def _ifr(source: Source, tick: Tick | None = None):
    from .tokenwise import tokenwise_aggregate

    return lambda w: tokenwise_aggregate(source.recording, w, batched=True, on_rows=tick)


@register("ifr-rowwise", "token-wise IFR, one target row at a time (the paper's timing protocol)", progress_unit="row")
def _ifr_rowwise(source: Source, tick: Tick | None = None):
    from .tokenwise import tokenwise_aggregate

    return lambda w: tokenwise_aggregate(source.recording, w, batched=False, on_rows=tick)


@register("attention", "raw attention: mean over layers and heads of the target rows", progress_unit="run")
def _attention(source: Source, tick: Tick | None = None):
    from .baselines import raw_attention

    return _rows(lambda w: raw_attention(source.recording, w), tick)


@register("rollout", "attention rollout (Abnar & Zuidema 2020) of the target rows", progress_unit="run",
          options=(Option("residual", float, 0.5, "weight of the identity (residual) in each layer's rollout",
                          low=0.0, high=1.0),))
def _rollout(source: Source, tick: Tick | None = None, residual: float = 0.5):
    from .baselines import attention_rollout

    return _rows(lambda w: attention_rollout(source.recording, w, residual=residual), tick)


@register("ig", "integrated gradients (captum) of the target's log-probability on the prompt embeddings",
          progress_unit="run", hops=False, steps=False, signed=True,
          options=(Option("steps", int, 16, "integration steps (batched)", low=1, high=512),))
def _ig(source: Source, tick: Tick | None = None, steps: int = 16):
    from .baselines import integrated_gradients

    _needs_model(source, "ig")
    return _rows(lambda w: integrated_gradients(source.model, source.recording.input_ids, _target_range(w),
                                                source.explained, source.replace_id, steps=steps), tick)


@register("perturbation", "segment ablation: drop of the target's log-probability when a prompt sentence is "
          "replaced", progress_unit="run", hops=False, steps=False, signed=True,
          options=(Option("batch_size", int, 16, "sequences per forward pass", low=1, high=1024),))
def _perturbation(source: Source, tick: Tick | None = None, batch_size: int = 16):
    from .baselines import segment_ablation

    _needs_model(source, "perturbation")
    return _rows(lambda w: segment_ablation(source.model, source.recording.input_ids, source.segments,
                                            _target_range(w), source.replace_id, batch_size), tick)


__all__ = ["METHODS", "ALIASES", "method_name", "Method", "Option", "Source", "get_method", "register", "PROGRESS_UNITS"]
