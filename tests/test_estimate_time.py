"""Issue 13 item 12 (library side): the time estimate covers the whole run (load, warm-up, forward, hops,
step sweep, bookkeeping, the machine's load) and is given as a range. Whether runs fall in their range is a
timing, measured by benchmarks/estimate_accuracy.py on an idle machine, not asserted here."""

import pytest
import torch

from flashtrace.engine import estimate as est
from flashtrace.engine.estimate import cpu_slowdown, estimate, thread_wait_s



def test_the_estimate_adds_load_warm_up_steps_and_bookkeeping(tiny_llama):
    base = estimate(tiny_llama, 300, 1, warm=True, slowdown=1.0)
    assert base.load_s == base.warmup_s == base.steps_s == 0 and base.overhead_s > 0
    full = estimate(tiny_llama, 300, 1, load=True, warm=False, steps=True, slowdown=1.0)
    assert full.load_s > 0 and full.warmup_s > 0 and full.steps_s > 0
    assert full.seconds == pytest.approx(base.seconds + full.load_s + full.warmup_s + full.steps_s)
    assert full.range() == pytest.approx((full.seconds / 2, full.seconds * 2))
    busy = estimate(tiny_llama, 300, 1, warm=True, slowdown=3.0)
    assert busy.seconds == pytest.approx(3 * base.seconds)
    assert "to" in full.describe() and "load" in full.describe() and "warm-up" in full.describe()


def test_machine_load_scales_the_estimate():
    assert cpu_slowdown(load=1.0, cores=2) == 1.0
    assert cpu_slowdown(load=8.0, cores=2) == pytest.approx(4 ** 0.75)
    assert thread_wait_s(30, threads=1, load=15, cores=2) == 0
    assert thread_wait_s(30, threads=2, load=1.5, cores=2) == 0
    assert thread_wait_s(30, threads=2, load=15, cores=2) > 20  # measured ~30 s on 2 busy cores


# A model as a saved trace describes it (`Trace.model`): no weights needed to estimate its runs.
INFO = {"n_layers": 6, "n_heads": 8, "n_kv_heads": 2, "hidden_size": 256, "vocab_size": 1000, "n_params": 3_000_000,
        "dtype": "float32"}


@pytest.fixture
def reference(monkeypatch):
    """The reference machine, idle, with 4 cores."""
    monkeypatch.setenv("FLASHTRACE_MACHINE_SPEED", "1")
    monkeypatch.setattr(est.os, "cpu_count", lambda: 4)


def _alpha_s(n, rows):  # the attention rows a sweep over `rows` target rows rebuilds (head_dim 32)
    return 6 * 8 * rows * (n - rows / 2) * (2 * 32 + 8) / est.ALPHA_FLOPS_PER_S


def test_each_part_of_a_cpu_estimate_follows_the_cost_model(reference):
    n, m, g, hops = 400, 100, 60, 2
    e = estimate(INFO, n, hops, n_target=m, n_recursive=g, threads=2, steps=True, load=True, warm=False, slowdown=1.0)
    body = 3_000_000 - 1000 * 256
    forward = (2 * body * n + 2 * 6 * 8 * 32 * n * n) / est.FORWARD_FLOPS_PER_S
    assert e.forward_s == pytest.approx(forward / 2 ** 0.7)  # 2 threads: 2 ** 0.7 times one
    prox = 6 * 8 * n * 4 * 32 / est.PROX_VALUE_FLOPS_PER_S  # per sweep, from the values
    sweeps = [_alpha_s(n, m) + prox] + [_alpha_s(n, g) + prox] * hops
    assert e.attribution_s == pytest.approx(sum(sweeps) / 2)  # 2 layers side by side
    assert e.steps_s == pytest.approx(_alpha_s(n, g) / 2)
    assert e.load_s == pytest.approx(est.LOAD_BASE_S + 3_000_000 * 4 / est.LOAD_BYTES_PER_S)
    assert e.warmup_s == est.WARMUP_S
    assert e.overhead_s == pytest.approx(est.RUN_OVERHEAD_S + est.PER_TOKEN_OVERHEAD_S * n * (hops + 1))
    assert (e.n_tokens, e.n_target, e.hops, e.slowdown) == (n, m, hops, 1.0)
    assert e.recording_bytes == 6 * n * (256 + 8 * 32 + 2 * 2 * 32) * 4  # x_prev, q, k, v of every layer
    assert e.resident_bytes == est.BASE_PROCESS_BYTES  # nothing loaded yet


