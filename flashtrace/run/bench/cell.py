"""One benchmark cell in a fresh process: ``python -m flashtrace.run.bench.cell '<json spec>'``.

Prints one JSON line: wall times of the phases, peak resident memory (``ru_maxrss``), thread count.
Modes: ``forward`` (plain SDPA forward, no recording), ``record`` (the recording pass only), ``flashtrace`` (record + K
hops; ``target_tokens`` = T > 0: hop 0 attributes the last T tokens and later hops the rest of the response, as for an
answer after its reasoning; 0 or absent: the whole response is both), ``ifr`` / ``ifr-rowwise`` (record + token-wise
IFR rows of every target token, the last T or the whole response; with
``max_rows`` only the first rows are timed and the rest extrapolated linearly, flagged in the output).
``ifr-rowwise`` with ``sample_rows`` = S times S rows at evenly spaced positions over the target span, one at a
time (after one untimed warm-up row), and extrapolates with `extrapolate_rows`. ``warmup``: true runs a short
record + attribution first, untimed (for GPUs, where the first call pays CUDA start-up). ``repeats`` = R times the
forward, or FlashTrace's recording and attribution, R times in the same process and reports their medians (all runs
are kept in the JSON); IFR modes run once. ``head_values``: true forms the per-head value vectors (IFR's own
formulation) instead of the CPU value kernel.
"""

from __future__ import annotations

import json
import resource
import statistics
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def _peak_rss_bytes() -> int:
    """Peak resident memory of this process. Linux's ``VmHWM`` belongs to this program alone;
    ``ru_maxrss`` survives fork + exec and can report the (larger) parent that started the cell."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def spread_positions(start: int, m: int, s: int) -> list[int]:
    """`s` positions evenly spaced over ``[start, start + m)``, first and last included (all when s >= m).

    Args:
        start: The first position of the range.
        m: How many positions the range holds.
        s: How many positions to pick.

    Returns:
        The positions, ascending: all of the range when `s` >= `m`, its middle one when `s` is 1.
    """
    if s >= m:
        return list(range(start, start + m))
    if s == 1:
        return [start + (m - 1) // 2]
    return [start + round(i * (m - 1) / (s - 1)) for i in range(s)]


def extrapolate_rows(row_seconds: list[float], m: int) -> float:
    """Total seconds for all `m` target rows from per-row times at evenly spaced positions: their sum
    scaled by m / S (= m × mean). Exact when a row's cost is linear in its position, which is how row-wise
    IFR grows (a row at position p reads p sources).

    Args:
        row_seconds: The seconds of each of the S timed rows (at least one).
        m: How many target rows there are in all.

    Returns:
        The extrapolated seconds of all `m` rows.
    """
    return sum(row_seconds) * m / len(row_seconds)


def flashtrace_target(n_prompt: int, n: int, n_target: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Hop-0 weights ``[n]`` and the re-attributed span G ``[n]`` bool for a response at ``n_prompt..n-1``:
    the last `n_target` tokens and the response before them, or (``n_target`` = 0) the whole response twice.

    Args:
        n_prompt: Where the response starts (the prompt's length in tokens).
        n: The sequence's length in tokens.
        n_target: How many last tokens hop 0 attributes; 0 for the whole response.

    Returns:
        ``(weights, generated)``: hop 0's target weights (0/1, float) and the span G (bool), both ``[n]``.
    """
    import torch

    first = n - n_target if n_target else n_prompt
    weights = torch.zeros(n)
    weights[first:] = 1.0
    generated = torch.zeros(n, dtype=torch.bool)
    generated[n_prompt:first if n_target else n] = True
    return weights, generated


