"""Load-time check of the decomposition identity (METHOD.md §5.2) on a short input.

For every layer, ``Σ_h Σ_j α[h,i,j]·F[h,j]`` (+ output bias, times a sandwich norm's scale) must
reproduce the attention block's output ``x_mid - x_prev`` as the model computed it. A family spec that
does not (a new model variant, a changed transformers implementation) is refused at load time instead
of tracing silently wrong. Cost: one forward pass over `n_tokens` tokens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from .attention import attention_rows
from .families import UnsupportedModelError
from .recording import record_forward

if TYPE_CHECKING:
    from typing import Any

CHECK_TEXT = "The cat sat on the mat, so 3 + 4 = 7."
TOLERANCE = {torch.float32: 1e-3, torch.float64: 1e-6}  # relative L2 error per layer; half precision below
HALF_TOLERANCE = 0.25  # coarse: catches a wrong spec (heads, scales, biases), not small drifts


def decomposition_errors(loaded: Any, n_tokens: int = 12) -> list[float]:
    """Relative error of each layer's reconstructed attention output: ``‖recon − actual‖`` over what
    ``actual = x_mid − x_prev`` is known to, ``‖actual‖ + eps·(‖x_mid‖ + ‖x_prev‖)`` (eps of the stored
    dtype).

    Args:
        loaded: A `LoadedModel` (the model, its tokenizer and its family spec).
        n_tokens: The most tokens of `CHECK_TEXT` the forward pass reads.

    Returns:
        The relative error of each layer, in order.
    """
    ids = list(loaded.tokenizer(CHECK_TEXT, add_special_tokens=False)["input_ids"])[:n_tokens]
    n = len(ids)  # at most the check text's tokens: one block of attention rows
    rec = record_forward(loaded, ids, keep_mid=True)
    errors = []
    for layer in rec.layers:
        _, probs = next(attention_rows(layer, torch.arange(n)))  # probs [H, n, n]
        values = layer.head_values(slice(None))  # [H, n, D]
        recon = (probs.double().cpu() @ values.double().cpu()).sum(0)  # Σ_h Σ_j α[h,i,j]·F[h,j]: [n, D]
        if layer.b_o is not None:
            recon = recon + layer.b_o.double().cpu()
        if layer.post_scale is not None:
            recon = recon * layer.post_scale.double().cpu()[:, None]
        actual = layer.attention_output().double().cpu()
        # x_mid and x_prev are stored in the model's dtype: their rounding bounds how well the difference
        # is known (large in half precision, where the residual stream dwarfs the attention output)
        eps = torch.finfo(layer.x_mid.dtype).eps
        known = actual.norm() + eps * (layer.x_mid.double().norm() + layer.x_prev.double().norm()).cpu()
        errors.append(float((recon - actual).norm() / known.clamp_min(1e-30)))
    return errors


def verify_decomposition(loaded: Any, n_tokens: int = 12) -> float:
    """The worst layer's relative error; `UnsupportedModelError` naming the first layer whose error exceeds the
    dtype's tolerance (a wrong spec usually breaks every layer alike: the first is where to look).

    Args:
        loaded: A `LoadedModel` (the model, its tokenizer and its family spec).
        n_tokens: The most tokens of `CHECK_TEXT` the forward pass reads.

    Returns:
        The largest relative error over the layers (`decomposition_errors`).

    Raises:
        UnsupportedModelError: When a layer's error exceeds the tolerance of the model's dtype (`TOLERANCE`,
            else `HALF_TOLERANCE`), or is NaN; the message names the first such layer.
    """
    errors = decomposition_errors(loaded, n_tokens)
    tolerance = TOLERANCE.get(loaded.dtype, HALF_TOLERANCE)
    failing = [i for i, error in enumerate(errors) if not error <= tolerance]  # `not <=` also catches NaN
    if failing:
        first = failing[0]
        raise UnsupportedModelError(
            f"{loaded.name} ({loaded.spec.name}): the attention decomposition does not reproduce layer {first}'s "
            f"output (relative error {errors[first]:.2g} > {tolerance:g}); its attributions would be wrong. "
            "This model variant is not supported (load with verify=False only to investigate)")
    return max(errors)


__all__ = ["decomposition_errors", "verify_decomposition", "TOLERANCE"]
