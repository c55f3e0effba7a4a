"""A stand-in GPU for the CPU-only suite. Inside ``fake_cuda()``, a tensor made or moved "to cuda" is a CPU tensor
that reports ``device == cuda:0`` and keeps the rules a real GPU enforces, so code written for GPUs runs here and
fails where a real GPU run would:

- an op that mixes a "cuda" tensor with a CPU tensor of one or more dimensions raises (0-dim CPU scalars may mix,
  as on a GPU; so may copies and indexing with CPU indices);
- ``.numpy()`` of a "cuda" tensor raises;
- ``.to("cpu")`` / ``.cpu()`` give a CPU tensor, ``.to("cuda")`` / ``.cuda()`` / ``device="cuda"`` a "cuda" one.

The numbers are computed on the CPU, so they equal a CPU run's. It tests device moves that only a GPU would
otherwise exercise (its users: `grep -rl fake_cuda tests`; its own tests: tests/test_fake_cuda.py).
"""

from __future__ import annotations

from contextlib import contextmanager

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten, tree_map

CUDA = torch.device("cuda", 0)
_MIXING_ALLOWED = {torch.Tensor.copy_, torch.Tensor.__getitem__, torch.Tensor.__setitem__}


def _is_cuda(device) -> bool:
    if isinstance(device, torch.device):
        return device.type == "cuda"
    return isinstance(device, int) or isinstance(device, str) and device.startswith("cuda")


def _plain(value):
    return value.as_subclass(torch.Tensor) if isinstance(value, OnGpu) else value


def _on_gpu(value):
    return value.as_subclass(OnGpu) if isinstance(value, torch.Tensor) and not isinstance(value, OnGpu) else value


class OnGpu(torch.Tensor):
    """A CPU tensor standing for one on ``cuda:0``."""

    @property
    def device(self) -> torch.device:  # what Python code reads; torch computes on the CPU below
        return CUDA

    @property
    def is_cuda(self) -> bool:
        return True

    def numpy(self, *args, **kwargs):
        raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to "
                        "host memory first.")

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in (torch.Tensor.to, torch.Tensor.cpu, torch.Tensor.cuda):
            return _move(func, args, kwargs)
        tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        if func not in _MIXING_ALLOWED and any(not isinstance(t, OnGpu) and t.dim() > 0 for t in tensors):
            raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices, "
                               f"cuda:0 and cpu! ({getattr(func, '__name__', func)})")
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*tree_map(_plain, args), **tree_map(_plain, kwargs))
        return tree_map(_on_gpu, out)


def _move(func, args, kwargs):
    """``.to(...)``, ``.cpu()``, ``.cuda()`` of a plain or "cuda" tensor."""
    tensor, rest, kwargs = args[0], list(args[1:]), dict(kwargs)
    target = kwargs.pop("device", None)
    if func is torch.Tensor.cuda:
        target = CUDA
    elif func is torch.Tensor.cpu:
        target = "cpu"
    elif rest and (isinstance(rest[0], (str, torch.device, int)) or rest[0] is None):
        target = rest.pop(0)
    elif rest and isinstance(rest[0], torch.Tensor):  # .to(other): other's device and dtype
        other = rest.pop(0)
        target, rest = other.device, [other.dtype, *rest]
    gpu = isinstance(tensor, OnGpu) if target is None else _is_cuda(target)
    with torch._C.DisableTorchFunctionSubclass():
        out = _plain(tensor).to(*rest, **kwargs) if rest or kwargs else _plain(tensor)
    return out.as_subclass(OnGpu) if gpu else out.as_subclass(torch.Tensor)


class _CudaFactories(TorchFunctionMode):
    """Plain tensors' ``.to("cuda")`` / ``.cuda()`` and factories given ``device="cuda"`` make "cuda" tensors."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in (torch.Tensor.to, torch.Tensor.cpu, torch.Tensor.cuda) and not isinstance(args[0], OnGpu):
            return _move(func, args, kwargs)
        if "device" in kwargs and _is_cuda(kwargs["device"]):
            kwargs["device"] = "cpu"
            return tree_map(_on_gpu, func(*args, **kwargs))
        return func(*args, **kwargs)


@contextmanager
def fake_cuda():
    """Inside: ``"cuda"`` is a CPU device that says it is ``cuda:0`` and refuses to mix with the CPU."""
    with _CudaFactories():
        yield
