"""Declarative per-family specs: where a decoder layer keeps what the attention decomposition needs.

Each spec answers, for one model family:
- where the decoder layers are (``layers``) and their attention module (``attention``);
- which module receives ``x_mid`` (the residual stream right after attention is added) as its
  input (``mid_norm``);
- the output projection as per-head matrices ``W_O[h]`` of shape ``[d_head, D]`` and its bias;
- an optional norm applied to the attention output before it joins the residual stream
  (Gemma's sandwich norm, ``post_attn_norm``), with its gain.

Nothing here runs the model; `flashtrace.engine.models.recording` uses the spec to hook the layers and the
decomposition identity test checks each spec against the model's own forward pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import nn

from ...base.errors import EXIT_USAGE, FlashTraceError


class UnsupportedModelError(FlashTraceError, ValueError):
    """The model's family has no verified spec; tracing it could be silently wrong."""

    exit_code = EXIT_USAGE


def _linear_heads(proj: nn.Linear, n_heads: int) -> torch.Tensor:
    """``nn.Linear`` output projection ``[D, H*d]`` → per-head ``[H, d, D]``."""
    d_model, inner = proj.weight.shape
    return proj.weight.T.reshape(n_heads, inner // n_heads, d_model)


def _conv1d_heads(proj: nn.Module, n_heads: int) -> torch.Tensor:
    """GPT-2 ``Conv1D`` projection (``x @ W``, ``W: [H*d, D]``) → per-head ``[H, d, D]``."""
    inner, d_model = proj.weight.shape
    return proj.weight.reshape(n_heads, inner // n_heads, d_model)


def _unit_gain(norm: nn.Module) -> torch.Tensor:
    return norm.weight


def _one_plus_gain(norm: nn.Module) -> torch.Tensor:
    return 1.0 + norm.weight


@dataclass(frozen=True)
class FamilySpec:
    """How to find the attention pieces of one model family."""

    name: str
    model_types: tuple[str, ...]
    layers: str  # dotted path from the CausalLM to the list of decoder layers
    attention: str  # attribute of a decoder layer
    out_proj: str  # attribute of the attention module
    mid_norm: str  # attribute of a decoder layer whose input is x_mid
    heads_of: Callable[[nn.Module, int], torch.Tensor] = _linear_heads
    post_attn_norm: str | None = None  # attribute of a decoder layer, applied to the attention output
    post_norm_gain: Callable[[nn.Module], torch.Tensor] = _unit_gain
    notes: tuple[str, ...] = field(default_factory=tuple)

    def decoder_layers(self, model: nn.Module) -> nn.ModuleList:
        """The model's list of decoder layers, found at this family's `layers` attribute path.

        Args:
            model: The causal language model (the CausalLM) of this family.

        Returns:
            The module list of its decoder layers, in order.
        """
        obj = model
        for part in self.layers.split("."):
            obj = getattr(obj, part)
        return obj


_LLAMA_LIKE = dict(layers="model.layers", attention="self_attn", out_proj="o_proj", mid_norm="post_attention_layernorm")

SPECS: dict[str, FamilySpec] = {}


def _add(spec: FamilySpec) -> None:
    for model_type in spec.model_types:
        SPECS[model_type] = spec


_add(FamilySpec(name="llama", model_types=("llama",), notes=("optional q/k/v/o biases",), **_LLAMA_LIKE))
_add(FamilySpec(name="mistral", model_types=("mistral",), notes=("sliding-window attention",), **_LLAMA_LIKE))
_add(FamilySpec(name="qwen2", model_types=("qwen2",), notes=("q/k/v biases",), **_LLAMA_LIKE))
_add(FamilySpec(name="qwen3", model_types=("qwen3",), notes=("q/k RMS norms before rotary",), **_LLAMA_LIKE))
_add(FamilySpec(name="phi3", model_types=("phi3",), notes=("fused qkv projection",), **_LLAMA_LIKE))
for _gemma in ("gemma2", "gemma3"):
    _add(
        FamilySpec(
            name=_gemma,
            model_types=(_gemma, "gemma3_text") if _gemma == "gemma3" else (_gemma,),
            layers="model.layers",
            attention="self_attn",
            out_proj="o_proj",
            mid_norm="pre_feedforward_layernorm",
            post_attn_norm="post_attention_layernorm",
            post_norm_gain=_one_plus_gain,
            notes=("sandwich norms with 1+w gain", "scaled queries", "sliding windows", "logit soft-capping"),
        )
    )
_add(
    FamilySpec(
        name="gpt2",
        model_types=("gpt2",),
        layers="transformer.h",
        attention="attn",
        out_proj="c_proj",
        mid_norm="ln_2",
        heads_of=_conv1d_heads,
        notes=("Conv1D projections", "LayerNorm with bias", "learned positions"),
    )
)


def supported_families() -> list[str]:
    """The names of the supported model families, sorted.

    Returns:
        The family names (``gemma2``, ``llama``, ...), sorted.
    """
    return sorted({spec.name for spec in SPECS.values()})


def spec_for_model_type(model_type: str) -> FamilySpec:
    """The spec for a ``config.model_type``; raises `UnsupportedModelError` naming what is supported.

    Args:
        model_type: A transformers ``config.model_type`` (``llama``, ``qwen2``, ``gemma3_text``, ...).

    Returns:
        The family's spec.

    Raises:
        UnsupportedModelError: When no spec covers `model_type` (the message names the supported families).
    """
    try:
        return SPECS[model_type]
    except KeyError:
        raise UnsupportedModelError(
            f"model family '{model_type}' is not supported (its attention decomposition is unverified); "
            f"supported families: {', '.join(supported_families())}"
        ) from None


def spec_for(model: nn.Module) -> FamilySpec:
    """The family spec for `model` (from its config's model_type); UnsupportedModelError otherwise.

    Args:
        model: A transformers causal LM (without a config, its class name stands for the model type).

    Returns:
        The family's spec.

    Raises:
        UnsupportedModelError: When the model's family has no spec (`spec_for_model_type`).
    """
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None) or type(model).__name__
    return spec_for_model_type(model_type)