def _warm_up(loaded, ids, n_prompt: int, mode: str, n: int = 64) -> None:
    """Record and attribute a short prefix once (``warmup`` in the spec), so the timed run excludes
    one-time costs (CUDA context and kernels, JIT compilation)."""
    import torch

    from flashtrace.engine.attribution import recursive_hops, span_aggregate, tokenwise_rows
    from flashtrace.engine.models import record_forward

    n = min(n, ids.numel())
    rec = record_forward(loaded, ids[:n])
    if mode == "flashtrace":
        generated = torch.zeros(n, dtype=torch.bool)
        generated[min(n_prompt, n // 2):] = True
        recursive_hops(lambda w: span_aggregate(rec, w).scores, generated.float(), generated, ~generated, hops=1)
    elif mode.startswith("ifr"):
        tokenwise_rows(rec, [n - 1], batched=False)


def run_cell(spec: dict) -> dict:
    """Run one benchmark cell described by `spec` (model, lengths, mode, threads) and return its timings
    and peak memory.

    Args:
        spec: The cell, as the module docstring describes it: ``n_prompt``, ``n_response`` and ``mode``, and
            optionally ``model``, ``device``, ``dtype``, ``threads``, ``seed``, ``hops``, ``target_tokens``,
            ``max_rows``, ``sample_rows``, ``warmup``, ``repeats`` and ``head_values``.

    Returns:
        The spec with the number of tokens, threads and device, the phases' wall times (``total_s`` and, by mode,
            ``forward_s``, ``record_s``, ``attribution_s`` and their runs), IFR's rows timed and whether they were
            extrapolated, and the peak resident memory (and peak GPU memory on a GPU) in bytes.
    """
    import torch

    torch.set_num_threads(spec.get("threads", 1))
    from flashtrace.engine.attribution import recursive_hops, span_aggregate, tokenwise_rows
    from flashtrace.engine.models import load_model, record_forward

    n_prompt, n_resp, mode = spec["n_prompt"], spec["n_response"], spec["mode"]
    loaded = load_model(spec.get("model", "smollm2-135m"), device=spec.get("device"), dtype=spec.get("dtype"))
    device = loaded.device
    n = n_prompt + n_resp
    gen = torch.Generator().manual_seed(spec.get("seed", 0))
    vocab = loaded.info()["vocab_size"]
    ids = torch.randint(100, max(101, vocab - 100), (n,), generator=gen)
    result = {**spec, "n_tokens": n, "threads": torch.get_num_threads(), "device": str(device)}
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    if spec.get("warmup") and mode != "forward":
        _warm_up(loaded, ids, n_prompt, mode)  # one-time kernel/JIT start-up, outside the timed phases
        sync()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    value_kernel = not spec.get("head_values")  # else form the per-head value vectors, as IFR and the authors' code do
    repeats = max(1, int(spec.get("repeats") or 1))
    n_target = int(spec.get("target_tokens") or 0)  # 0: the whole response is hop 0's target and the span G
    if mode == "forward":
        with torch.no_grad():
            loaded.model(ids[None].to(device), use_cache=False, logits_to_keep=1)  # warm-up on a GPU
            sync()
            runs = []
            for _ in range(repeats):
                start = time.perf_counter()
                loaded.model(ids[None].to(device), use_cache=False, logits_to_keep=1)
                sync()
                runs.append(time.perf_counter() - start)
        result.update(forward_s=statistics.median(runs), forward_runs=runs)
        result["total_s"] = result["forward_s"]
    elif mode == "flashtrace":
        weights, generated = flashtrace_target(n_prompt, n, n_target)
        record_runs, attribution_runs = [], []
        for _ in range(repeats):
            start = time.perf_counter()
            rec = record_forward(loaded, ids)
            sync()
            record_runs.append(time.perf_counter() - start)
            start = time.perf_counter()
            recursive_hops(lambda w: span_aggregate(rec, w, value_kernel=value_kernel).scores, weights, generated,
                           torch.arange(n) < n_prompt, hops=spec.get("hops", 1))
            sync()
            attribution_runs.append(time.perf_counter() - start)
            del rec
        result.update(record_s=statistics.median(record_runs), attribution_s=statistics.median(attribution_runs),
                      record_runs=record_runs, attribution_runs=attribution_runs)
        result["total_s"] = result["record_s"] + result["attribution_s"]
    else:
        start = time.perf_counter()
        # token-wise IFR reads each row's Y from the recorded residual stream, as IFR does (rebuilding it
        # from ᾱ, as FlashTrace's sweep does, would add work to every row of the baseline)
        rec = record_forward(loaded, ids, keep_mid=mode.startswith("ifr"))
        sync()
        result["record_s"] = time.perf_counter() - start
        targets = torch.arange(n - n_target if n_target else n_prompt, n)
        n_rows = targets.numel()
        start = time.perf_counter()
        if mode == "record":
            result["recording_bytes"] = rec.nbytes()
            result["attribution_s"] = 0.0
        elif mode == "ifr-rowwise" and spec.get("sample_rows"):
            positions = spread_positions(int(targets[0]), n_rows, spec["sample_rows"])
            tokenwise_rows(rec, positions[:1], batched=False, value_kernel=value_kernel)  # warm-up, not timed
            sync()
            row_seconds = []
            for p in positions:
                tick = time.perf_counter()
                tokenwise_rows(rec, [p], batched=False, value_kernel=value_kernel)
                sync()
                row_seconds.append(time.perf_counter() - tick)
            result.update(row_positions=positions, row_seconds=row_seconds, rows_timed=len(positions),
                          extrapolated=len(positions) < n_rows, attribution_s=extrapolate_rows(row_seconds, n_rows))
        else:
            timed = targets[: spec["max_rows"]] if spec.get("max_rows") else targets
            tokenwise_rows(rec, timed, batched=(mode == "ifr"), value_kernel=value_kernel)
            sync()
            elapsed = time.perf_counter() - start
            result["rows_timed"] = int(timed.numel())
            result["extrapolated"] = timed.numel() < targets.numel()
            result["attribution_s"] = elapsed * targets.numel() / timed.numel()
        result["total_s"] = result["record_s"] + result["attribution_s"]
    result["peak_rss_bytes"] = _peak_rss_bytes()
    if device.type == "cuda":
        result["peak_gpu_bytes"] = torch.cuda.max_memory_allocated()
    return result


if __name__ == "__main__":
    print(json.dumps(run_cell(json.loads(sys.argv[1]))), flush=True)
