"""Proximity of a part to a whole (ALTI / IFR): ``max(0, ‖y‖₁ − ‖y − z‖₁)`` over the last dim."""

from __future__ import annotations

import torch


def proximity(part: torch.Tensor, whole: torch.Tensor) -> torch.Tensor:
    """``[..., D], [..., D] → [...]``; broadcasts like ``whole - part``."""
    return (whole.abs().sum(-1) - (whole - part).abs().sum(-1)).clamp_min(0)
