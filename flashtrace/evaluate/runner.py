"""Run evaluation methods on examples: attributions, one shared deletion set, metrics, per-example JSON.

Deletion is batched and shared: each method's ``k+1`` deletion states run as batches of one sequence
length, and a state already scored for the example (by an earlier method: "nothing deleted",
"everything deleted", or the same ranking) is not run again (`DeletionScorer`). Each method's record
says how long its attribution and its deletion curve took; with the recording they add up to the
example's time.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable, Iterable

import torch

from ..base.errors import InputError
from ..base.fileio import atomic_write_text
from ..engine.models import LoadedModel
from .deletion import DeletionScorer
from ..engine.models.scoring import AUTO, dtype_name
from ..engine.models.scoring import score_dtype as score_dtype_for
from .methods import EvalContext, build_context, get_eval_method
from .metrics import curve_metrics, deletion_masks, deletion_order, recovery
from .tasks import Example

# progress of `evaluate_context`: (method, phase "attribution" or "deletion", units done, units in all)
MethodProgress = Callable[[str, str, int, int], None]
ExampleProgress = Callable[[str, str, str, int, int], None]  # the same, after the example's id


def scorer(ctx: EvalContext) -> DeletionScorer:
    """The example's `DeletionScorer` in the context's scoring precision, kept on the context: every state is
    scored once per example and precision (curves of two precisions never share a state).

    Args:
        ctx: The example ready for evaluation; the scorer is kept in its ``extra``.

    Returns:
        The scorer (made on the first call for this precision).
    """
    key = ("deletion", ctx.score_dtype)
    if key not in ctx.extra:
        ctx.extra[key] = DeletionScorer(ctx.loaded, ctx.ids, ctx.positions, ctx.replace_id, ctx.target,
                                        ctx.batch_size, ctx.score_dtype)
    return ctx.extra[key]


def score_deletions(ctx: EvalContext, masks: torch.Tensor) -> torch.Tensor:
    """Target log-probability for each deletion mask ``[B, P]`` over the example's prompt positions: ``[B]``.

    Args:
        ctx: The example ready for evaluation.
        masks: The deletion masks, ``[B, P]`` bool over the example's prompt positions.

    Returns:
        ``[B]`` float64 log-probabilities (states scored before are not run again).
    """
    return scorer(ctx).score(masks)


def _round(values, digits: int = 6) -> list[float]:
    return [round(float(v), digits) for v in values]


def evaluate_method(ctx: EvalContext, name: str, k: int = 20, progress: MethodProgress | None = None) -> dict:
    """One method on the example: its attribution (timed alone), then its deletion curve (only the states
    not scored yet for this example run) and metrics.

    Args:
        ctx: The example ready for evaluation.
        name: The evaluation method (`methods.get_eval_method`).
        k: The deletion curve's steps. With `k` 0 no deletion curve is run: RISE and MAS are None,
            Recovery@10% is kept.
        progress: Hears ``(method, phase, done, total)``, phase ``attribution`` or ``deletion``.

    Returns:
        Its record entry: ``seconds`` (attribution), ``deletion_s``, ``deletion_runs`` (sequences it ran), RISE,
        MAS, Recovery@10%, the curves and scores.
    """
    if progress:
        progress(name, "attribution", 0, 1)
    start = time.perf_counter()
    full = get_eval_method(name)(ctx)  # [N]
    seconds = time.perf_counter() - start
    if progress:
        progress(name, "attribution", 1, 1)
    start = time.perf_counter()
    scores = full[ctx.positions].float()  # [P]
    if k == 0:
        return {"seconds": seconds, "deletion_s": 0.0, "deletion_runs": 0, "rise": None, "mas": None,
                "recovery": recovery(scores, ctx.gold), "s": [], "n": [], "d": [], "scores": _round(scores)}
    masks = deletion_masks(deletion_order(scores), k)  # [k+1, P]
    deletion, before = scorer(ctx), scorer(ctx).scored
    s = deletion.score(masks, (lambda done, total: progress(name, "deletion", done, total)) if progress else None)
    result = curve_metrics(scores, s, masks)
    return {"seconds": seconds, "deletion_s": time.perf_counter() - start, "deletion_runs": deletion.scored - before,
            "rise": result.rise, "mas": result.mas, "recovery": recovery(scores, ctx.gold), "s": _round(result.s),
            "n": _round(result.n), "d": _round(result.d), "scores": _round(scores)}


def example_record(ctx: EvalContext, methods: dict[str, dict], k: int, refused: dict[str, str] | None = None
                   ) -> dict:
    """The per-example record around the method entries `methods` (``deletion_s``: their deletion total).

    Args:
        ctx: The example evaluated.
        methods: ``{name: record entry}`` (`evaluate_method`).
        k: The deletion curves' steps.
        refused: ``{name: message}`` of the methods that refused the example (kept under ``"refused"`` when any).

    Returns:
        The record: the example (task, meta, texts, gold), its token counts, target and prompt positions and
        tokens, `k`, the scoring precision, the forward pass's seconds, the deletion total, the methods and the
        refusals.
    """
    ex, seq = ctx.example, ctx.prepared.sequence
    return {
        "task": ex.task, "meta": ex.meta, "prompt": ex.prompt, "response": ex.response, "answer": ex.answer,
        "gold": [list(g) for g in ex.gold], "n_tokens": len(seq), "n_prompt": int(ctx.positions.numel()),
        "n_gold": int(ctx.gold.sum()), "gold_tokens": ctx.gold.tolist(), "target": list(ctx.target),
        "positions": ctx.positions.tolist(),
        "tokens": [seq.tokens[p].text for p in ctx.positions.tolist()], "k": k,
        "score_dtype": dtype_name(ctx.score_dtype or ctx.loaded.dtype),
        "forward_s": ctx.prepared.timings.get("forward_s"),
        "deletion_s": sum(m["deletion_s"] for m in methods.values()), "methods": methods,
        **({"refused": dict(refused)} if refused else {}),
    }


def evaluate_context(ctx: EvalContext, methods: list[str], k: int = 20, progress: MethodProgress | None = None) -> dict:
    """Every method in turn (`evaluate_method`: attribution, then its deletion curve, sharing the states
    already scored); returns the example's record. A method that refuses the example (an `InputError`: a
    stop-token preset that leaves the target no token, say) is recorded under ``"refused"`` with its message,
    and the other methods go on; any other error propagates.

    Args:
        ctx: The example ready for evaluation.
        methods: The evaluation methods, run in this order.
        k: The deletion curves' steps (0: none).
        progress: Hears ``(method, phase, done, total)`` of each method.

    Returns:
        The example's record (`example_record`).
    """
    done, refused = {}, {}
    for name in methods:
        try:
            done[name] = evaluate_method(ctx, name, k, progress)
        except InputError as exc:
            refused[name] = str(exc)
    return example_record(ctx, done, k, refused)


def _existing(path: Path, example: Example, k: int, target: str, score_dtype: str) -> dict | None:
    """The record already written at `path` when it can be kept or extended (the same prompt, response,
    target, k and, with deletion curves, scoring precision), else None. Records written before the target was
    stored explained the answer; those written before the scoring precision was stored were scored in float32.
    With k = 0 nothing is scored, so a record made where another precision was chosen is kept."""
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text())
    except ValueError:
        return None
    same = (record.get("k") == k and record.get("prompt") == example.prompt
            and record.get("response") == example.response and record.get("target_spec", "answer") == target
            and (k == 0 or record.get("score_dtype", "float32") == score_dtype))
    return record if same and isinstance(record.get("methods"), dict) else None


def _plan(examples: Iterable[tuple[str, Example]], methods: list[str], folder: Path, k: int, target: str,
          resume: bool, score_dtype: str):
    """``(id, example, path, previous record or None, methods to run)`` per example."""
    for ex_id, example in examples:
        path = folder / f"{ex_id}.json"
        previous = _existing(path, example, k, target, score_dtype) if resume else None
        held = set() if previous is None else {*previous["methods"], *previous.get("refused", {})}
        yield ex_id, example, path, previous, [m for m in methods if m not in held]


def pending(examples: Iterable[tuple[str, Example]], methods: list[str], out: Path, k: int = 20,
            target: str = "answer", resume: bool = True, score_dtype: str = "float32"
            ) -> list[tuple[str, Example, list[str]]]:
    """``[(id, example, methods still to run)]`` of a run into `out`: what `run_eval` will compute (an
    example already written with every method is left out).

    Args:
        examples: ``(example id, Example)`` pairs.
        methods: The evaluation methods of the run.
        out: The evaluation folder (records under ``out/examples``).
        k: The deletion curves' steps.
        target: The target of each example.
        resume: Whether records already written are kept (without it every method of every example is to run).
        score_dtype: The name of the resolved precision of the deletion curves.

    Returns:
        One ``(id, example, methods still to run)`` per example with something to run.
    """
    folder = Path(out) / "examples"
    plan = _plan(examples, methods, folder, k, target, resume, score_dtype)
    return [(ex_id, example, todo) for ex_id, example, _, _, todo in plan if todo]


def _compute(loaded: LoadedModel, ex_id: str, example: Example, todo: list[str], *, k: int, ig_steps: int,
             batch_size: int, target: str, score_dtype: str | None = AUTO, progress: ExampleProgress | None = None
             ) -> dict:
    start = time.perf_counter()
    ctx = build_context(loaded, example, target=target, ig_steps=ig_steps, batch_size=batch_size,
                        score_dtype=score_dtype)
    record = evaluate_context(ctx, todo, k, (lambda *step: progress(ex_id, *step)) if progress else None)
    record.update(id=ex_id, target_spec=target, total_s=time.perf_counter() - start)
    return record


def _write(path: Path, record: dict, previous: dict | None) -> None:
    if previous is not None:  # extend: earlier methods (and refusals) first, times add up
        record["methods"] = {**previous["methods"], **record["methods"]}
        refused = {**previous.get("refused", {}), **record.get("refused", {})}
        if refused:
            record["refused"] = refused
        for key in ("total_s", "deletion_s", "forward_s"):
            if record.get(key) is not None:
                record[key] = (previous.get(key) or 0.0) + record[key]
    atomic_write_text(path, json.dumps(record))


def run_eval(loaded: LoadedModel, examples: Iterable[tuple[str, Example]], methods: list[str], out: Path, *,
             k: int = 20, ig_steps: int = 16, batch_size: int = 16, target: str = "answer",
             score_dtype: str | None = AUTO, resume: bool = True,
             on_example: Callable[[str, dict], None] | None = None,
             progress: ExampleProgress | None = None) -> list[Path]:
    """Evaluate `(example id, Example)` pairs, writing ``out/examples/<id>.json``; returns the paths.

    Args:
        loaded: The model under evaluation.
        examples: ``(example id, Example)`` pairs.
        methods: The evaluation methods to run on each example.
        out: The evaluation folder (records under ``out/examples``, created when missing).
        k: The deletion curves' steps (0: none).
        ig_steps: Integrated-gradients steps.
        batch_size: Sequences per forward pass of the deletion curves and the methods that batch.
        target: The target of each example (`run.tracing.resolve_target`).
        score_dtype: The deletion curves' precision (`engine.models.scoring.score_dtype`).
        resume: With `resume`, an example already written for the same prompt, response, target and k is kept
            when it has every method, and extended when it lacks some: only the missing methods are attributed
            and scored, and merged into its record (the others keep their results). A method recorded as
            refused for the example is not run again (the refusal is deterministic).
        on_example: Called as ``on_example(id, record)`` after each example; it gets ``{}`` for a kept example.
        progress: ``progress(id, method, phase, done, total)`` follows each method of each example
            (`evaluate_method`).

    Returns:
        The record paths, one per example, written or kept.
    """
    folder = Path(out) / "examples"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    resolved = score_dtype_for(loaded, score_dtype)
    for ex_id, example, path, previous, todo in _plan(examples, methods, folder, k, target, resume,
                                                      dtype_name(resolved)):
        if todo:
            record = _compute(loaded, ex_id, example, todo, k=k, ig_steps=ig_steps, batch_size=batch_size,
                              target=target, score_dtype=resolved, progress=progress)
            _write(path, record, previous)
        paths.append(path)
        if on_example:
            on_example(ex_id, record if todo else {})
    return paths


class EvalWorker:
    """A Ray worker of `run_eval_ray`: loads the model once; each call evaluates one ``(id, example,
    methods)`` job and returns its record, or ``{"error": message}``."""

    def __init__(self, model: str, dtype: str | None, options: dict, device: str | None = None):
        from ..engine.models import load_model

        self.loaded, self.options = load_model(model, device=device, dtype=dtype), options

    def __call__(self, job: tuple) -> dict:
        from ..run.distributed import kill_hook

        ex_id, example, todo = job
        kill_hook(ex_id)
        try:
            return _compute(self.loaded, ex_id, example, todo, **self.options)
        except Exception as exc:  # noqa: BLE001 - reported per example
            return {"error": f"{type(exc).__name__}: {exc}"}


def run_eval_ray(model: str, examples: Iterable[tuple[str, Example]], methods: list[str], out: Path, *,
                 dtype: str | None = None, k: int = 20, ig_steps: int = 16, batch_size: int = 16,
                 target: str = "answer", score_dtype: str = "float32", resume: bool = True, address: str = "local",
                 workers: int | None = None,
                 num_cpus: float = 1, num_gpus: float = 0, max_retries: int = 2,
                 on_example: Callable[[str, dict], None] | None = None) -> tuple[list[Path], dict[str, str]]:
    """`run_eval` on Ray actors (`flashtrace.run.distributed.RayPool`), each loading `model` once; records come
    back to this process, which alone writes them (same files, same resume rules).

    Args:
        model: The model each worker loads (a name or alias `load_model` takes).
        examples: ``(example id, Example)`` pairs.
        methods: The evaluation methods to run on each example.
        out: The evaluation folder (records under ``out/examples``, created when missing).
        dtype: The dtype the workers load the model in (None: the default).
        k: The deletion curves' steps (0: none).
        ig_steps: Integrated-gradients steps.
        batch_size: Sequences per forward pass of the deletion curves and the methods that batch.
        target: The target of each example.
        score_dtype: The deletion curves' precision as a dtype name (not ``auto``: the workers' hardware is not
            known here).
        resume: Keep or extend the records already written, as `run_eval` does.
        address: The Ray cluster (``local``: start a local one).
        workers: How many workers (None: as many as the cluster's resources hold, at most one per job).
        num_cpus: CPUs per worker.
        num_gpus: GPUs per worker (a worker with some runs on CUDA).
        max_retries: How many times a job whose worker died is retried (on a fresh worker).
        on_example: Called as ``on_example(id, record)`` after each example: ``{}`` for a kept example,
            ``{"error": message}`` for a failed one.

    Returns:
        The paths written or kept, and ``{id: error}`` for examples that failed (not written).
    """
    from ..run.distributed import RayPool

    folder = Path(out) / "examples"
    folder.mkdir(parents=True, exist_ok=True)
    plan = list(_plan(examples, methods, folder, k, target, resume, score_dtype))
    paths, failed, jobs, by_id = [], {}, [], {}
    for ex_id, example, path, previous, todo in plan:
        by_id[ex_id] = (path, previous)
        if todo:
            jobs.append((ex_id, example, todo))
        else:
            paths.append(path)
            if on_example:
                on_example(ex_id, {})
    if not jobs:
        return paths, failed
    options = dict(k=k, ig_steps=ig_steps, batch_size=batch_size, target=target, score_dtype=score_dtype)
    pool = RayPool(EvalWorker, (model, dtype, options), address=address, workers=workers, num_cpus=num_cpus,
                   num_gpus=num_gpus, max_retries=max_retries, jobs=len(jobs))
    try:
        for (ex_id, _, _), record, _attempts in pool.map(jobs):
            if "error" in record:
                failed[ex_id] = record["error"]
            else:
                path, previous = by_id[ex_id]
                _write(path, record, previous)
                paths.append(path)
            if on_example:
                on_example(ex_id, record)
    finally:
        pool.close()
    return paths, failed


__all__ = ["pending", "scorer", "score_deletions", "evaluate_method", "example_record", "evaluate_context", "run_eval", "run_eval_ray", "EvalWorker"]