def test_the_target_defaults_to_the_last_half_and_the_hops_to_the_target(reference):
    e = estimate(INFO, 401, 1, threads=1, warm=True, slowdown=1.0, steps=True)
    assert e.n_target == 200
    assert e.steps_s == pytest.approx(_alpha_s(401, 200))
    assert estimate(INFO, 1, 1, threads=1, warm=True, slowdown=1.0).n_target == 1


def test_a_busy_machine_scales_every_part_and_adds_the_threads_waiting(reference, monkeypatch):
    idle = estimate(INFO, 300, 1, threads=2, load=True, warm=False, steps=True, slowdown=1.0)
    busy = estimate(INFO, 300, 1, threads=2, load=True, warm=False, steps=True, slowdown=2.0)
    for part in ("forward_s", "attribution_s", "steps_s", "load_s", "warmup_s", "overhead_s"):
        assert getattr(busy, part) == pytest.approx(2 * getattr(idle, part)), part
    monkeypatch.setattr(est, "_load_average", lambda: 16.0)  # 4 per core
    now = estimate(INFO, 300, 1, threads=2, warm=True)
    assert now.slowdown == pytest.approx(4 ** 0.75)
    waiting = est.THREAD_WAIT_S * 6 * 4 * 1
    assert now.overhead_s == pytest.approx(idle.overhead_s * 4 ** 0.75 + waiting)
    assert thread_wait_s(6, threads=3) == pytest.approx(2 * waiting)


def test_a_gpu_estimate_counts_the_head_values_and_its_own_speed(reference):
    n = 300
    e = estimate(INFO, n, 1, device="cuda:0", threads=1, warm=True)
    assert e.slowdown == 1.0  # the CPU's load does not slow a GPU
    prox = 6 * 8 * n * 256 * (2 * 32 + 6) / est.PROX_FLOPS_PER_S
    assert e.attribution_s == pytest.approx(2 * (_alpha_s(n, 150) + prox) / est.GPU_SPEEDUP)
    assert e.overhead_s == pytest.approx(est.RUN_OVERHEAD_S + est.PER_TOKEN_OVERHEAD_S * n * 2)
    forward_transient = n * (3 * 1024 + 6 * 256) * 4 + 1000 * 4  # MLP width 4 x hidden when not given
    attribution_transient = 4 * (3 * 128 * 8 * n + 3 * 8 * n + 8 * 256 * 256 * 2)
    assert e.peak_bytes == int(est.BASE_PROCESS_BYTES + 3_000_000 * 4 + e.recording_bytes
                               + max(forward_transient, attribution_transient))


def test_half_precision_models_keep_half_the_bytes(reference):
    full = estimate(INFO, 300, 1, threads=1, load=True, warm=True, slowdown=1.0)
    half = estimate({**INFO, "dtype": "bfloat16"}, 300, 1, threads=1, load=True, warm=True, slowdown=1.0)
    assert half.recording_bytes * 2 == full.recording_bytes
    assert half.load_s == pytest.approx(est.LOAD_BASE_S + 3_000_000 * 2 / est.LOAD_BYTES_PER_S)


