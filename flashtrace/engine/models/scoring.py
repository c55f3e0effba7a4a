"""The precision of scoring passes: the forward passes that only score a sequence (deletion curves).

A deletion curve of k = 20 steps is about twenty forward passes of the whole sequence per method, and on a CPU
they are most of a methods comparison's time. Where the processor multiplies bfloat16 fast (AMX on x86, a GPU that
supports it; AVX-512 BF16 alone is slower than float32 there, see `_cpu_bf16`), a copy of a float32 model whose
matrix products run in bfloat16 scores 1.6-2.3 times faster (measured on two 2-core machines of this project,
`docs/benchmarks.md`; the estimates measure the products' speedup on the machine they run on, `speedup`) and
moves each point of a curve by a small fraction of the curve's range
(`docs/evaluation.md` measures how much the metrics move). Only the matrix products run in bfloat16: the copy's
linear layers take and give back float32, so the residual stream, the norms, the softmax and the output head keep
the model's precision (about 2.6 times closer to float32 than a whole bfloat16 copy, at nearly its speed), and it
shares every other tensor with the model. It is made once per model and kept while the model lives; the model
itself is never changed.

`choose` picks, for ``"auto"``, bfloat16 for a float32 model when the device multiplies it fast and the
copy takes at most a quarter of the memory available, else the model's own dtype; ``"model"`` always keeps
the model's dtype, and a dtype name asks for that one. The rule works on names, without torch (the app's
estimates use it before any model is loaded); `score_dtype` applies it to a loaded model.
"""

from __future__ import annotations

import copy
import threading
import weakref
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from ...base.errors import InputError

if TYPE_CHECKING:  # torch is imported where it is used: the command line's help lists SCORE_DTYPES without it
    import torch

    from .loading import LoadedModel

AUTO, MODEL = "auto", "model"
SCORE_DTYPES = (AUTO, MODEL, "float32", "bfloat16", "float16")  # the choices the CLI offers
CUDA_SPEEDUP = {"bfloat16": 2.0, "float16": 2.0}  # a GPU's half-precision matrix products ÷ float32 (uncalibrated)
COPY_SHARE = 0.25  # "auto" makes a copy only when it takes at most this share of the memory available
_ALIASES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}

_COPIES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # model -> {dtype: copy}
_LOCK = threading.Lock()


def fast_bf16_flags(cpuinfo: str) -> bool:
    """Whether a processor with these ``/proc/cpuinfo`` flags multiplies bfloat16 fast (AMX; see `_cpu_bf16`).

    Args:
        cpuinfo: The text of ``/proc/cpuinfo`` (or its flags).

    Returns:
        True when the flags include ``amx_bf16``.
    """
    return "amx_bf16" in cpuinfo.split()


@lru_cache(maxsize=1)
def _cpu_bf16() -> bool:
    """Whether this processor multiplies bfloat16 matrices faster than float32: it has AMX. AVX-512 BF16 alone
    is not enough: on such a 2-core machine (no AMX) torch 2.13's bfloat16 matrix products ran 1.5-1.8 times
    *slower* than float32, and a bfloat16 scoring copy 1.5 times slower."""
    flags = Path("/proc/cpuinfo")
    if flags.is_file():  # Linux: the processor's feature flags, read without torch
        return fast_bf16_flags(flags.read_text(errors="replace"))
    import torch  # elsewhere: torch's own check

    return bool(torch.cpu._is_amx_tile_supported())


def native_bf16(device_type: str) -> bool:
    """Whether a device of `device_type` (``cpu``, ``cuda``) multiplies bfloat16 in hardware (a bfloat16 pass is
    faster there, not emulated).

    Args:
        device_type: The device type: ``cpu`` or ``cuda`` (any other has no fast bfloat16).

    Returns:
        True on a CUDA device that supports bfloat16, or a processor with AMX.
    """
    if device_type == "cuda":
        import torch

        return torch.cuda.is_bf16_supported()
    return device_type == "cpu" and _cpu_bf16()


def _room(device_type: str) -> int:
    if device_type == "cuda":
        import torch

        return int(torch.cuda.mem_get_info()[0])
    import psutil

    return int(psutil.virtual_memory().available)


def choose(model_dtype: str, device_type: str, n_params: int, choice: str | None = AUTO) -> str:
    """The dtype name scoring passes run in, for `choice` (see the module), for a model of `n_params`
    parameters in `model_dtype` (a name such as ``float32``) on a `device_type` device.

    Args:
        model_dtype: The model's dtype name (``float32``, ``fp32``, ``torch.float32``, ...).
        device_type: The device type the model is on (``cpu``, ``cuda``).
        n_params: The model's number of parameters (``"auto"`` makes a copy only when it takes at most
            `COPY_SHARE` of the memory available).
        choice: ``"auto"``, ``"model"`` (also for None or empty), or a dtype name of `SCORE_DTYPES` (or its short
            name: ``bf16``, ...).

    Returns:
        The dtype name, e.g. ``bfloat16``.

    Raises:
        InputError: When `choice` is none of `SCORE_DTYPES`.
    """
    choice = _ALIASES.get(choice, choice) if choice else MODEL
    model_dtype = _ALIASES.get(model_dtype, model_dtype).removeprefix("torch.")
    if choice == MODEL:
        return model_dtype
    if choice != AUTO:
        if choice not in SCORE_DTYPES:
            raise InputError(f"unknown scoring precision {choice!r}; use one of {', '.join(SCORE_DTYPES)}")
        return choice
    if model_dtype != "float32" or not native_bf16(device_type):
        return model_dtype
    return "bfloat16" if 2 * n_params <= COPY_SHARE * _room(device_type) else model_dtype


