"""Evaluation methods by name: each maps a prepared example to one attribution score per position.

Every one is a method of the attribution registry (`flashtrace.engine.attribution.METHODS`): FlashTrace with
K hops and token-wise IFR through `attribute`; the baselines through the registry's aggregator on the
raw target weights (signed scores kept: deletion orders by them). The recording-based methods share
the example's single recorded forward pass; IG and perturbation run the model themselves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from ..analysis.limits import EVAL_STOP_TOKENS
from ..engine.attribution import get_method
from ..engine.models import LoadedModel
from ..engine.models.scoring import AUTO
from ..engine.models.scoring import score_dtype as score_dtype_for
from ..run.tracing import Prepared, attribute, method_source, prepare, resolve_target
from ..run.tracing import replacement_id as _replacement_id
from .names import DEFAULT_METHODS
from .tasks import Example
from ..base.errors import InputError


@dataclass
class EvalContext:
    """One example ready for evaluation: its recording, target and evaluated (user prompt) positions."""

    loaded: LoadedModel
    example: Example
    prepared: Prepared
    target: tuple[int, int]  # token range [lo, hi) of the explained span
    positions: torch.Tensor  # [P] indices of the user's prompt tokens (what is attributed and deleted)
    gold: torch.Tensor  # [P] bool, prompt tokens overlapping a gold character range
    replace_id: int  # pad (or EOS) id used for deletion, ablation and the IG baseline
    ig_steps: int = 16
    batch_size: int = 16
    extra: dict = field(default_factory=dict)
    score_dtype: torch.dtype | None = None  # the precision deletion curves are scored in (None: the model's)

    @property
    def ids(self) -> torch.Tensor:
        """The input ids of the recorded forward pass."""
        return self.prepared.recording.input_ids

    def target_weights(self) -> torch.Tensor:
        """Weights over all positions: 1 on the target's tokens, 0 elsewhere.

        Returns:
            The weights, ``[N]`` (one per position of the sequence).
        """
        w = torch.zeros(len(self.prepared.sequence))
        w[self.target[0]:self.target[1]] = 1.0
        return w

    def segments(self) -> list[list[int]]:
        """Prompt sentences (and lines, `segments.SentenceSplitter`) as lists of token positions.

        Returns:
            One list of token positions per prompt segment, in prompt order.
        """
        return method_source(self.prepared).segments


def replacement_id(tokenizer: Any) -> int:
    """The token id deletions put in place of a prompt token (pad, else EOS); ValueError when there is none.

    Args:
        tokenizer: The model's tokenizer (a transformers tokenizer, `LoadedModel.tokenizer`).

    Returns:
        The pad token's id, else the EOS token's.

    Raises:
        InputError: When the tokenizer has neither a pad nor an EOS token (an `InputError` is a ValueError).
    """
    tid = _replacement_id(tokenizer)
    if tid is None:
        raise InputError("the tokenizer has neither a pad nor an EOS token to delete with")
    return tid


def build_context(loaded: LoadedModel, example: Example, target: str = "answer", chat_template: bool = True,
                  ig_steps: int = 16, batch_size: int = 16, score_dtype: str | torch.dtype | None = AUTO) -> EvalContext:
    """Record the example's forward pass and locate its target, prompt positions and gold tokens.

    Args:
        loaded: The model that reads the example.
        example: The example (prompt, response, gold character ranges).
        target: The explained span (`run.tracing.resolve_target`: ``answer``, ``value``, ``START:END``, ...).
        chat_template: Whether the prompt goes inside the tokenizer's chat template (when it has one).
        ig_steps: Integrated-gradients steps, for the ``ig`` method.
        batch_size: Sequences per forward pass of the methods and deletion curves that batch them.
        score_dtype: The precision of the deletion curves' passes (`engine.models.scoring.score_dtype`: by
            default bfloat16 for a float32 model where the processor has bfloat16 arithmetic, else the model's).

    Returns:
        The example ready for evaluation.

    Raises:
        InputError: When the example has no prompt tokens, or the tokenizer has no token to delete with.
    """
    prepared = prepare(loaded, example.prompt, example.response, chat_template=chat_template)
    seq = prepared.sequence
    lo, hi = resolve_target(seq, target)
    positions = seq.positions("prompt")
    if not positions:
        raise InputError("the example has no prompt tokens")
    gold = [any(seq.tokens[p].start < b and seq.tokens[p].end > a for a, b in example.gold) for p in positions]
    return EvalContext(loaded, example, prepared, (lo, hi), torch.tensor(positions), torch.tensor(gold),
                       replacement_id(loaded.tokenizer), ig_steps, batch_size,
                       score_dtype=score_dtype_for(loaded, score_dtype))


def _flashtrace(hops: int, stop_tokens: str = EVAL_STOP_TOKENS, hop0: str = "answer") -> Callable[[EvalContext], torch.Tensor]:
    def run(ctx: EvalContext) -> torch.Tensor:
        trace = attribute(ctx.prepared, target=ctx.target, hops=hops, stop_tokens=stop_tokens, hop0=hop0)
        return torch.tensor(trace.scores.final)

    return run


def _ifr(ctx: EvalContext) -> torch.Tensor:
    """Token-wise IFR with `EVAL_STOP_TOKENS`, as FlashTrace's unsuffixed rows (whatever the default)."""
    return torch.tensor(attribute(ctx.prepared, target=ctx.target, hops=0, method="ifr",
                                  stop_tokens=EVAL_STOP_TOKENS).scores.final)