def test_the_description_gives_the_range_the_parts_and_the_peak():
    e = est.Estimate(n_tokens=100, n_target=50, hops=1, forward_s=1.0, attribution_s=2.0, recording_bytes=0,
                     peak_bytes=3 * 2**30, steps_s=1.0)
    assert e.describe() == "2.0 s to 8.0 s (forward 1.0 s, attribution 3.0 s), peak memory ~3.0 GiB for 100 tokens"
    long = est.Estimate(n_tokens=9, n_target=5, hops=1, forward_s=30.0, attribution_s=0.0, recording_bytes=0,
                        peak_bytes=2**29, load_s=20.0, warmup_s=10.0)
    assert long.describe() == ("30.0 s to 2.0 min (load 20.0 s, warm-up 10.0 s, forward 30.0 s, attribution 0.0 s), "
                               "peak memory ~0.5 GiB for 9 tokens")
    assert est.Estimate(1, 1, 1, 0.0, 0.0, 0, peak_bytes=10, resident_bytes=25).run_bytes == 0
    assert est.Estimate(1, 1, 1, 0.0, 0.0, 0, peak_bytes=40, resident_bytes=25).run_bytes == 15


def test_the_shape_is_read_from_any_family_config():
    from transformers import GPT2Config, LlamaConfig

    gpt2 = est.shape_of(GPT2Config(n_embd=64, n_head=4, n_layer=3, vocab_size=500))
    assert (gpt2.n_layers, gpt2.n_heads, gpt2.n_kv_heads, gpt2.head_dim, gpt2.hidden, gpt2.intermediate,
            gpt2.vocab, gpt2.n_params, gpt2.dtype_bytes) == (3, 4, 4, 16, 64, 256, 500, 0, 4)
    llama = est.shape_of(LlamaConfig(hidden_size=96, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                                     intermediate_size=200, num_hidden_layers=5, vocab_size=700))
    assert (llama.n_layers, llama.n_heads, llama.n_kv_heads, llama.head_dim, llama.hidden, llama.intermediate,
            llama.vocab) == (5, 4, 2, 32, 96, 200, 700)


def test_a_loaded_model_counts_its_weights_as_resident(tiny_llama):
    shape = est.shape_of(tiny_llama)
    weights = sum(p.numel() for p in tiny_llama.model.parameters()) * 4
    assert shape.n_params * shape.dtype_bytes == weights
    assert estimate(tiny_llama, 50, warm=True, slowdown=1.0).resident_bytes == est.BASE_PROCESS_BYTES + weights
    assert estimate(tiny_llama, 50, warm=True, slowdown=1.0, load=True).resident_bytes == est.BASE_PROCESS_BYTES


def test_the_refusal_says_how_many_tokens_would_fit(reference, monkeypatch):
    budget = estimate(INFO, 1000, 1, threads=1, warm=True, slowdown=1.0).run_bytes
    assert est.max_tokens_fitting(INFO, budget) == 1000
    assert est.max_tokens_fitting(INFO, budget - 1) == 999
    with pytest.raises(est.ResourceError, match=r"^5000 tokens need ~[\d.]+ GiB but ~[\d.]+ GiB is available; "
                                                r"at most ~1000 tokens would fit$"):
        est.check_fits(INFO, 5000, budget_bytes=budget, threads=1, warm=True, slowdown=1.0)
    need = estimate(INFO, 700, 1, threads=1, warm=True, slowdown=1.0).run_bytes
    monkeypatch.setattr(est, "available_bytes", lambda: int(need / 0.9) + 10)  # 90 % of what is free is the budget
    assert est.check_fits(INFO, 700, threads=1, warm=True, slowdown=1.0).run_bytes == need
    monkeypatch.setattr(est, "available_bytes", lambda: need)
    with pytest.raises(est.ResourceError):
        est.check_fits(INFO, 700, threads=1, warm=True, slowdown=1.0)


def test_scoring_and_generation_follow_the_cost_model():
    speed = est.Speed(forward=2.0, slow=1.5, threads=1)
    body, attention = 2 * (3_000_000 - 1000 * 256) * 100, 2 * 6 * 8 * 32 * 100 * 100
    assert est.forward_flops(est.shape_of(INFO), 100) == body + attention
    one = (body + attention) / est.SCORE_FLOPS_PER_S / 2.0
    assert est.scoring_seconds(INFO, 100, 3, speed) == pytest.approx(3 * one)
    share = est.MATMUL_SHARE
    faster = (body * (share / 4 + 1 - share) + attention) / est.SCORE_FLOPS_PER_S / 2.0
    assert est.scoring_seconds(INFO, 100, 1, speed, matmul_speedup=4.0) == pytest.approx(faster)
    step = (3_000_000 * 4 / est.DECODE_BYTES_PER_S
            + (2 * 3_000_000 + 4 * 6 * 8 * 32 * (100 + 20 / 2)) / est.SCORE_FLOPS_PER_S) / 2.0
    expected = one + 20 * (step + est.DECODE_LAYER_OVERHEAD_S * 6 * 1.5)
    assert est.generation_seconds(INFO, 100, 20, speed) == pytest.approx(expected)