def speedup(model_dtype: str, device_type: str, dtype: str) -> float:
    """How many times faster the matrix products of scoring in `dtype` run than in the model's own `model_dtype`
    (names) on a `device_type` device (`estimate.scoring_seconds` turns it into the pass's time).

    Args:
        model_dtype: The model's dtype name (``float32``, ...).
        device_type: The device type (``cpu``, ``cuda``).
        dtype: The dtype name scoring runs in (`choose`).

    Returns:
        The speed-up: 1 when the dtypes are the same or the model is not float32; on a CPU measured here
            (`throughput.matmul_speedup`: below 1 where the precision is emulated); on a GPU the uncalibrated
            `CUDA_SPEEDUP`.
    """
    if dtype == model_dtype or model_dtype != "float32":
        return 1.0
    if device_type != "cpu":
        return CUDA_SPEEDUP.get(dtype, 1.0)
    from ..throughput import matmul_speedup

    return matmul_speedup(dtype)


def dtype_name(dtype: "torch.dtype") -> str:
    """``float32`` for ``torch.float32``: how records, settings and `choose` name a dtype.

    Args:
        dtype: The torch dtype.

    Returns:
        Its name without the ``torch.`` prefix.
    """
    return str(dtype).removeprefix("torch.")


def score_dtype(loaded: LoadedModel, choice: "str | torch.dtype | None" = AUTO) -> "torch.dtype":
    """The dtype scoring passes of `loaded` (a `LoadedModel`) run in, for `choice` (see the module).

    Args:
        loaded: The model (its dtype, device and size decide ``"auto"``).
        choice: ``"auto"``, ``"model"`` (also for None), a dtype name, or a torch dtype (returned as it is).

    Returns:
        The torch dtype.

    Raises:
        InputError: When `choice` is a name that is none of `SCORE_DTYPES` (`choose`).
    """
    import torch

    if isinstance(choice, torch.dtype):
        return choice
    n_params = sum(p.numel() for p in loaded.model.parameters())
    return getattr(torch, choose(dtype_name(loaded.dtype), loaded.device.type, n_params, choice))


def _mixed_copy(model: "torch.nn.Module", dtype: "torch.dtype") -> "torch.nn.Module":
    """A copy of `model` whose linear layers (all but the output head) hold `dtype` weights and multiply in
    `dtype`, taking and giving back the model's own dtype: the residual stream, the norms, the attention's
    softmax and the head stay in the model's precision, and every other tensor is shared, not copied."""
    import torch

    head = model.get_output_embeddings()
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear) and m is not head]
    keep = {id(t): t for t in [*model.parameters(), *model.buffers()]}
    memo = dict(keep)
    for m in linears:
        for t in m.parameters(recurse=False):  # converted straight to `dtype`: no float32 copy on the way
            memo[id(t)] = torch.nn.Parameter(t.detach().to(dtype), requires_grad=False)
            keep.pop(id(t), None)
    twin = copy.deepcopy(model, memo=memo)  # the linear layers' weights converted, everything else shared
    own = model.dtype if hasattr(model, "dtype") else next(model.parameters()).dtype
    for m in twin.modules():
        if isinstance(m, torch.nn.Linear) and id(m.weight) not in keep:
            m.register_forward_pre_hook(lambda _m, args: (args[0].to(dtype), *args[1:]))
            m.register_forward_hook(lambda _m, _args, out: out.to(own))
    return twin.eval()


def scoring_model(loaded: LoadedModel, dtype: "torch.dtype") -> "torch.nn.Module":
    """`loaded`'s model for scoring in `dtype`: the model itself when it has that dtype, else a copy whose
    matrix products run in `dtype` (`_mixed_copy`), made once and kept while the model lives.

    Args:
        loaded: The model.
        dtype: The dtype scoring passes run in (`score_dtype`).

    Returns:
        The model itself, or its copy for `dtype`.
    """
    model = loaded.model
    if dtype == loaded.dtype:
        return model
    with _LOCK:
        copies = _COPIES.setdefault(model, {})
        if dtype not in copies:
            copies[dtype] = _mixed_copy(model, dtype)
        return copies[dtype]


__all__ = ["SCORE_DTYPES", "choose", "dtype_name", "fast_bf16_flags", "native_bf16", "score_dtype", "scoring_model",
           "speedup"]
