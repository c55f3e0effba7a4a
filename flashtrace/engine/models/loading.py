"""Load a model by alias, local folder or Hugging Face id, with its family spec."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from ...base.errors import EXIT_USAGE, FlashTraceError
from .aliases import MODEL_ALIASES, SHAPED_CONFIGS, TINY_ALIASES
from .default_model import DEFAULT_ALIAS, converted_dir, ensure_default_model
from .families import FamilySpec, spec_for, spec_for_model_type
from .memory import ResourceError, check_device, check_weights_fit
from .recording import ATTN_IMPLEMENTATION
from .tiny import build_shaped_model, build_tiny_model, shaped_config


class ModelLoadError(FlashTraceError, RuntimeError):
    """A model could not be found or loaded; the message says what to do."""

    exit_code = EXIT_USAGE


@dataclass
class LoadedModel:
    """A causal LM ready for recording: the model, its tokenizer and its family spec."""

    model: torch.nn.Module
    tokenizer: object
    spec: FamilySpec
    name: str

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return next(self.model.parameters()).dtype

    def info(self) -> dict:
        """Plain facts about the model, as stored in a `Trace`."""
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


def _dtype(dtype: str | torch.dtype | None) -> torch.dtype:
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype or torch.float32
    try:
        return _DTYPES[dtype]
    except KeyError:
        raise ModelLoadError(f"unknown dtype '{dtype}'; use one of {', '.join(_DTYPES)}") from None


def default_tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(ensure_default_model())


def load_model(
    name: str | torch.nn.Module = DEFAULT_ALIAS,
    device: str | None = None,
    dtype: str | torch.dtype | None = None,
    trust_remote_code: bool = False,
    device_map: str | None = None,
    seed: int = 0,
    allow_pickle: bool = False,
    tokenizer: object | None = None,
    verify: bool = True,
) -> LoadedModel:
    """Load `name`: ``smollm2-135m`` (built in, offline), ``tiny-<family>`` (random weights),
    ``random-qwen3-8b`` / ``random-smollm2-135m`` (random weights, real shapes, for benchmarks), a local
    folder, or a Hugging Face id. The device, the family and the weights' size (from the config: a model
    larger than the memory available is refused with `ResourceError`) are checked before any weight is
    allocated. Remote code and pickle-based weight files are refused unless `trust_remote_code` /
    `allow_pickle` is set.

    `name` may also be a model you already loaded (a transformers causal LM), passed with its
    `tokenizer`: see `wrap_model`; the other arguments are then ignored.

    With `verify` (default) the decomposition identity is checked on a short input before the model
    is returned (`models.verify`, one short forward pass); a model whose attention output it does not
    reproduce raises `UnsupportedModelError`. `verify=False` skips it for speed-critical use."""
    if isinstance(name, LoadedModel):
        return name
    loaded = _load(name, device, dtype, trust_remote_code, device_map, seed, allow_pickle, tokenizer)
    if verify:
        from .verify import verify_decomposition

        verify_decomposition(loaded)
    if loaded.device.type == "cpu":  # the first attribution must not pay the proximity kernel's load
        from ..kernels.proximity import warm_up

        warm_up()
    return loaded


def _load(name, device, dtype, trust_remote_code, device_map, seed, allow_pickle, tokenizer) -> LoadedModel:
    if isinstance(name, torch.nn.Module):
        return wrap_model(name, tokenizer)
    from transformers import AutoConfig
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    torch_dtype = _dtype(dtype)
    check_device(device)
    if name in TINY_ALIASES:
        tokenizer = default_tokenizer()
        model = build_tiny_model(TINY_ALIASES[name], tokenizer, seed=seed).to(torch_dtype)
        loaded = LoadedModel(model, tokenizer, spec_for(model), name)
        return _place(loaded, device)
    if name in SHAPED_CONFIGS:
        check_weights_fit(name, shaped_config(name), torch_dtype, device)
        model = build_shaped_model(name, torch_dtype, device)
        return LoadedModel(model, default_tokenizer(), spec_for(model), name)
    source = str(ensure_default_model()) if name == DEFAULT_ALIAS else name
    local = Path(source).expanduser()
    offline_hint = (f"'{name}' is neither a local folder nor a model available offline; "
                    f"use the built-in '{DEFAULT_ALIAS}', a tiny-<family> model, or a folder with config.json")
    if not local.is_dir() and not _hub_reachable(source):
        raise ModelLoadError(offline_hint + " (the Hugging Face hub cannot be reached)")
    if local.is_dir():
        config = _local_config(local, trust_remote_code)
    else:
        try:
            config = AutoConfig.from_pretrained(source, trust_remote_code=trust_remote_code)
        except (OSError, ValueError) as exc:
            raise ModelLoadError(f"{offline_hint} ({type(exc).__name__})") from None
    spec_for_model_type(getattr(config, "model_type", "unknown"))
    kwargs = dict(dtype=torch_dtype, trust_remote_code=trust_remote_code, attn_implementation=ATTN_IMPLEMENTATION,
                  use_safetensors=_has_safetensors(local, allow_pickle) if local.is_dir() else None)
    if not device_map:
        check_weights_fit(name, config, torch_dtype, device)
    if device_map:
        kwargs["device_map"] = device_map
    model, tokenizer = _read_model(str(local) if local.is_dir() else source, local.is_dir(), kwargs,
                                   trust_remote_code, offline_hint)
    loaded = LoadedModel(model.eval(), tokenizer, spec_for(model), DEFAULT_ALIAS if name == DEFAULT_ALIAS else name)
    return loaded if device_map else _place(loaded, device)


def wrap_model(model: torch.nn.Module, tokenizer: object, name: str | None = None) -> LoadedModel:
    """An already-loaded transformers causal LM and its tokenizer, ready to trace.

    The weights are used where they are (never copied or moved); the family is checked (an unsupported
    one raises `UnsupportedModelError`). The model object stays yours: each use (the load-time check, a
    recording, an attribution, a generation) puts it in eval mode and, while recording, switches its
    attention function to FlashTrace's (the same outputs, through SDPA), then puts back the training flags
    and the attention implementation it found (`flashtrace.engine.models.borrow.in_use`); no hook stays."""
    if getattr(model, "config", None) is None:
        raise ModelLoadError(f"a {type(model).__name__} is not a transformers model (it has no .config); "
                             "pass an AutoModelForCausalLM, or a model name or folder")
    if tokenizer is None or not callable(getattr(tokenizer, "encode", None)):
        raise ModelLoadError("pass the model's tokenizer too: load_model(model, tokenizer=tokenizer)")
    spec = spec_for(model)
    label = name or getattr(model.config, "_name_or_path", "") or type(model).__name__
    return LoadedModel(model, tokenizer, spec, str(label))


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


def _hub_reachable(model_id: str) -> bool:
    """True when `model_id` is in the local hub cache or the hub answers quickly (no 20 s of retries)."""
    import os
    import socket

    from transformers import AutoConfig

    try:
        AutoConfig.from_pretrained(model_id, local_files_only=True)
        return True
    except (OSError, ValueError):
        pass
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes") or model_id.startswith((".", "/", "~")):
        return False  # offline by choice, or a local path that does not exist
    try:
        socket.create_connection(("huggingface.co", 443), timeout=3).close()
        return True
    except OSError:
        return False


def _read_model(where: str, local: bool, kwargs: dict, trust_remote_code: bool, offline_hint: str):
    """The model and tokenizer at `where`, or `ModelLoadError` in one line: weights that cannot be read
    (truncated, a bad header), weights that do not match the config, files missing from a folder."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # transformers' multi-line load report would precede our one line
    try:
        tokenizer = AutoTokenizer.from_pretrained(where, trust_remote_code=trust_remote_code)
        model = AutoModelForCausalLM.from_pretrained(where, **kwargs)
    except OSError as exc:
        first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        if local:
            raise ModelLoadError(f"{where} cannot be loaded ({type(exc).__name__}: {first})") from None
        raise ModelLoadError(f"{offline_hint} ({type(exc).__name__}: {first})") from None
    except Exception as exc:  # noqa: BLE001 - classified below; anything else is a bug and re-raised
        raise _weights_problem(where, exc) from None
    finally:
        hf_logging.set_verbosity(verbosity)
    return model, tokenizer


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


__all__ = ["LoadedModel", "ModelLoadError", "ResourceError", "load_model", "wrap_model", "MODEL_ALIASES", "converted_dir"]
