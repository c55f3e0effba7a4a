"""Generation steps without torch's one-row overhead: while a generation runs, each float32 CPU ``nn.Linear`` of
the model sends a single row (one new token) through `kernels.gemv` instead of torch's product; every other
product (the prompt's forward pass, batches, gradients, other dtypes and devices) goes through ``F.linear`` on the
generation's threads as before, and the rest of a step (norms, attention over the cache, sampling) runs on one
torch thread.

A step is bound by reading the weights from memory. On the 2-core reference machine the kernel on one thread
beat torch's product on one or two (1.5B: 0.385 s per token against 0.45-0.46; 0.5B: 0.150 against 0.168-0.174),
and the kernel on two threads did not pay (1.5B: 0.40 s, a tie; 0.5B: 0.198 s, slower: a parallel launch per
product costs more than the second core's bandwidth brings on matrices this small), so `ROW_THREADS` is 1
(benchmarks/results/generation_speed_*.json). torch's idle OpenMP workers spin for a while after each operation;
on two cores that spinning took a core from the kernel, hence one torch thread around it.

The switch is an instance attribute (``module.forward``) set on entering and deleted on leaving the last use in
progress, so a model object passed in is left as found; modules whose ``forward`` something else already replaced
(accelerate's offloading hooks, for instance) are not touched.
"""

from __future__ import annotations

import threading
import weakref
from contextlib import contextmanager
from typing import Iterator

import torch

from ..kernels.gemv import gemv
from ..throughput import torch_threads

_LOCK = threading.Lock()
ROW_THREADS = 1  # threads of the single-row kernel: one paid best on the reference machine (the module docstring)


class _State:
    def __init__(self, modules: list[torch.nn.Module], threads: int):
        self.modules, self.threads, self.users = modules, threads, 0


_ACTIVE: "weakref.WeakKeyDictionary[torch.nn.Module, _State]" = weakref.WeakKeyDictionary()


def _eligible(module: torch.nn.Module) -> bool:
    weight = getattr(module, "weight", None)
    return (type(module) is torch.nn.Linear and "forward" not in vars(module) and weight is not None
            and weight.dtype == torch.float32 and weight.device.type == "cpu" and weight.is_contiguous())


def _single_row_forward(module: torch.nn.Linear, state: _State):
    weight, bias = module.weight, module.bias
    matrix = weight.detach().numpy()  # [out, in], shares the weights' memory

    def forward(x: torch.Tensor) -> torch.Tensor:
        single = (x.numel() == module.in_features and x.dtype == weight.dtype == torch.float32
                  and x.device.type == "cpu")
        if not single or (torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad)):
            with torch_threads(state.threads):
                return torch.nn.functional.linear(x, weight, bias)
        out = torch.empty(module.out_features)
        gemv(matrix, x.detach().reshape(-1).contiguous().numpy(), out.numpy(), ROW_THREADS)
        if bias is not None:
            out.add_(bias.detach())
        return out.reshape(*x.shape[:-1], module.out_features)

    return forward


@contextmanager
def single_row_kernel(model: torch.nn.Module, threads: int | None = None) -> Iterator[None]:
    """Inside the block, single-row products through `model`'s float32 CPU linear layers run on `kernels.gemv`
    (`ROW_THREADS` threads), other products on `threads` torch threads (default: torch's count on entering), and
    every other operation on one torch thread.

    Args:
        model: The model whose float32 CPU ``nn.Linear`` layers take the single-row kernel.
        threads: Torch threads for the other products; None (or 0) for torch's count on entering.

    Yields:
        None, once: the block runs with the switch in place; on leaving the last use in progress, the layers are
            as found.
    """
    threads = threads or torch.get_num_threads()
    with _LOCK:
        state = _ACTIVE.get(model)
        if state is None:
            state = _ACTIVE[model] = _State([m for m in model.modules() if _eligible(m)], threads)
            for module in state.modules:
                module.forward = _single_row_forward(module, state)
        state.users += 1
        state.threads = threads
    try:
        with torch_threads(1):
            yield
    finally:
        with _LOCK:
            state.users -= 1
            if not state.users:
                for module in state.modules:
                    del module.forward
                del _ACTIVE[model]


__all__ = ["single_row_kernel"]
