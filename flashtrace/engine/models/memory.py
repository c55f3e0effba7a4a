"""Memory a process may still take, and the size of a model's weights read from its config alone.

`available_bytes` is the smallest of: the system's available memory, what the process's address-space
limit (``RLIMIT_AS``) still allows, what its cgroup (container) still allows, and, for a CUDA device,
the device's free memory. `check_weights_fit` refuses a model whose weights would not fit before any
weight is allocated (the model is built on PyTorch's ``meta`` device to count its parameters).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...base.errors import InputError, EXIT_TOO_BIG, FlashTraceError


if TYPE_CHECKING:  # torch loads when a check runs: the cost estimate (and so `--help`) imports this module
    import torch
    from transformers import PretrainedConfig


class ResourceError(FlashTraceError, RuntimeError):
    """A model or a run would not fit in memory; the message says what would (exit code 3)."""

    exit_code = EXIT_TOO_BIG


def _rlimit_room() -> int | None:
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Windows
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return max(soft - pages * resource.getpagesize(), 0)


def _cgroup_room() -> int | None:
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit == "max":
            return None
        return max(int(limit) - int(Path("/sys/fs/cgroup/memory.current").read_text()), 0)
    except (OSError, ValueError):
        return None


def available_bytes(device: str | torch.device | None = None) -> int:
    """Bytes this process can still allocate on `device` (CPU memory unless a CUDA device is named).

    Args:
        device: The device (a name such as ``cuda:0``, or a torch device); None for the CPU.

    Returns:
        The bytes: on a CUDA device its free memory; else the smallest of the system's available memory and
            what the address-space limit and the cgroup still allow.
    """
    import torch

    dev = torch.device(device) if device is not None else torch.device("cpu")
    if dev.type == "cuda" and torch.cuda.is_available():
        free, _ = torch.cuda.mem_get_info(dev)
        return int(free)
    import psutil

    rooms = [int(psutil.virtual_memory().available), _rlimit_room(), _cgroup_room()]
    return min(r for r in rooms if r is not None)


def dtype_bytes(dtype: torch.dtype) -> int:
    """The bytes one value of `dtype` takes.

    Args:
        dtype: The torch dtype.

    Returns:
        Its element size in bytes.
    """
    import torch

    return torch.empty((), dtype=dtype).element_size()


_LAYER_COUNTS = ("num_hidden_layers", "n_layer", "num_layers")


def _meta_count(config) -> int:
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return int(sum(p.numel() for p in model.parameters()))


def _with_layers(config, n: int):
    """A copy of `config` with `n` decoder layers (per-layer lists such as ``layer_types`` cut to match)."""
    import copy

    config = copy.deepcopy(config)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    for name in _LAYER_COUNTS:
        if isinstance(getattr(text, name, None), int):
            setattr(text, name, n)
    for name in ("layer_types",):
        value = getattr(text, name, None)
        if isinstance(value, (list, tuple)):
            setattr(text, name, list(value)[:n])
    return config


def count_parameters(config: PretrainedConfig) -> int:
    """Parameters of the causal LM described by `config`, without allocating any weight, in time and memory
    that do not grow with its depth: models of 1 and 2 layers are built on PyTorch's ``meta`` device and the
    count extrapolated (layers of a decoder stack have the same shapes). A config of 1,000,000 layers is so
    sized in well under a second, where building it took minutes.

    Args:
        config: The transformers config of the model.

    Returns:
        The number of parameters.
    """
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    depth = next((getattr(text, name) for name in _LAYER_COUNTS if isinstance(getattr(text, name, None), int)), None)
    if depth is None or depth <= 2:
        return _meta_count(config)
    one, two = _meta_count(_with_layers(config, 1)), _meta_count(_with_layers(config, 2))
    return one + (depth - 1) * (two - one)


def check_weights_fit(name: str, config: PretrainedConfig, dtype: torch.dtype,
                      device: str | torch.device | None = None, margin: float = 1.1) -> int:
    """The weights' size in bytes, or `ResourceError` when they would not fit in what is available.

    Args:
        name: The model's name, for the message.
        config: The model's transformers config (its parameters are counted without allocating any).
        dtype: The dtype the weights would take.
        device: Where they would go (`available_bytes`); None for the CPU.
        margin: The factor the weights' size is multiplied by before it is compared with 90% of what is
            available.

    Returns:
        The weights' size in bytes.

    Raises:
        ResourceError: When the weights, times `margin`, would not fit in 90% of the memory available.
    """
    import torch

    n_params = count_parameters(config)
    need = n_params * dtype_bytes(dtype)
    room = int(available_bytes(device) * 0.9)
    if need * margin > room:
        where = " on the device" if device is not None and torch.device(device).type == "cuda" else ""
        smaller = " (bfloat16 halves it)" if dtype == torch.float32 else ""
        raise ResourceError(f"{name} needs ~{need / 2**30:.1f} GiB for its weights ({n_params / 1e9:.2f} B parameters "
                            f"in {str(dtype).replace('torch.', '')}) but ~{room / 2**30:.1f} GiB is available{where}; "
                            f"refused before loading: choose a smaller model or dtype{smaller}")
    return need


def check_device(device: str | None) -> None:
    """`ValueError` for a device string torch cannot parse or a device this build or machine lacks.

    Args:
        device: A device string (``cpu``, ``cuda``, ``cuda:N``, ``mps``); None passes.

    Raises:
        InputError: When torch cannot parse `device`, its type is not supported, or this build or machine lacks
            it (an `InputError` is a `ValueError`).
    """
    if device is None:
        return
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise InputError(f"unknown device '{device}'; use cpu, cuda or cuda:N") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            build = "this torch build has no CUDA support" if torch.version.cuda is None else "no CUDA device is visible"
            raise InputError(f"device '{device}' is not available: {build} (torch {torch.__version__}); use --device cpu")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise InputError(f"device '{device}' does not exist: {torch.cuda.device_count()} CUDA device(s) visible")
    elif dev.type == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise InputError(f"device '{device}' is not available on this machine; use --device cpu")
    elif dev.type not in ("cpu", "cuda", "mps"):
        raise InputError(f"device type '{dev.type}' is not supported; use cpu or cuda")
