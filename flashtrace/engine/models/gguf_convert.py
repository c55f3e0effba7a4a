"""A GGUF file to a transformers safetensors folder, one tensor at a time.

transformers' own GGUF loading dequantizes every tensor into one state dict, builds the model beside it and
`save_pretrained` serialises it again: about twice the model in memory (14 GB for a 1.5B model in float32).
Here the `gguf` reader maps the file, each tensor is dequantized in blocks of rows into its own array, put
through the same name map and tensor processor transformers uses (so the weights are the ones transformers'
GGUF load gives), cast to the dtype asked, and written out in safetensors shards of about `SHARD_BYTES`. Memory
holds one shard and one tensor, never the model.

The config, tokenizer and chat template come from transformers' reading of the GGUF metadata.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import numpy as np
import torch

from ...base.errors import FlashTraceError

if TYPE_CHECKING:
    from transformers import PretrainedConfig

SHARD_BYTES = 512 * 2**20  # a shard closes once it holds this much (a bigger single tensor gets a shard of its own)
ROW_BLOCK_BYTES = 32 * 2**20  # float32 values dequantized at a time within one tensor
INDEX_NAME = "model.safetensors.index.json"


class GGUFConversionError(FlashTraceError, RuntimeError):
    """The GGUF file's tensors do not make the model its metadata describes."""


@dataclass(frozen=True)
class _Planned:
    gguf_name: str
    hf_name: str
    shape: tuple[int, ...]
    nbytes: int  # in the output dtype


def _skeleton(config):
    """The model's module tree with no memory behind it (the meta device): its parameter names and shapes."""
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(config)


def read_config(gguf_path: Path) -> PretrainedConfig:
    """The transformers config that the GGUF metadata describes, without its quantization entry.

    Args:
        gguf_path: The GGUF file.

    Returns:
        The config, as transformers reads it from the file's metadata.
    """
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    return config


def _processor(reader, config):
    """transformers' tensor processor for the file's architecture (it undoes llama.cpp's reordering of query and
    key rows for Llama, for instance)."""
    from transformers.modeling_gguf_pytorch_utils import TENSOR_PROCESSORS, TensorProcessor

    arch = str(reader.fields["general.architecture"].contents())
    return TENSOR_PROCESSORS.get(arch, TensorProcessor)(config=config.to_dict())


def _plan(reader, skeleton, processor, dtype: torch.dtype) -> list[_Planned]:
    """Which GGUF tensor becomes which parameter, checked against the model's own names and shapes."""
    from transformers.modeling_gguf_pytorch_utils import get_gguf_hf_weights_map

    names = get_gguf_hf_weights_map(skeleton, processor)
    expected = {k: tuple(v.shape) for k, v in skeleton.state_dict().items()}
    planned, element = [], torch.empty((), dtype=dtype).element_size()
    for tensor in reader.tensors:
        hf_name = names.get(tensor.name)
        if hf_name is None:
            continue  # a tensor transformers does not load either (e.g. precomputed rotary factors)
        shape = tuple(int(n) for n in reversed(tensor.shape.tolist()))
        if expected.get(hf_name) != shape:
            raise GGUFConversionError(f"GGUF tensor {tensor.name} has shape {shape}; the model expects "
                                      f"{expected.get(hf_name)} for {hf_name}")
        planned.append(_Planned(tensor.name, hf_name, shape, int(np.prod(shape)) * element))
    missing = set(expected) - {p.hf_name for p in planned} - _tied(skeleton)
    if missing:
        raise GGUFConversionError(f"the GGUF file has no weights for {len(missing)} parameters, e.g. "
                                  f"{sorted(missing)[0]}")
    return planned


def _tied(skeleton) -> set[str]:
    """Parameter names that share another's weights (a tied output head), which the file need not hold."""
    if not getattr(skeleton.config, "tie_word_embeddings", False):
        return set()
    return {name for name in skeleton.state_dict() if name.startswith("lm_head.")}


