"""A model object as tracing needs it, for the time it is used, then as it was.

Tracing needs the model in eval mode (no dropout) and, while recording, FlashTrace's attention function
(``attn_implementation="ft_record"``: SDPA plus the capture). Every model is treated alike, one FlashTrace
loaded (with transformers' default attention, as ``from_pretrained`` gives it to anyone) and a model object
you pass in (``load_model(hf_model, tokenizer=...)``): each use (`in_use`: the load-time check, a recording,
an attribution, a generation) switches what it needs and puts back what it found, the training flag of every
module and the attention implementation, also when the use fails (a switch costs well under a millisecond). Uses may nest and overlap across threads: the first one in switches, the last one out restores.
"""

from __future__ import annotations

import threading
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

import torch


@dataclass
class _Borrowed:
    """What a model was like before the first use in progress, and how many uses are in progress."""

    training: dict[str, bool]  # module name -> its training flag
    attention: str | None  # config._attn_implementation as found
    users: int = 0
    switched: set[str] = field(default_factory=set)  # attention implementations set since (restored at the end)


_LOCK = threading.RLock()
_IN_USE: "weakref.WeakKeyDictionary[torch.nn.Module, _Borrowed]" = weakref.WeakKeyDictionary()


def _attention(model: torch.nn.Module) -> str | None:
    return getattr(getattr(model, "config", None), "_attn_implementation", None)


def _set_attention(model: torch.nn.Module, name: str) -> None:
    if _attention(model) != name:
        model.set_attn_implementation(name)


@contextmanager
def in_use(model: torch.nn.Module, attention: str | None = None) -> Iterator[torch.nn.Module]:
    """`model` in eval mode (and with the `attention` implementation, when given) inside the block; on leaving
    the last block in progress, every module's training flag and the attention implementation are as found.

    Args:
        model: The model to use (a transformers model when `attention` is given).
        attention: The attention implementation to switch to inside the block (``"ft_record"`` while recording),
            or None to leave it as it is.

    Yields:
        `model` itself, in eval mode.
    """
    with _LOCK:
        state = _IN_USE.get(model)
        if state is None:
            state = _IN_USE[model] = _Borrowed({name: m.training for name, m in model.named_modules()},
                                               _attention(model))
        state.users += 1
        try:
            if model.training or any(m.training for m in model.modules()):
                model.eval()
            if attention is not None:
                _set_attention(model, attention)
                state.switched.add(attention)
        except BaseException:
            _release(model, state)
            raise
    try:
        yield model
    finally:
        with _LOCK:
            _release(model, state)


def _release(model: torch.nn.Module, state: _Borrowed) -> None:
    state.users -= 1
    if state.users:
        return
    del _IN_USE[model]
    if state.attention is not None and state.switched:
        _set_attention(model, state.attention)
    for name, module in model.named_modules():
        module.training = state.training.get(name, module.training)


__all__ = ["in_use"]
