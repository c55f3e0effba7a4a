"""Tiny random-weight models of every supported family, for tests and benchmarks.

Each is built from a config with a fixed seed (a few million parameters, mostly the embedding),
uses the default model's real tokenizer, and has random non-zero biases and norm gains so that
every term of the attention decomposition is exercised.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from transformers import AutoConfig, AutoModelForCausalLM

from .aliases import SHAPED_CONFIGS
from . import recording  # noqa: F401 - importing it registers the attention function with transformers

if TYPE_CHECKING:
    from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase

_COMMON = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
               num_key_value_heads=2, max_position_embeddings=4096)

TINY_CONFIGS: dict[str, dict] = {
    "llama": dict(_COMMON, attention_bias=True, tie_word_embeddings=True),
    "mistral": dict(_COMMON, sliding_window=8, tie_word_embeddings=True),
    "qwen2": dict(_COMMON, tie_word_embeddings=True),
    "qwen3": dict(_COMMON, head_dim=16, tie_word_embeddings=True),
    "gemma2": dict(_COMMON, head_dim=16, query_pre_attn_scalar=24, sliding_window=8, attn_logit_softcapping=2.0,
                   final_logit_softcapping=30.0, layer_types=["sliding_attention", "full_attention"]),
    "gemma3_text": dict(_COMMON, head_dim=16, query_pre_attn_scalar=24, sliding_window=8,
                        layer_types=["sliding_attention", "full_attention"]),
    "phi3": dict(_COMMON, tie_word_embeddings=True),
    "gpt2": dict(n_embd=64, n_layer=2, n_head=4, n_positions=4096, n_inner=128, tie_word_embeddings=True),
}


def build_tiny_model(model_type: str, tokenizer: PreTrainedTokenizerBase, seed: int = 0,
                     attn_implementation: str | None = None) -> PreTrainedModel:
    """A deterministic random-weight causal LM of `model_type` sized for `tokenizer`.

    Args:
        model_type: A key of `TINY_CONFIGS` (a transformers model type: ``llama``, ``gemma2``, ...).
        tokenizer: The tokenizer the model is sized for (its vocabulary size and special token ids).
        seed: The seed of the random weights.
        attn_implementation: transformers' attention implementation; None for its default.

    Returns:
        The model, float32, in eval mode, with random non-zero biases and norm gains.
    """
    kwargs = dict(TINY_CONFIGS[model_type])
    ids = dict(bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
               pad_token_id=tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id)
    config = AutoConfig.for_model(model_type, vocab_size=len(tokenizer), **ids, **kwargs)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, attn_implementation=attn_implementation, dtype=torch.float32)
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("bias") or "norm" in name or ".ln_" in name:
                param.add_(0.1 * torch.randn(param.shape, generator=generator))
    return model.eval()


def shaped_config(name: str) -> PretrainedConfig:
    """The transformers config of a shaped random-weight model (nothing allocated).

    Args:
        name: A key of `aliases.SHAPED_CONFIGS`, e.g. ``random-qwen3-8b``.

    Returns:
        The config.
    """
    model_type, kwargs = SHAPED_CONFIGS[name]
    return AutoConfig.for_model(model_type, **kwargs)


def build_shaped_model(name: str, dtype: torch.dtype, device: str | None = None, seed: int = 0,
                       attn_implementation: str | None = None) -> PreTrainedModel:
    """A random-weight model shaped like a real checkpoint, created directly on `device` in `dtype`.

    Args:
        name: A key of `aliases.SHAPED_CONFIGS`, e.g. ``random-qwen3-8b``.
        dtype: The dtype of the weights.
        device: Where the weights are created; None for the CPU.
        seed: The seed of the random weights.
        attn_implementation: transformers' attention implementation; None for its default.

    Returns:
        The model, in eval mode.
    """
    config = shaped_config(name)
    torch.manual_seed(seed)
    with torch.device(device or "cpu"):
        model = AutoModelForCausalLM.from_config(config, attn_implementation=attn_implementation, dtype=dtype)
    return model.eval()