def test_the_speed_now_counts_threads_machine_and_load(reference, monkeypatch):
    assert est.speed_of(threads=2, slowdown=2.0) == est.Speed(forward=2 ** 0.7 / 2.0, slow=2.0, threads=2)
    assert est.speed_of(threads=8, slowdown=1.0).forward == pytest.approx(4 ** 0.7)  # at most the 4 cores
    assert est.speed_of("cuda", threads=1) == est.Speed(forward=est.GPU_SPEEDUP, slow=1.0, threads=1)
    monkeypatch.setattr(est, "_load_average", lambda: 12.0)
    assert est.speed_of(threads=1).slow == pytest.approx(3 ** 0.75)


def test_configs_with_gpt2s_names_or_a_text_part_give_the_same_shape():
    from types import SimpleNamespace as NS

    gpt2_names = NS(n_embd=96, n_head=4, n_layer=5, n_inner=200, vocab_size=700)
    plain = est.shape_of(NS(config=gpt2_names))
    assert (plain.n_layers, plain.n_heads, plain.n_kv_heads, plain.head_dim, plain.hidden, plain.intermediate,
            plain.vocab, plain.n_params, plain.dtype_bytes) == (5, 4, 4, 24, 96, 200, 700, 0, 4)
    odd = est.shape_of(NS(config=NS(n_embd=100, n_head=3, n_layer=2, vocab_size=50)))  # no inner size given
    assert (odd.head_dim, odd.intermediate) == (33, 400)  # whole dimensions: 100 // 3, and 4 x the width
    multimodal = NS(get_text_config=lambda: gpt2_names, vision_config=NS(hidden_size=1))
    assert est.shape_of(NS(config=multimodal)) == plain


def test_a_loaded_half_precision_model_counts_two_bytes_a_weight():
    from types import SimpleNamespace as NS

    layer = torch.nn.Linear(4, 3).to(torch.bfloat16)  # 15 weights
    layer.config = NS(hidden_size=8, num_attention_heads=2, num_hidden_layers=1, vocab_size=10)
    shape = est.shape_of(NS(model=layer))
    assert (shape.n_params, shape.dtype_bytes) == (15, 2)


def test_the_fit_search_stops_at_nothing_and_at_its_cap():
    assert est.max_tokens_fitting(INFO, 0) == 0  # not even one token fits
    assert est.max_tokens_fitting(INFO, 10 ** 18) == 1 << 22  # 4,194,304 tokens: the longest it looks for


def test_check_fits_returns_the_estimate_asked_for_and_accepts_an_exact_fit(reference):
    kwargs = dict(threads=1, warm=True, slowdown=1.0)
    asked = estimate(INFO, 700, 1, 10, **kwargs)
    assert est.check_fits(INFO, 700, n_target=10, budget_bytes=asked.run_bytes, **kwargs) == asked  # exactly fits
    assert est.check_fits(INFO, 700, budget_bytes=asked.run_bytes, **kwargs) == estimate(INFO, 700, 1, **kwargs)
    with pytest.raises(est.ResourceError) as refused:
        est.check_fits(INFO, 700, budget_bytes=asked.run_bytes - 1, **kwargs)
    assert str(refused.value).startswith("700 tokens need ~")
    budget = 3 * 2 ** 30
    n = est.max_tokens_fitting(INFO, budget) + 1000  # needs a little over 3 GiB
    need = estimate(INFO, n, 1, **kwargs).run_bytes / 2 ** 30
    with pytest.raises(est.ResourceError) as refused:
        est.check_fits(INFO, n, budget_bytes=budget, **kwargs)
    assert 3.0 < need < 4.0
    assert str(refused.value).startswith(f"{n} tokens need ~{need:.1f} GiB but ~3.0 GiB is available; at most ~")


