"""Scoring deletion states: the answer's log-probability with some prompt tokens replaced.

A deletion curve of k steps needs k + 1 states of one sequence, each a forward pass. They have the same
length (a deleted token is replaced, not removed), so they run as one batch with no padding; the same
state asked for twice (by two methods, or by a second call after a cancelled one) runs once: the
scorer keeps every score it computed for its sequence. Forward passes run without autograd, and only
the logits that predict the target are computed, in the dtype the scorer was given (a copy of a float32
model with bfloat16 matrix products scores 1.6-2.3 times faster where the processor has AMX:
`engine.models.scoring`). Each batch runs on one torch thread when more would be slower right now (another
process holding a core: `engine.throughput.threads_that_pay`).
"""

from __future__ import annotations

import time
from typing import Callable

import torch

from ..engine.attribution.baselines import target_logprob
from ..engine.models.progress import each_layer
from ..engine.models.scoring import dtype_name, scoring_model
from ..engine.throughput import paying_threads
from ..base.errors import InputError

Progress = Callable[[int, int], None]  # (units done, units in all); a unit is one sequence through one layer


def deleted_batch(ids: torch.Tensor, positions: torch.Tensor, masks: torch.Tensor, replace_id: int) -> torch.Tensor:
    """``[B, N]`` copies of `ids` ``[N]`` with, in row b, ``positions[masks[b]]`` replaced by `replace_id`.

    Args:
        ids: The sequence's token ids, ``[N]``.
        positions: The deletable positions, ``[P]``.
        masks: Which deletable positions each row replaces, ``[B, P]`` (bool).
        replace_id: The token id that replaces a deleted token.

    Returns:
        The ``[B, N]`` batch of token ids, one deletion state per row.
    """
    batch = ids.reshape(1, -1).repeat(masks.shape[0], 1)  # [B, N]
    rows, cols = masks.nonzero(as_tuple=True)
    batch[rows, positions[cols]] = replace_id
    return batch


class DeletionScorer:
    """Target log-probabilities of deletion states of one sequence, each distinct state scored once.

    `loaded` is the `LoadedModel`, `ids` ``[N]`` the sequence, `positions` ``[P]`` the deletable positions
    (a mask row marks which of them are replaced by `replace_id`), `target` the token range scored, `dtype`
    the precision of the passes (None: the model's own). ``seconds`` and ``scored`` count the forward passes
    run so far (time, sequences)."""

    def __init__(self, loaded, ids: torch.Tensor, positions: torch.Tensor, replace_id: int, target: tuple[int, int],
                 batch_size: int = 16, dtype: torch.dtype | None = None):
        if batch_size < 1:
            raise InputError(f"batch_size must be at least 1, got {batch_size}")
        self.dtype = dtype or loaded.dtype
        self.loaded, self.ids, self.positions = loaded, ids.reshape(-1), positions
        self.replace_id, self.target, self.batch_size = replace_id, tuple(target), batch_size
        self.seconds, self.scored = 0.0, 0
        self._scores: dict[bytes, float] = {}

    @staticmethod
    def _key(row: torch.Tensor) -> bytes:
        return row.numpy().tobytes()

    def missing(self, masks: torch.Tensor) -> torch.Tensor:
        """The distinct rows of `masks` ``[B, P]`` not scored yet: ``[U, P]``, in first-seen order.

        Args:
            masks: The deletion masks, ``[B, P]`` (bool): which deletable positions each row replaces.

        Returns:
            The distinct rows not scored yet, ``[U, P]``, in first-seen order.
        """
        seen, rows = set(self._scores), []
        for i, row in enumerate(masks):
            key = self._key(row)
            if key not in seen:
                seen.add(key)
                rows.append(i)
        return masks[rows]

    def score(self, masks: torch.Tensor, progress: Progress | None = None) -> torch.Tensor:
        """Target log-probability for each deletion mask ``[B, P]`` (bool): ``[B]`` float64. Only states not
        scored before run, in batches of `batch_size`.

        Args:
            masks: The deletion masks, ``[B, P]`` (bool): which deletable positions each row replaces.
            progress: Called as ``progress(done, total)`` (units of one sequence through one layer); it hears
                of every layer of every batch and may raise to stop (what finished stays scored). None: silent.

        Returns:
            The target log-probability of each state, ``[B]`` float64.
        """
        masks = masks.to(torch.bool).cpu()
        todo = self.missing(masks)
        model = scoring_model(self.loaded, self.dtype)
        n_layers = len(self.loaded.spec.decoder_layers(model))
        total = todo.shape[0] * n_layers
        for lo in range(0, todo.shape[0], self.batch_size):
            chunk = todo[lo:lo + self.batch_size]

            def on_layer(i: int, _n: int, done: int = lo * n_layers, size: int = chunk.shape[0]) -> None:
                progress(done + size * i, total)

            start = time.perf_counter()
            batch = deleted_batch(self.ids, self.positions, chunk, self.replace_id)
            with (paying_threads(dtype_name(self.dtype)), torch.inference_mode(),
                  each_layer(self.loaded, on_layer if progress else None, model)):
                values = target_logprob(model, batch, self.target, self.batch_size)  # [b]
            self.seconds += time.perf_counter() - start
            self.scored += chunk.shape[0]
            for row, value in zip(chunk, values.tolist()):
                self._scores[self._key(row)] = value
        if progress:
            progress(total, total)  # (0, 0) when every state was scored before
        return torch.tensor([self._scores[self._key(row)] for row in masks], dtype=torch.float64)


__all__ = ["DeletionScorer", "deleted_batch"]
