"""Run evaluation methods on examples: attributions, one shared deletion set, metrics, per-example JSON.

Deletion is batched: the ``k+1`` deletion states of every method are pooled, identical states
(e.g. "nothing deleted", "everything deleted") are scored once, and only the logits predicting the
target tokens are computed.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable, Iterable

import torch

from ..attribution.baselines import target_logprob
from ..fileio import atomic_write_text
from ..models import LoadedModel
from .methods import EvalContext, build_context, get_eval_method
from .metrics import curve_metrics, deletion_masks, deletion_order, recovery
from .tasks import Example


def score_masks(model: torch.nn.Module, ids: torch.Tensor, positions: torch.Tensor, masks: torch.Tensor,
                replace_id: int, target: tuple[int, int], batch_size: int = 16) -> torch.Tensor:
    """Target log-probability of `ids` ``[N]`` (or ``[1, N]``) for each deletion mask ``[B, P]`` over
    `positions` ``[P]`` (masked positions replaced by `replace_id`): ``[B]``. Duplicate masks are scored once."""
    unique, inverse = torch.unique(masks, dim=0, return_inverse=True)
    batch = ids.reshape(1, -1).repeat(unique.shape[0], 1)  # [U, N]
    rows, cols = unique.nonzero(as_tuple=True)
    batch[rows, positions[cols]] = replace_id
    s = target_logprob(model, batch, target, batch_size)
    return s[inverse]


def score_deletions(ctx: EvalContext, masks: torch.Tensor) -> torch.Tensor:
    """Target log-probability for each deletion mask ``[B, P]`` over the example's prompt positions: ``[B]``."""
    return score_masks(ctx.loaded.model, ctx.ids, ctx.positions, masks, ctx.replace_id, ctx.target, ctx.batch_size)


def _round(values, digits: int = 6) -> list[float]:
    return [round(float(v), digits) for v in values]


def evaluate_context(ctx: EvalContext, methods: list[str], k: int = 20) -> dict:
    """Attribute with every method, then score all deletion curves in shared batches; returns the record."""
    scores: dict[str, torch.Tensor] = {}
    seconds: dict[str, float] = {}
    for name in methods:
        start = time.perf_counter()
        full = get_eval_method(name)(ctx)  # [N]
        seconds[name] = time.perf_counter() - start
        scores[name] = full[ctx.positions].float()  # [P]
    masks = {name: deletion_masks(deletion_order(s), k) for name, s in scores.items()}  # each [k+1, P]
    start = time.perf_counter()
    pooled = score_deletions(ctx, torch.cat(list(masks.values())))
    deletion_s = time.perf_counter() - start
    record_methods = {}
    for i, name in enumerate(methods):
        result = curve_metrics(scores[name], pooled[i * (k + 1):(i + 1) * (k + 1)], masks[name])
        record_methods[name] = {
            "seconds": seconds[name], "rise": result.rise, "mas": result.mas,
            "recovery": recovery(scores[name], ctx.gold), "s": _round(result.s), "n": _round(result.n),
            "d": _round(result.d), "scores": _round(scores[name]),
        }
    ex, seq = ctx.example, ctx.prepared.sequence
    return {
        "task": ex.task, "meta": ex.meta, "prompt": ex.prompt, "response": ex.response, "answer": ex.answer,
        "gold": [list(g) for g in ex.gold], "n_tokens": len(seq), "n_prompt": int(ctx.positions.numel()),
        "n_gold": int(ctx.gold.sum()), "gold_tokens": ctx.gold.tolist(), "target": list(ctx.target),
        "positions": ctx.positions.tolist(),
        "tokens": [seq.tokens[p].text for p in ctx.positions.tolist()], "k": k,
        "forward_s": ctx.prepared.timings.get("forward_s"), "deletion_s": deletion_s, "methods": record_methods,
    }


def _existing(path: Path, example: Example, k: int, target: str) -> dict | None:
    """The record already written at `path` when it can be kept or extended (the same prompt, response,
    target and k), else None. Records written before the target was stored explained the answer."""
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text())
    except ValueError:
        return None
    same = (record.get("k") == k and record.get("prompt") == example.prompt
            and record.get("response") == example.response and record.get("target_spec", "answer") == target)
    return record if same and isinstance(record.get("methods"), dict) else None


def run_eval(loaded: LoadedModel, examples: Iterable[tuple[str, Example]], methods: list[str], out: Path, *,
             k: int = 20, ig_steps: int = 16, batch_size: int = 16, target: str = "answer",
             resume: bool = True, on_example: Callable[[str, dict], None] | None = None) -> list[Path]:
    """Evaluate `(example id, Example)` pairs, writing ``out/examples/<id>.json``; returns the paths.

    With `resume`, an example already written for the same prompt, response, target and k is kept when it
    has every method, and extended when it lacks some: only the missing methods are attributed and scored, and merged into
    its record (the others keep their results). `on_example(id, record)` gets ``{}`` for a kept example."""
    folder = Path(out) / "examples"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for ex_id, example in examples:
        path = folder / f"{ex_id}.json"
        previous = _existing(path, example, k, target) if resume else None
        todo = [m for m in methods if previous is None or m not in previous["methods"]]
        if not todo:
            paths.append(path)
            if on_example:
                on_example(ex_id, {})
            continue
        start = time.perf_counter()
        ctx = build_context(loaded, example, target=target, ig_steps=ig_steps, batch_size=batch_size)
        record = evaluate_context(ctx, todo, k)
        record.update(id=ex_id, target_spec=target, total_s=time.perf_counter() - start)
        if previous is not None:  # extend: earlier methods first, times add up
            record["methods"] = {**previous["methods"], **record["methods"]}
            for key in ("total_s", "deletion_s"):
                record[key] = (previous.get(key) or 0.0) + record[key]
        atomic_write_text(path, json.dumps(record))
        paths.append(path)
        if on_example:
            on_example(ex_id, record)
    return paths


__all__ = ["score_masks", "score_deletions", "evaluate_context", "run_eval"]