def test_an_embedding_heavy_model_counts_half_its_parameters_as_the_body():
    """A model whose embedding is most of its parameters (a small body, a large vocabulary): the matrix products
    per token are those of at least half the parameters, not of the small remainder."""
    heavy = est.shape_of({**INFO, "vocab_size": 10_000})  # 2.56 M of the 3 M parameters embed tokens
    assert est.forward_flops(heavy, 100) == 2 * 1_500_000 * 100 + 2 * 6 * 8 * 32 * 100 * 100


def test_long_durations_read_in_minutes():
    e = est.Estimate(n_tokens=9, n_target=5, hops=1, forward_s=300.0, attribution_s=0.0, recording_bytes=0,
                     peak_bytes=2**30)
    assert e.describe().startswith("2.5 min to 10.0 min (forward 5.0 min, attribution 0.0 s)")


def test_the_machine_load_is_the_one_minute_average(monkeypatch):
    monkeypatch.setattr(est.os, "getloadavg", lambda: (8.0, 1.0, 1.0))  # busy this minute, idle before
    assert cpu_slowdown(cores=2) == pytest.approx(4 ** 0.75)

    def unavailable():
        raise OSError("no load average here")

    monkeypatch.setattr(est.os, "getloadavg", unavailable)
    assert cpu_slowdown(cores=2) == 1.0


def test_without_a_core_count_one_core_is_assumed(monkeypatch):
    monkeypatch.setenv("FLASHTRACE_MACHINE_SPEED", "1")
    monkeypatch.setattr(est.os, "cpu_count", lambda: None)
    assert cpu_slowdown(load=4.0) == pytest.approx(4 ** 0.75)
    assert thread_wait_s(30, threads=2, load=4.0) == pytest.approx(est.THREAD_WAIT_S * 30 * 4)
    assert est.speed_of(threads=4, slowdown=1.0).forward == 1.0


def test_threads_wait_only_when_the_load_exceeds_the_cores():
    assert thread_wait_s(30, threads=2, load=2.0, cores=2) == 0
    assert thread_wait_s(30, threads=2, load=2.5, cores=2) == pytest.approx(est.THREAD_WAIT_S * 30 * 1.25)


def test_the_warm_up_is_counted_until_this_process_has_run_a_forward_pass(reference, monkeypatch):
    from flashtrace.engine.models import recording

    for passes, warmup in ((0, est.WARMUP_S), (1, 0.0), (5, 0.0)):
        monkeypatch.setattr(recording, "forward_passes", lambda n=passes: n)
        assert estimate(INFO, 300, threads=1, slowdown=1.0).warmup_s == warmup, passes


def test_one_hop_by_default(reference):
    e = estimate(INFO, 300, threads=1, warm=True, slowdown=1.0)
    assert e.hops == 1
    assert e.attribution_s == pytest.approx(estimate(INFO, 300, 1, threads=1, warm=True, slowdown=1.0).attribution_s)


def test_float16_and_bfloat16_models_keep_two_bytes_a_value_and_whole_head_sizes():
    for dtype in ("float16", "bfloat16"):
        assert est.shape_of({**INFO, "dtype": dtype}).dtype_bytes == 2
    odd = est.shape_of({**INFO, "hidden_size": 100, "n_heads": 3})
    assert (odd.head_dim, odd.intermediate) == (33, 400)  # 100 // 3, and an MLP four times the width
    assert est.shape_of(INFO).intermediate == 1024


def test_a_gpu_spreads_the_sweeps_like_its_forward_pass(reference):
    """On a GPU the span sweeps speed up with threads as the forward pass does (no layers side by side)."""
    n = 300
    e = estimate(INFO, n, 1, device="cuda", threads=2, warm=True)
    prox = 6 * 8 * n * 256 * (2 * 32 + 6) / est.PROX_FLOPS_PER_S
    assert e.attribution_s == pytest.approx(2 * (_alpha_s(n, 150) + prox) / (est.GPU_SPEEDUP * 2 ** 0.7))