def _shards(planned: list[_Planned], shard_bytes: int) -> list[list[_Planned]]:
    """Consecutive tensors grouped into shards that close once they reach `shard_bytes`."""
    shards, current, size = [], [], 0
    for item in planned:
        current.append(item)
        size += item.nbytes
        if size >= shard_bytes:
            shards.append(current)
            current, size = [], 0
    return shards + ([current] if current else [])


def _dequantized(tensor, shape: tuple[int, ...]) -> np.ndarray:
    """The tensor's values as float32, dequantized a block of rows at a time into one array."""
    from gguf import dequantize

    data = tensor.data
    out = np.empty(shape, dtype=np.float32)
    if data.ndim < 2:
        out[...] = dequantize(data, tensor.tensor_type).reshape(shape)
        return out
    rows = out.reshape(-1, shape[-1])  # [rows, columns]
    step = max(1, ROW_BLOCK_BYTES // (4 * shape[-1]))
    flat = data.reshape(-1, data.shape[-1])
    for start in range(0, flat.shape[0], step):
        rows[start:start + step] = dequantize(flat[start:start + step], tensor.tensor_type)
    return out


def convert_gguf(gguf_path: Path, out_dir: Path, dtype: torch.dtype = torch.float32,
                 progress: Callable[[int], None] | None = None, shard_bytes: int | None = None) -> dict:
    """Write `gguf_path` as a transformers folder in `out_dir` (which must exist, empty): config, generation config,
    tokenizer and the weights in `dtype` as safetensors shards with their index.

    Args:
        gguf_path: The GGUF file.
        out_dir: The folder to write into; it must exist and be empty.
        dtype: The dtype of the weights written.
        progress: ``progress(n)`` hears of every `n` bytes of weights written; None for no report.
        shard_bytes: Sizes the shards (a shard closes once it holds this much); None for `SHARD_BYTES`.

    Returns:
        ``{"n_params", "bytes"}``: the parameters written and their bytes in `dtype`.

    Raises:
        GGUFConversionError: When the file's tensors do not make the model its metadata describes (a shape
            differs, or parameters have no weights).
    """
    from gguf import GGUFReader
    from safetensors.torch import save_file
    from transformers import AutoTokenizer, GenerationConfig

    config = read_config(gguf_path)
    config.dtype = dtype
    reader = GGUFReader(str(gguf_path))
    processor, skeleton = _processor(reader, config), _skeleton(config)
    config.architectures = [type(skeleton).__name__]
    planned = _plan(reader, skeleton, processor, dtype)
    by_name = {t.name: t for t in reader.tensors}
    shards = _shards(planned, shard_bytes or SHARD_BYTES)
    weight_map, total, n_params = {}, 0, 0
    for number, shard in enumerate(shards, 1):
        file = f"model-{number:05d}-of-{len(shards):05d}.safetensors" if len(shards) > 1 else "model.safetensors"
        tensors = {}
        for item in shard:
            values = _dequantized(by_name[item.gguf_name], item.shape)
            values = processor.process(weights=values, name=item.gguf_name, tensor_key_mapping={},
                                       parsed_parameters={"config": config.to_dict(), "tensors": {}}).weights
            tensors[item.hf_name] = torch.from_numpy(np.ascontiguousarray(values)).to(dtype)
            del values
            weight_map[item.hf_name] = file
            total, n_params = total + item.nbytes, n_params + int(np.prod(item.shape))
            if progress:
                progress(item.nbytes)
        save_file(tensors, str(out_dir / file), metadata={"format": "pt"})
        del tensors
    if len(shards) > 1:
        index = {"metadata": {"total_size": total}, "weight_map": weight_map}
        (out_dir / INDEX_NAME).write_text(json.dumps(index, indent=2))
    del reader
    config.save_pretrained(out_dir)
    GenerationConfig.from_model_config(config).save_pretrained(out_dir)
    AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name).save_pretrained(out_dir)
    return {"n_params": n_params, "bytes": total}


__all__ = ["convert_gguf", "read_config", "GGUFConversionError", "SHARD_BYTES"]