def _baseline(name: str, options: Callable[[EvalContext], dict] = lambda ctx: {}
              ) -> Callable[[EvalContext], torch.Tensor]:
    """A registered baseline on the example's target weights (every target token, signed scores kept)."""
    def run(ctx: EvalContext) -> torch.Tensor:
        aggregate = get_method(name).aggregator(method_source(ctx.prepared), **options(ctx))
        return aggregate(ctx.target_weights()[None])[0]

    return run


_attention = _baseline("attention")
_rollout = _baseline("rollout")
_ig = _baseline("ig", lambda ctx: {"steps": ctx.ig_steps})
_perturbation = _baseline("perturbation", lambda ctx: {"batch_size": ctx.batch_size})


_RUNS = {"flashtrace-k0": _flashtrace(0), "flashtrace-k1": _flashtrace(1), "flashtrace-k2": _flashtrace(2), "ifr": _ifr,
         "attention": _attention, "rollout": _rollout, "ig": _ig, "perturbation": _perturbation}
EVAL_METHODS: dict[str, Callable[[EvalContext], torch.Tensor]] = {name: _RUNS[name] for name in DEFAULT_METHODS}


_VARIANT = re.compile(r"flashtrace-k(\d)(-gen)?(-nostop|-punct)?")


def get_eval_method(name: str) -> Callable[[EvalContext], torch.Tensor]:
    """The method called `name`. ``flashtrace-kK`` works for any K in 0..8 (stop tokens: the default
    ``paper`` preset); ``-gen`` puts hop 0 over the whole generation (reasoning + answer, the paper-era
    code); ``-nostop`` keeps every token (preset ``none``), ``-punct`` zeroes every punctuation-only
    token (preset ``punctuation``, this project's rule before the presets), e.g. ``flashtrace-k1-gen-punct``.

    Args:
        name: A name of `EVAL_METHODS` or a ``flashtrace-kK`` variant.

    Returns:
        The method: it maps an `EvalContext` to one score per position.

    Raises:
        InputError: When no method has that name.
    """
    if name in EVAL_METHODS:
        return EVAL_METHODS[name]
    m = _VARIANT.fullmatch(name)
    if m and int(m.group(1)) <= 8:
        stops = {"-nostop": "none", "-punct": "punctuation"}.get(m.group(3) or "", EVAL_STOP_TOKENS)
        return _flashtrace(int(m.group(1)), stops, "generation" if m.group(2) else "answer")
    raise InputError(f"unknown evaluation method '{name}'; available: flashtrace, {', '.join(EVAL_METHODS)}, "
                     "flashtrace-kK with optional -gen and -nostop or -punct (e.g. flashtrace-k1-gen)")


def parse_methods(spec: str | list[str], hops: list[int] | None = None) -> list[str]:
    """Method names from ``"flashtrace,ifr,..."``: a bare ``flashtrace`` expands to one entry per hop count.

    Args:
        spec: Comma-separated names, or a list of names (blank ones skipped).
        hops: The hop counts a bare ``flashtrace`` expands to (None: 0, 1 and 2).

    Returns:
        The method names, each once, in order.

    Raises:
        InputError: When a name is unknown (`get_eval_method`) or no name is given.
    """
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    out: list[str] = []
    for name in (n.strip() for n in names if n.strip()):
        expanded = [f"flashtrace-k{k}" for k in (hops if hops is not None else (0, 1, 2))] if name == "flashtrace" else [name]
        for m in expanded:
            get_eval_method(m)
            if m not in out:
                out.append(m)
    if not out:
        raise InputError("no evaluation method given")
    return out


__all__ = ["EvalContext", "EVAL_METHODS", "DEFAULT_METHODS", "build_context", "get_eval_method", "parse_methods", "replacement_id"]
