"""Cost estimate before a run: predicted seconds and peak memory of a trace from the model's shape.

The model counts work (floating-point operations and bytes touched) and divides by throughputs
calibrated on the reference machine (2 CPU cores, SmolLM2-135M, float32, 1 torch thread), scaled on a CPU by
how fast this machine multiplies matrices against that one (`throughput.machine_speed`, measured once).
Memory is counted exactly from what is kept: the weights, the recording (linear in N) and the
largest transient buffers. The CLI and the app call `check_fits` to warn before a long run and to
refuse one that would not fit in memory.

The time covers the whole run as a user waits for it: loading the model (when it is not loaded yet),
the one-time warm-up of a process's first forward pass and attribution, the forward pass, the hops,
the step sweep (``steps``) and the bookkeeping (segments, the `Trace`). On a CPU it is scaled by how
busy the machine is (1-minute load average against the cores), and several torch threads on an
oversubscribed machine add the time they wait on each other (both factors were measured on a shared
2-core machine at load 10-20, where short SmolLM2 runs took 0.8-1.25× the estimate with 1 thread and
0.4-1.5× with 2). `Estimate.range` is the interval shown to users.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .models.memory import ResourceError, available_bytes  # noqa: F401 - re-exported: the CLI and app use them
from .throughput import machine_speed

if TYPE_CHECKING:
    from typing import Any

    from .inputs.chat import Prompt
    from .models.loading import LoadedModel

# Calibrated on the reference machine (SmolLM2-135M, float32, 1 torch thread); see the module docstring.
FORWARD_FLOPS_PER_S = 6.0e10
ALPHA_FLOPS_PER_S = 5.5e10  # attention rows rebuilt per hop: q·k products plus the one-pass exp and weighted sum
PROX_FLOPS_PER_S = 3.0e10  # proximities on GPUs: per (head, source) a value projection and an L1 distance
PROX_VALUE_FLOPS_PER_S = 2.0e9  # proximities on the CPU from values (no projection): ~4·d_v per (head, source)
BASE_PROCESS_BYTES = 0.40 * 2**30  # python + torch + transformers, before the model
GPU_SPEEDUP = 40.0  # rough factor for CUDA devices (uncalibrated; shown as such)
WARMUP_S = 0.3  # a process's first forward pass and attribution (allocator, kernels, lazy imports)
LOAD_BASE_S = 0.3  # reading a model's config and tokenizer, building the module
LOAD_BYTES_PER_S = 1.5e9  # reading safetensors weights
RUN_OVERHEAD_S = 0.25  # tokenising, the chat template, segments, building and validating the Trace
# (benchmarks/estimate_accuracy.py, idle: a 66-token trace took 0.44 s where 0.005 s predicted 0.16 s)
PER_TOKEN_OVERHEAD_S = 2e-5
THREAD_WAIT_S = 0.13  # per layer and unit of load per core, per extra thread, on an oversubscribed CPU
SCORE_FLOPS_PER_S = 7.0e10  # forward passes that only score: no recording, no autograd, batched
DECODE_BYTES_PER_S = 2.0e10  # a generation step reads every weight once
DECODE_LAYER_OVERHEAD_S = 1.6e-3  # per layer per generation step: kernel launches, the key/value cache, Python
# (estimate_accuracy, idle: 64 new tokens ran 2.2-3.1 s longer than 4e-4 predicted, at 113 to 2,039 tokens)
# of a float32 scoring pass's body, the share a bfloat16 copy's matrix products speed up (the rest: norms,
# activations, casts): score_precision, idle, 2 threads, 294 tokens: the copy scored 2.29× faster where products ran
# 5.6× faster (one thread, `throughput.matmul_speedup`)
MATMUL_SHARE = 0.7
RANGE_FACTOR = 2.0  # `Estimate.range`: the prediction divided and multiplied by this



@dataclass(frozen=True)
class Shape:
    """The sizes of a model that the cost estimate needs: layers, heads, KV heads, head and hidden
    sizes, MLP width, vocabulary, parameter count and bytes per value."""
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    hidden: int
    intermediate: int
    vocab: int
    n_params: int
    dtype_bytes: int = 4


@dataclass(frozen=True)
class Estimate:
    """The estimated cost of one trace: seconds per part (load, warm-up, forward, attribution, steps,
    overhead, already scaled by `slowdown`) and the recording's and the peak's bytes."""
    n_tokens: int
    n_target: int
    hops: int
    forward_s: float
    attribution_s: float
    recording_bytes: int
    peak_bytes: int
    load_s: float = 0.0  # loading the model (0 when it is already loaded)
    warmup_s: float = 0.0  # the process's first run (0 once a forward pass has run)
    steps_s: float = 0.0  # the step-level sweep (hop graph data)
    overhead_s: float = 0.0  # tokenising, segments, the Trace; threads waiting on a busy CPU
    slowdown: float = 1.0  # machine-load factor already applied to every part
    resident_bytes: int = 0  # of peak_bytes, what is in memory already: the process, and a loaded model's weights

    @property
    def run_bytes(self) -> int:
        """What the run still has to allocate: the peak less what is already resident (compared with the memory
        still available, which no longer counts the resident part)."""
        return max(self.peak_bytes - self.resident_bytes, 0)

    @property
    def seconds(self) -> float:
        """The estimated total time in seconds (every part added)."""
        return self.load_s + self.warmup_s + self.forward_s + self.attribution_s + self.steps_s + self.overhead_s

    def range(self) -> tuple[float, float]:
        """``(low, high)`` seconds: the run is expected to take between the two (the prediction ÷/× 2).

        Returns:
            ``(low, high)``: the estimated total seconds divided and multiplied by `RANGE_FACTOR`.
        """
        return self.seconds / RANGE_FACTOR, self.seconds * RANGE_FACTOR

    def describe(self) -> str:
        """The estimate in one line: its range, the parts, and the peak memory.

        Returns:
            The line, e.g. ``"2.0 s to 8.0 s (forward 1.5 s, attribution 2.5 s), peak memory ~1.2 GiB for 300
            tokens"`` (load and warm-up listed first when they count).
        """
        lo, hi = self.range()
        parts = [f"forward {_fmt_s(self.forward_s)}", f"attribution {_fmt_s(self.attribution_s + self.steps_s)}"]
        parts = ([f"load {_fmt_s(self.load_s)}"] if self.load_s else []) + (
            [f"warm-up {_fmt_s(self.warmup_s)}"] if self.warmup_s else []) + parts
        return (f"{_fmt_s(lo)} to {_fmt_s(hi)} ({', '.join(parts)}), peak memory ~{self.peak_bytes / 2**30:.1f} GiB "
                f"for {self.n_tokens} tokens")


def _fmt_s(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _first(cfg, *names, default=None):
    """The first of `names` that `cfg` sets (not None), else `default`."""
    for name in names:
        value = getattr(cfg, name, None)
        if value is not None:
            return value
    return default


def _shape_from_config(model, config) -> Shape:
    cfg = config.get_text_config() if hasattr(config, "get_text_config") else config
    hidden = _first(cfg, "hidden_size", "n_embd")
    heads = _first(cfg, "num_attention_heads", "n_head")
    loaded = hasattr(model, "model")
    return Shape(
        n_layers=_first(cfg, "num_hidden_layers", "n_layer"), n_heads=heads,
        n_kv_heads=_first(cfg, "num_key_value_heads", default=heads),
        head_dim=_first(cfg, "head_dim", default=hidden // heads), hidden=hidden,
        intermediate=_first(cfg, "intermediate_size", "n_inner", default=4 * hidden), vocab=cfg.vocab_size,
        n_params=sum(p.numel() for p in model.model.parameters()) if loaded else 0,
        dtype_bytes=next(model.model.parameters()).element_size() if loaded else 4)


def shape_of(model: Any) -> Shape:
    """`Shape` from a `LoadedModel`, a transformers config, or a `Trace.model` / info dict.

    Args:
        model: A `LoadedModel`, a transformers config, a `Trace.model` (the model facts a trace stores, with
            ``model_dump``) or the dict `LoadedModel.info` gives.

    Returns:
        The sizes the cost estimate needs (the parameter count and bytes per value are 0 and 4 for a bare
        config).
    """
    config = getattr(getattr(model, "model", None), "config", None) or getattr(model, "config", None)
    if config is None and hasattr(model, "get_text_config"):  # a transformers config itself
        config = model
    if config is not None:
        return _shape_from_config(model, config)
    info = model if isinstance(model, dict) else model.model_dump()
    hidden, heads = info["hidden_size"], info["n_heads"]
    dtype_bytes = 2 if info.get("dtype") in ("bfloat16", "float16") else 4
    return Shape(n_layers=info["n_layers"], n_heads=heads, n_kv_heads=info["n_kv_heads"], head_dim=hidden // heads,
                 hidden=hidden, intermediate=4 * hidden, vocab=info["vocab_size"], n_params=info["n_params"],
                 dtype_bytes=dtype_bytes)


def cpu_slowdown(load: float | None = None, cores: int | None = None) -> float:
    """How much slower than on an idle machine a CPU run goes now: the 1-minute load average per core,
    to the power 0.75 (measured with 1 torch thread at load 10-15 on 2 cores).

    Args:
        load: The 1-minute load average (default: the machine's now).
        cores: The number of cores (default: the machine's).

    Returns:
        The factor, at least 1.
    """
    cores = cores or os.cpu_count() or 1
    load = _load_average() if load is None else load
    return max(1.0, load / cores) ** 0.75


def thread_wait_s(n_layers: int, threads: int, load: float | None = None, cores: int | None = None) -> float:
    """Seconds torch's threads spend waiting on each other when the machine is oversubscribed (more
    runnable work than cores): about constant per run, not per token (measured on 2 cores with 2 threads:
    ~20 s at load 11, ~30 s at load 15 for the 30 layers of SmolLM2, against ~1-3 s with 1 thread).

    Args:
        n_layers: The model's layers.
        threads: The torch threads the run uses.
        load: The 1-minute load average (default: the machine's now).
        cores: The number of cores (default: the machine's).

    Returns:
        The seconds; 0 with one thread or when the load does not exceed the cores.
    """
    cores = cores or os.cpu_count() or 1
    load = _load_average() if load is None else load
    if threads <= 1 or load <= cores:
        return 0.0
    return THREAD_WAIT_S * n_layers * (load / cores) * (threads - 1)


def _load_average() -> float:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def _warm() -> bool:
    from .models.recording import forward_passes

    return forward_passes() > 0


def _attribution_seconds(s: Shape, n: int, rows_per_sweep: list[int], gpu: bool, speed: float) -> float:
    """Seconds of the span sweeps that attribute `rows_per_sweep` target rows each (hop 0, then each hop)."""
    total = 0.0
    for rows in rows_per_sweep:
        visible = n - rows / 2  # rows sit at the end: each sees the prompt plus half the rows on average
        alpha = s.n_layers * s.n_heads * rows * visible * (2 * s.head_dim + 8)
        if gpu:
            prox_s = s.n_layers * s.n_heads * n * s.hidden * (2 * s.head_dim + 6) / PROX_FLOPS_PER_S
        else:
            prox_s = s.n_layers * s.n_heads * n * 4 * s.head_dim / PROX_VALUE_FLOPS_PER_S
        total += (alpha / ALPHA_FLOPS_PER_S + prox_s) / speed
    return total


def _peak_bytes(s: Shape, n: int, gpu: bool, threads: int, rows: int = 1) -> tuple[int, int]:
    """``(recording, peak)`` bytes: what the recording keeps, and the process's predicted peak (`rows` sequences
    side by side in the forward pass, each with its key/value cache, when more than one)."""
    per_token = s.hidden + s.n_heads * s.head_dim + 2 * s.n_kv_heads * s.head_dim  # x_prev, q, k, v
    recording = s.n_layers * n * per_token * s.dtype_bytes
    forward_transient = n * (3 * s.intermediate + 6 * s.hidden) * 4 + s.vocab * 4
    if rows > 1:
        forward_transient = rows * (forward_transient + s.n_layers * n * 2 * s.n_kv_heads * s.head_dim * s.dtype_bytes)
    block = min(128, n)
    attribution_transient = 4 * (3 * block * s.n_heads * n + 3 * s.n_heads * n + s.n_heads * 256 * s.hidden * 2)
    if not gpu:  # layers side by side, one per thread, as many as the sweep's memory budget holds
        from .attribution.span import DEFAULT_BUDGET, layer_bytes, layer_workers

        workers = layer_workers(s.n_heads, 1, n, DEFAULT_BUDGET, s.n_layers, threads)
        attribution_transient = max(attribution_transient, workers * layer_bytes(s.n_heads, 1, n))
    peak = (BASE_PROCESS_BYTES + s.n_params * s.dtype_bytes + recording
            + max(forward_transient, attribution_transient))
    return int(recording), int(peak)


def _optional_parts(s: Shape, slow: float, load: bool, warm: bool | None, steps_s: float) -> dict[str, float]:
    """The parts a run pays only sometimes: loading the model, the process's first run, the step sweep."""
    warm = _warm() if warm is None else warm
    return {"load_s": (LOAD_BASE_S + s.n_params * s.dtype_bytes / LOAD_BYTES_PER_S) * slow if load else 0.0,
            "warmup_s": 0.0 if warm else WARMUP_S * slow, "steps_s": steps_s}


def _speeds(threads: int, gpu: bool, slow: float, n_layers: int) -> tuple[float, float]:
    """``(forward, attribution)``: how many times faster than the reference machine's one thread a forward pass
    and the span sweeps run with `threads` (a GPU, this CPU's `machine_speed`, the load factor `slow`)."""
    cores = min(threads, os.cpu_count() or 1)
    machine = GPU_SPEEDUP if gpu else machine_speed()
    speed = cores ** 0.7 * machine / slow
    # on a CPU, layers run side by side, one per thread (span_aggregate's layer_threads): 2 threads measured 2.1× one
    return speed, speed if gpu else min(cores, n_layers) * machine / slow


def estimate(model: Any, n_tokens: int, hops: int = 1, n_target: int | None = None, n_recursive: int | None = None,
             device: str = "cpu", threads: int | None = None, steps: bool = False, load: bool = False,
             warm: bool | None = None, slowdown: float | None = None, rows: int = 1) -> Estimate:
    """Predict a FlashTrace run over `n_tokens` with a target of `n_target` tokens (default: the last half)
    and `hops` hops over `n_recursive` generated tokens (default: the target); with `steps`, the step
    sweep; with `load`, loading the model first.

    Args:
        model: What `shape_of` takes: a `LoadedModel`, a transformers config, a `Trace.model` or an info dict.
        n_tokens: The tokens of the sequence.
        hops: The hops after hop 0.
        n_target: The target's tokens (default: the last half of the sequence).
        n_recursive: The generated tokens the hops run over (default: the target).
        device: Where the run goes (``"cpu"``, or a ``"cuda..."`` device).
        threads: The torch threads (default: torch's now).
        steps: Whether the step sweep runs too.
        load: Whether the model is loaded first.
        warm: Whether the process's warm-up is already paid, which drops it (default: whether this process has run a
            forward pass).
        slowdown: The factor every part is scaled by (default: `cpu_slowdown` now, 1 on a GPU).
        rows: Sequences run side by side (the interventions' scoring batches, sampled continuations): the peak
            counts the forward's buffers and a key/value cache once per row (the seconds are those of one row).

    Returns:
        The predicted seconds of each part and the recording's, the peak's and the resident bytes.
    """
    s = shape_of(model)
    n = int(n_tokens)
    m = int(n_target if n_target is not None else max(1, n // 2))
    g = int(n_recursive if n_recursive is not None else m)
    threads = threads or _torch_threads()
    gpu = str(device).startswith("cuda")
    slow = slowdown if slowdown is not None else (1.0 if gpu else cpu_slowdown())
    speed, attr_speed = _speeds(threads, gpu, slow, s.n_layers)
    step_flops = s.n_layers * s.n_heads * g * (n - g / 2) * (2 * s.head_dim + 8)
    overhead_s = (RUN_OVERHEAD_S + PER_TOKEN_OVERHEAD_S * n * (hops + 1)) * slow
    if not gpu and slowdown is None:
        overhead_s += thread_wait_s(s.n_layers, threads)
    recording, peak = _peak_bytes(s, n, gpu, threads, max(int(rows), 1))
    return Estimate(n_tokens=n, n_target=m, hops=hops, forward_s=forward_flops(s, n) / FORWARD_FLOPS_PER_S / speed,
                    attribution_s=_attribution_seconds(s, n, [m] + [g] * hops, gpu, attr_speed),
                    recording_bytes=recording, peak_bytes=peak, overhead_s=overhead_s, slowdown=slow,
                    resident_bytes=BASE_PROCESS_BYTES + (s.n_params * s.dtype_bytes if hasattr(model, "model") and not load
                                                         else 0),
                    **_optional_parts(s, slow, load, warm, step_flops / ALPHA_FLOPS_PER_S / attr_speed if steps else 0.0))


@dataclass(frozen=True)
class Speed:
    """How fast a run goes against the reference machine: `forward` divides forward-pass FLOPs (threads, a
    GPU, the machine's load), `slow` is the load factor alone, `threads` torch's threads."""

    forward: float
    slow: float
    threads: int


def speed_of(device: str = "cpu", threads: int | None = None, slowdown: float | None = None) -> Speed:
    """The `Speed` of a run now, as `estimate` reckons it (`slowdown` default: `cpu_slowdown` now, 1 on a GPU).

    Args:
        device: Where the run goes (``"cpu"``, or a ``"cuda..."`` device).
        threads: The torch threads (default: torch's now).
        slowdown: The load factor (default: `cpu_slowdown` now, 1 on a GPU).

    Returns:
        The run's speed against the reference machine.
    """
    threads = threads or _torch_threads()
    gpu = str(device).startswith("cuda")
    slow = slowdown if slowdown is not None else (1.0 if gpu else cpu_slowdown())
    return Speed(_speeds(threads, gpu, slow, 1)[0], slow, threads)


def _flops_parts(s: Shape, n_tokens: float) -> tuple[float, float]:
    """``(body, attention)`` FLOPs of one forward pass over `n_tokens`: the matrix products of the weights, and
    the attention's scores and weighted sums."""
    body_params = max(s.n_params - s.vocab * s.hidden, s.n_params // 2)
    return 2 * body_params * n_tokens, 2 * s.n_layers * s.n_heads * s.head_dim * n_tokens * n_tokens


def forward_flops(s: Shape, n_tokens: float) -> float:
    """FLOPs of one forward pass over `n_tokens`: the body's matrix products and the attention.

    Args:
        s: The model's sizes.
        n_tokens: The tokens of the pass.

    Returns:
        The floating-point operations.
    """
    return sum(_flops_parts(s, n_tokens))


def scoring_seconds(model: Any, n_tokens: int, n_sequences: float, speed: Speed | None = None,
                    matmul_speedup: float = 1.0) -> float:
    """`n_sequences` forward passes over `n_tokens` that only score (no recording, no autograd, batched), as
    deletion curves, segment ablation and IG run them.

    Args:
        model: What `shape_of` takes: a `LoadedModel`, a transformers config, a `Trace.model` or an info dict.
        n_tokens: The tokens of each sequence.
        n_sequences: How many forward passes.
        speed: The run's speed (default: `speed_of` now).
        matmul_speedup: How much faster the scoring copy's matrix products are than float32 (`scoring.speedup`),
            which speeds up `MATMUL_SHARE` of the body's time (the attention and the rest stay in float32).

    Returns:
        The predicted seconds.
    """
    body, attention = _flops_parts(shape_of(model), n_tokens)
    body *= MATMUL_SHARE / max(matmul_speedup, 1e-3) + 1 - MATMUL_SHARE
    return n_sequences * (body + attention) / SCORE_FLOPS_PER_S / (speed or speed_of()).forward


def generation_step_seconds(model: Any, n_context: float, speed: Speed | None = None) -> float:
    """One greedy generation step after `n_context` tokens: every weight read once, attention over what is there,
    a fixed cost per layer.

    Args:
        model: What `shape_of` takes: a `LoadedModel`, a transformers config, a `Trace.model` or an info dict.
        n_context: The tokens before the generated one.
        speed: The run's speed (default: `speed_of` now).

    Returns:
        The predicted seconds of the step.
    """
    s, speed = shape_of(model), speed or speed_of()
    step_flops = 2 * s.n_params + 4 * s.n_layers * s.n_heads * s.head_dim * n_context
    step = (s.n_params * s.dtype_bytes / DECODE_BYTES_PER_S + step_flops / SCORE_FLOPS_PER_S) / speed.forward
    return step + DECODE_LAYER_OVERHEAD_S * s.n_layers * speed.slow


def generation_seconds(model: Any, n_prompt: int, n_new: int, speed: Speed | None = None) -> float:
    """Greedy generation of `n_new` tokens after `n_prompt`: the prompt's forward pass, then one step per new
    token (`generation_step_seconds` at the middle of the new tokens: its attention term is linear).

    Args:
        model: What `shape_of` takes: a `LoadedModel`, a transformers config, a `Trace.model` or an info dict.
        n_prompt: The prompt's tokens.
        n_new: The tokens generated.
        speed: The run's speed (default: `speed_of` now).

    Returns:
        The predicted seconds.
    """
    speed = speed or speed_of()
    return (scoring_seconds(model, n_prompt, 1, speed)
            + n_new * generation_step_seconds(model, n_prompt + n_new / 2, speed))


def generation_note(loaded: LoadedModel, prompt: Prompt, max_new_tokens: int, chat_template: bool = True,
                    reasoning_instruction: bool = False) -> str:
    """One line before generating, as the Trace page and the command line show it: how long up to
    `max_new_tokens` new tokens should take, as a range.

    Args:
        loaded: The model and its tokenizer.
        prompt: The prompt: a string, or a chat-messages list.
        max_new_tokens: The most tokens generated.
        chat_template: Whether the prompt is wrapped in the model's chat template.
        reasoning_instruction: Whether the reasoning instruction is added to the prompt.

    Returns:
        The line, naming the prompt's tokens and the predicted time.

    Raises:
        InputError: When the prompt plus `max_new_tokens` would not fit the model's context (a ValueError).
    """
    from ..base.units import time_range
    from .models.generation import generation_ids

    _, ids = generation_ids(loaded, prompt, max_new_tokens, chat_template, reasoning_instruction)
    seconds = generation_seconds(loaded, len(ids), max_new_tokens)
    took = time_range(seconds / RANGE_FACTOR, seconds * RANGE_FACTOR)
    return (f"Generating up to {max_new_tokens:,} tokens after a {len(ids):,}-token prompt: "
            f"{'' if took.startswith('under') else 'about '}{took} (less if the model stops sooner).")


def max_tokens_fitting(model: Any, budget_bytes: int, hops: int = 1, rows: int = 1) -> int:
    """The longest sequence whose predicted allocation beyond what is resident (`Estimate.run_bytes`) stays
    within `budget_bytes` (binary search).

    Args:
        model: What `shape_of` takes: a `LoadedModel`, a transformers config, a `Trace.model` or an info dict.
        budget_bytes: The memory the run may allocate.
        hops: The hops after hop 0.
        rows: Sequences run side by side.

    Returns:
        The number of tokens (0 when none fit).
    """
    lo, hi = 0, 1 << 22
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate(model, mid, hops, threads=1, warm=True, slowdown=1.0, rows=rows).run_bytes <= budget_bytes:
            lo = mid
        else:
            hi = mid - 1
    return lo


def check_fits(model: Any, n_tokens: int, hops: int = 1, n_target: int | None = None,
               budget_bytes: int | None = None, **kwargs: Any) -> Estimate:
    """The estimate, or `ResourceError` when what the run still has to allocate (`Estimate.run_bytes`: the
    peak less the process and the loaded weights, which are resident already) exceeds the memory available
    (90 % of `available_bytes`, which counts what is free now: the resident part is counted once).

    Args:
        model: What `shape_of` takes: a `LoadedModel`, a transformers config, a `Trace.model` or an info dict.
        n_tokens: The tokens of the sequence.
        hops: The hops after hop 0.
        n_target: The target's tokens (default: the last half of the sequence).
        budget_bytes: The memory the run may allocate (default: 90 % of `available_bytes`).
        **kwargs: More of `estimate`'s arguments (`n_recursive`, `device`, `rows`, ...).

    Returns:
        The estimate, when the run fits.

    Raises:
        ResourceError: When the run would not fit; the message says how many tokens would.
    """
    est = estimate(model, n_tokens, hops, n_target, **kwargs)
    budget = budget_bytes if budget_bytes is not None else int(available_bytes() * 0.9)
    if est.run_bytes > budget:
        rows = kwargs.get("rows", 1)
        fit = max_tokens_fitting(model, budget, hops, rows)
        context = _context(model)
        fit = min(fit, context) if context else fit
        size = f"{n_tokens} tokens" if rows <= 1 else f"{rows} sequences of {n_tokens} tokens side by side"
        raise ResourceError(f"{size} need ~{est.run_bytes / 2**30:.1f} GiB but ~{budget / 2**30:.1f} GiB is available; "
                            f"at most ~{fit} tokens would fit" + ("" if rows <= 1 else f" in {rows} sequences (or "
                                                                     "use fewer side by side: a smaller batch)"))
    return est


def check_run(loaded: LoadedModel, n_tokens: int, *, new_tokens: int = 0, hops: int = 0, n_target: int | None = None,
              n_recursive: int | None = None, rows: int = 1, steps: bool = False, memory: bool = True,
              what: str = "the sequence", advice: str = "shorten the prompt or response") -> Estimate:
    """The one check every command that runs a model makes before its first forward pass (issue 48 item 5):
    ``trace`` and the API's ``prepare`` (so ``batch``, ``eval`` and ``gallery`` too), ``intervene`` in every mode
    (the standard set, resampling, a removal or replacement, re-generating, re-tracing) and the app's Run, Re-run
    and step influence.

    - **context**: the longest sequence the run holds, `n_tokens` plus the `new_tokens` it may generate, against
      the model's context (`InputError` naming `what` and the `advice`);
    - **memory** (unless `memory` is False): what the run still has to allocate for `rows` sequences side by side
      (with `hops`, `n_target`, `n_recursive`, `steps` as `estimate` takes them) against the memory available
      (`ResourceError`, `check_fits`).

    Args:
        loaded: The model and its tokenizer.
        n_tokens: The tokens of the sequence the run starts from.
        new_tokens: The tokens it may generate.
        hops: The hops after hop 0.
        n_target: The target's tokens (default: the last half of the sequence).
        n_recursive: The generated tokens the hops run over (default: the target).
        rows: Sequences run side by side.
        steps: Whether the step sweep runs too.
        memory: Whether the memory is checked (else only the context).
        what: What the sequence is, in words, for the error message.
        advice: What to do when it is too long, for the error message.

    Returns:
        The estimate, for the caller to show.

    Raises:
        InputError: When the sequence and its new tokens exceed the model's context.
        ResourceError: When the run would not fit in memory (with `memory`).
    """
    from .models.generation import check_context

    check_context(loaded, n_tokens, new_tokens, what, advice)
    total = int(n_tokens) + int(new_tokens)
    size = dict(n_target=n_target, n_recursive=n_recursive, steps=steps, rows=rows, device=str(loaded.device))
    return check_fits(loaded, total, hops, **size) if memory else estimate(loaded, total, hops, **size)


def _context(model) -> int | None:
    """The model's context in tokens when `model` is a loaded model (None otherwise)."""
    if not hasattr(model, "model"):
        return None
    from .models.generation import context_length

    value = context_length(model)
    return int(value) if value else None
