"""The Story page's faithfulness check: does deleting what the attribution ranks highest hurt the answer
more than deleting as many prompt tokens at random?

One batch through the model: the trace's own token ids unchanged, with the top `fraction` of prompt
tokens (by the trace's final scores, the same order and count as Recovery@10 % uses) replaced by the
pad/EOS token, and with `n_random` random draws of the same size replaced. The result is a plain dict
(JSON-ready), stored in ``trace.extra["faithfulness"]`` for gallery traces and computed live otherwise.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch

from ..analysis.check import FAITHFULNESS_KEY
from ..analysis.schema import Trace
from .deletion import DeletionScorer, Progress
from .methods import replacement_id
from .metrics import deletion_order
from ..base.errors import InputError

if TYPE_CHECKING:
    from ..engine.models import LoadedModel

VERSION = 1


def faithfulness_check(loaded: LoadedModel, trace: Trace, fraction: float = 0.1, n_random: int = 5, seed: int = 0,
                       batch_size: int = 16, progress: Progress | None = None) -> dict[str, Any]:
    """Answer (target) log-probability before deletion, after deleting the top `fraction` of the trace's
    prompt tokens, and after deleting as many at random (`n_random` draws, fixed `seed`).

    Args:
        loaded: The `LoadedModel`; it must be the model the trace was made with (its token ids are fed back
            unchanged).
        trace: The trace whose final scores rank the prompt tokens, and whose target is scored.
        fraction: The share of prompt tokens deleted, in (0, 1] (rounded up to whole tokens).
        n_random: How many random draws of the same size are deleted.
        seed: The seed of the random draws.
        batch_size: Deletion states per forward pass.
        progress: Hears of each layer of each forward pass (`DeletionScorer.score`).

    Returns:
        ``{"version", "fraction", "n_prompt", "n_deleted", "before", "top", "random", "random_mean",
        "seed", "model"}`` with log-probabilities summed over the target tokens.

    Raises:
        InputError: When `fraction` is not in (0, 1], `n_random` is below 1, the trace has no prompt tokens,
            or the trace's token ids do not fit the model's vocabulary (another model made it).
    """
    if not 0 < fraction <= 1:
        raise InputError(f"fraction must be in (0, 1], got {fraction}")
    if n_random < 1:
        raise InputError("n_random must be at least 1")
    positions = torch.tensor(trace.positions("prompt"), dtype=torch.long)  # [P]
    p = positions.numel()
    if p == 0:
        raise InputError("the trace has no prompt tokens to delete")
    ids = torch.tensor([t.id for t in trace.tokens], dtype=torch.long)  # [N]
    vocab = loaded.model.get_input_embeddings().weight.shape[0]
    if int(ids.max()) >= vocab:
        raise InputError(f"the trace's token ids do not fit this model's vocabulary ({vocab}); load the model "
                         f"the trace was made with ({trace.model.name})")
    scores = torch.tensor(trace.scores.final, dtype=torch.float32)[positions]  # [P]
    n_delete = math.ceil(fraction * p)
    generator = torch.Generator().manual_seed(seed)
    masks = torch.zeros(2 + n_random, p, dtype=torch.bool)  # row 0 nothing, row 1 top, rows 2.. random
    masks[1, deletion_order(scores)[:n_delete]] = True
    for row in range(2, 2 + n_random):
        masks[row, torch.randperm(p, generator=generator)[:n_delete]] = True
    scorer = DeletionScorer(loaded, ids, positions, replacement_id(loaded.tokenizer), tuple(trace.settings.target),
                            batch_size)
    s = scorer.score(masks, progress)  # [2 + R]
    random = [float(v) for v in s[2:]]
    return {"version": VERSION, "fraction": fraction, "n_prompt": p, "n_deleted": n_delete, "before": float(s[0]),
            "top": float(s[1]), "random": random, "random_mean": sum(random) / len(random), "seed": seed,
            "model": trace.model.name}


__all__ = ["FAITHFULNESS_KEY", "faithfulness_check"]