# One head and a large vocabulary: a forward pass's activations and logits outweigh the attribution's buffers.
WIDE = {"n_layers": 2, "n_heads": 1, "n_kv_heads": 1, "hidden_size": 256, "vocab_size": 50_000, "n_params": 3_000_000,
        "dtype": "float32"}
# Many small heads over a long sequence: the CPU's layers side by side hold the most.
NARROW = {"n_layers": 6, "n_heads": 8, "n_kv_heads": 8, "hidden_size": 64, "vocab_size": 1000, "n_params": 500_000,
          "dtype": "float32"}


def test_the_peak_is_the_forward_pass_when_its_activations_are_largest(reference):
    n = 300
    e = estimate(WIDE, n, 1, device="cuda", threads=1, warm=True)
    recording = 2 * n * (256 + 256 + 2 * 256) * 4
    forward = n * (3 * 1024 + 6 * 256) * 4 + 50_000 * 4  # MLP activations, and one row of logits
    assert forward > 4 * (3 * 128 * n + 3 * n + 256 * 256 * 2)  # the attribution's buffers, one head
    assert e.peak_bytes == int(est.BASE_PROCESS_BYTES + 3_000_000 * 4 + recording + forward)


def test_the_peak_counts_the_cpu_layers_side_by_side_within_the_sweep_budget(reference):
    from flashtrace.engine.attribution.span import DEFAULT_BUDGET
    from flashtrace.engine.models.attention import LSE_BLOCK

    n = 20_500
    layer = 4 * 8 * n * (LSE_BLOCK + 3)  # one layer's logits block, ᾱ and proximities, one span
    assert DEFAULT_BUDGET // layer == 6  # the budget holds 6 such layers (5 of a two-span sweep's)
    recording = 6 * n * (64 + 64 + 2 * 64) * 4
    rows = 4 * (3 * 128 * 8 * n + 3 * 8 * n + 8 * 256 * 64 * 2)  # the row blocks a GPU sweep holds
    cpu = estimate(NARROW, n, 1, threads=6, warm=True, slowdown=1.0)
    assert cpu.peak_bytes == int(est.BASE_PROCESS_BYTES + 500_000 * 4 + recording + 6 * layer)  # 6 threads, 6 layers
    gpu = estimate(NARROW, n, 1, device="cuda", threads=6, warm=True)
    assert 6 * layer > rows and gpu.peak_bytes == int(est.BASE_PROCESS_BYTES + 500_000 * 4 + recording + rows)


def test_the_refusal_caps_what_would_fit_at_the_context_and_names_a_fit_without_one():
    """A loaded model's refusal offers at most its context (more tokens than it reads cannot help); a config
    that names no context gives the memory's fit alone."""
    from types import SimpleNamespace as NS

    layer = torch.nn.Linear(4, 3)
    layer.config = NS(hidden_size=64, num_attention_heads=4, num_hidden_layers=2, vocab_size=100)
    model = NS(model=layer)
    budget = estimate(model, 2000, threads=1, warm=True, slowdown=1.0).run_bytes
    kwargs = dict(budget_bytes=budget, threads=1, warm=True, slowdown=1.0)
    with pytest.raises(est.ResourceError, match=r"at most ~2000 tokens would fit$"):
        est.check_fits(model, 10_000, **kwargs)
    layer.config.max_position_embeddings = 512
    with pytest.raises(est.ResourceError, match=r"at most ~512 tokens would fit$"):
        est.check_fits(model, 10_000, **kwargs)


def test_a_busy_cpu_does_not_slow_a_gpu_estimate(reference, monkeypatch):
    monkeypatch.setattr(est, "_load_average", lambda: 16.0)  # 4 per core
    assert estimate(INFO, 300, 1, device="cuda", threads=1, warm=True).slowdown == 1.0
    assert estimate(INFO, 300, 1, threads=1, warm=True).slowdown == pytest.approx(4 ** 0.75)
    assert est.speed_of("cuda", threads=1).slow == 1.0
