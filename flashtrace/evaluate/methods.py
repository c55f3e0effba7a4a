"""Evaluation methods by name: each maps a prepared example to one attribution score per position.

The recording-based methods (FlashTrace with K hops, token-wise IFR, raw attention, rollout) share
the example's single recorded forward pass; IG and perturbation run the model themselves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import torch

from ..attribution.baselines import attention_rollout, integrated_gradients, raw_attention, segment_ablation
from ..models import LoadedModel
from ..tracing import Prepared, attribute, prepare, resolve_target
from .tasks import Example

_SENTENCE = re.compile(r"[^\n.!?]+[.!?]*")


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

    @property
    def ids(self) -> torch.Tensor:
        return self.prepared.recording.input_ids

    def target_weights(self) -> torch.Tensor:
        w = torch.zeros(len(self.prepared.sequence))
        w[self.target[0]:self.target[1]] = 1.0
        return w

    def segments(self) -> list[list[int]]:
        """Prompt sentences (and lines) as lists of token positions; every prompt token is in one."""
        starts = [m.start() for m in _SENTENCE.finditer(self.example.prompt) if m.group().strip()]
        tokens = self.prepared.sequence.tokens
        groups: dict[int, list[int]] = {}
        for pos in self.positions.tolist():
            seg = sum(1 for s in starts if s <= tokens[pos].start) - 1
            groups.setdefault(max(seg, 0), []).append(pos)
        return list(groups.values())


def replacement_id(tokenizer) -> int:
    for tid in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if tid is not None:
            return int(tid)
    raise ValueError("the tokenizer has neither a pad nor an EOS token to delete with")


def build_context(loaded: LoadedModel, example: Example, target: str = "answer", chat_template: bool = True,
                  ig_steps: int = 16, batch_size: int = 16) -> EvalContext:
    """Record the example's forward pass and locate its target, prompt positions and gold tokens."""
    prepared = prepare(loaded, example.prompt, example.response, chat_template=chat_template)
    seq = prepared.sequence
    lo, hi = resolve_target(seq, target)
    positions = seq.positions("prompt")
    if not positions:
        raise ValueError("the example has no prompt tokens")
    gold = [any(seq.tokens[p].start < b and seq.tokens[p].end > a for a, b in example.gold) for p in positions]
    return EvalContext(loaded, example, prepared, (lo, hi), torch.tensor(positions), torch.tensor(gold),
                       replacement_id(loaded.tokenizer), ig_steps, batch_size)


def _flashtrace(hops: int, stop_tokens: str = "default") -> Callable[[EvalContext], torch.Tensor]:
    def run(ctx: EvalContext) -> torch.Tensor:
        trace = attribute(ctx.prepared, target=ctx.target, hops=hops, stop_tokens=stop_tokens)
        return torch.tensor(trace.scores.final)

    return run


def _ifr(ctx: EvalContext) -> torch.Tensor:
    return torch.tensor(attribute(ctx.prepared, target=ctx.target, hops=0, method="ifr").scores.final)


def _attention(ctx: EvalContext) -> torch.Tensor:
    return raw_attention(ctx.prepared.recording, ctx.target_weights())


def _rollout(ctx: EvalContext) -> torch.Tensor:
    return attention_rollout(ctx.prepared.recording, ctx.target_weights())


def _ig(ctx: EvalContext) -> torch.Tensor:
    return integrated_gradients(ctx.loaded.model, ctx.ids, ctx.target, ctx.positions.tolist(), ctx.replace_id,
                                steps=ctx.ig_steps)


def _perturbation(ctx: EvalContext) -> torch.Tensor:
    return segment_ablation(ctx.loaded.model, ctx.ids, ctx.segments(), ctx.target, ctx.replace_id, ctx.batch_size)


EVAL_METHODS: dict[str, Callable[[EvalContext], torch.Tensor]] = {
    "flashtrace-k0": _flashtrace(0),
    "flashtrace-k1": _flashtrace(1),
    "flashtrace-k2": _flashtrace(2),
    "ifr": _ifr,
    "attention": _attention,
    "rollout": _rollout,
    "ig": _ig,
    "perturbation": _perturbation,
}
DEFAULT_METHODS = ("flashtrace-k0", "flashtrace-k1", "flashtrace-k2", "ifr", "attention", "rollout", "ig",
                   "perturbation")


def get_eval_method(name: str) -> Callable[[EvalContext], torch.Tensor]:
    """The method called `name`; ``flashtrace-kK`` works for any K in 0..8, and ``flashtrace-kK-nostop``
    is the same without stop tokens (punctuation and whitespace keep their weight and score)."""
    if name in EVAL_METHODS:
        return EVAL_METHODS[name]
    m = re.fullmatch(r"flashtrace-k(\d)(-nostop)?", name)
    if m and int(m.group(1)) <= 8:
        return _flashtrace(int(m.group(1)), "none" if m.group(2) else "default")
    raise ValueError(f"unknown evaluation method '{name}'; available: flashtrace, {', '.join(EVAL_METHODS)}, "
                     "flashtrace-kK, flashtrace-kK-nostop")


def parse_methods(spec: str | list[str], hops: list[int] | None = None) -> list[str]:
    """Method names from ``"flashtrace,ifr,..."``: a bare ``flashtrace`` expands to one entry per hop count."""
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    out: list[str] = []
    for name in (n.strip() for n in names if n.strip()):
        expanded = [f"flashtrace-k{k}" for k in (hops if hops is not None else (0, 1, 2))] if name == "flashtrace" else [name]
        for m in expanded:
            get_eval_method(m)
            if m not in out:
                out.append(m)
    if not out:
        raise ValueError("no evaluation method given")
    return out


__all__ = ["EvalContext", "EVAL_METHODS", "DEFAULT_METHODS", "build_context", "get_eval_method", "parse_methods", "replacement_id"]
