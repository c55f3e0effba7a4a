"""The deletion curves' scoring precision (issue 28 item 1): a bfloat16 copy of a float32 model where the
processor has bfloat16 arithmetic, the model itself untouched, the choice recorded, estimated and kept apart
on resume."""

import copy
import json

import pytest
import torch

from flashtrace.cli import main
from flashtrace.engine.attribution.baselines import target_logprob
from flashtrace.engine.models import load_model
from flashtrace.engine.models import scoring
from flashtrace.evaluate.deletion import DeletionScorer
from flashtrace.evaluate.estimate import ExampleSize, example_estimate
from flashtrace.evaluate.methods import build_context
from flashtrace.evaluate.runner import run_eval
from flashtrace.evaluate.tasks import make_example

GiB = 2**30


@pytest.fixture(scope="module")
def llama():
    return load_model("tiny-llama")


@pytest.fixture
def cpu(monkeypatch):
    """A CPU with bfloat16 arithmetic and 16 GiB free unless a test says otherwise."""
    monkeypatch.setattr(scoring, "_cpu_bf16", lambda: True)
    monkeypatch.setattr(scoring, "_room", lambda device_type: 16 * GiB)
    return monkeypatch


def test_auto_scores_a_float32_model_in_bfloat16_only_where_that_is_fast_and_fits(cpu):
    assert scoring.choose("float32", "cpu", 135_000_000) == "bfloat16"
    assert scoring.choose("bfloat16", "cpu", 135_000_000) == "bfloat16"  # already bf16: the model itself
    assert scoring.choose("float16", "cpu", 135_000_000) == "float16"
    assert scoring.choose("float32", "cpu", 8 * GiB) == "float32"  # a 16 GiB copy: over a quarter of 16 GiB
    assert scoring.choose("float32", "mps", 135_000_000) == "float32"  # no known bf16 arithmetic
    cpu.setattr(scoring, "_cpu_bf16", lambda: False)
    assert scoring.choose("float32", "cpu", 135_000_000) == "float32"


def test_only_amx_counts_as_fast_bfloat16_on_a_cpu():
    """AVX-512 BF16 without AMX multiplied bfloat16 1.5-1.8x slower than float32 here: 'auto' must not pick it."""
    avx512_only = "flags\t\t: fpu sse avx2 avx512f avx512_bf16 avx512_fp16 avx_vnni"
    assert not scoring.fast_bf16_flags(avx512_only)
    assert scoring.fast_bf16_flags(avx512_only + " amx_bf16 amx_tile amx_int8")
    assert not scoring.fast_bf16_flags("flags : amx_bf16x")  # a whole flag, not a part of one


def test_named_choices_and_their_speedup(cpu):
    assert scoring.choose("float32", "cpu", 10, "model") == "float32"
    assert scoring.choose("float32", "cpu", 10, None) == "float32"
    assert scoring.choose("float32", "cpu", 10, "bf16") == "bfloat16"
    assert scoring.choose("bfloat16", "cpu", 10, "float32") == "float32"
    with pytest.raises(ValueError, match="unknown scoring precision"):
        scoring.choose("float32", "cpu", 10, "int8")
    assert scoring.speedup("float32", "cpu", "float32") == 1.0
    assert scoring.speedup("bfloat16", "cpu", "float32") == 1.0  # no copy: the model is already half precision


def test_the_speedup_on_a_cpu_is_this_machines_measured_ratio_slower_where_emulated(monkeypatch):
    """The estimate's bfloat16 factor follows the processor: 4.5x faster products with AMX, slower without."""
    from flashtrace.engine import throughput

    for bf16_rate, expected in ((9e11, 4.5), (1.2e11, 0.6)):
        rates = {"float32": 2e11, "bfloat16": bf16_rate}
        monkeypatch.setattr(throughput, "matmul_flops_per_s", lambda dtype="float32": rates[dtype])
        assert scoring.speedup("float32", "cpu", "bfloat16") == pytest.approx(expected)
    assert scoring.speedup("float32", "cuda", "bfloat16") == scoring.CUDA_SPEEDUP["bfloat16"]


def test_a_bfloat16_scorer_is_near_float32_closer_than_a_whole_bf16_copy_and_leaves_the_model_as_found(llama):
    ctx = build_context(llama, make_example("needle", 3, length=30), batch_size=4, score_dtype="model")
    params = {name: p.detach().clone() for name, p in llama.model.named_parameters()}
    masks = torch.zeros(6, ctx.positions.numel(), dtype=torch.bool)
    for row in range(1, 6):
        masks[row, : 3 * row] = True
    scorer = DeletionScorer(llama, ctx.ids, ctx.positions, ctx.replace_id, ctx.target, 4, torch.bfloat16)
    got = scorer.score(masks)
    rows = ctx.ids.repeat(6, 1)
    for row in range(1, 6):
        rows[row, ctx.positions[: 3 * row]] = ctx.replace_id
    whole = copy.deepcopy(llama.model).to(torch.bfloat16)  # everything in bfloat16, the residual stream too
    with torch.inference_mode():
        exact = target_logprob(llama.model, rows, ctx.target)
        coarse = target_logprob(whole, rows, ctx.target)
    error = (got - exact).abs()
    assert 0 < error.max() < 0.05 * exact.abs().max()  # really bfloat16, and near float32
    assert error.mean() < (coarse - exact).abs().mean()
    assert llama.dtype == torch.float32
    assert all(torch.equal(p, params[name]) for name, p in llama.model.named_parameters())
    twin = scoring.scoring_model(llama, torch.bfloat16)
    assert twin is scoring.scoring_model(llama, torch.bfloat16)  # made once
    assert scoring.scoring_model(llama, torch.float32) is llama.model
    assert twin.get_input_embeddings().weight is llama.model.get_input_embeddings().weight  # shared, not copied
    linear = twin.model.layers[0].mlp.down_proj
    assert linear.weight.dtype == torch.bfloat16 and twin.model.norm.weight.dtype == torch.float32
    assert not any(p.requires_grad for p in linear.parameters())  # a scorer builds no autograd graph


def test_records_name_their_precision_and_resume_keeps_precisions_apart(llama, tmp_path):
    example = [("needle-0001", make_example("needle", 1, length=30))]
    seen = []
    run_eval(llama, example, ["attention"], tmp_path, k=4, score_dtype="model")
    record = json.loads((tmp_path / "examples" / "needle-0001.json").read_text())
    assert record["score_dtype"] == "float32"
    run_eval(llama, example, ["attention"], tmp_path, k=4, score_dtype="bfloat16",
             on_example=lambda ex_id, rec: seen.append(rec))
    assert seen[-1] and seen[-1]["score_dtype"] == "bfloat16"  # recomputed, not merged into float32 curves
    run_eval(llama, example, ["attention"], tmp_path, k=4, score_dtype="bfloat16",
             on_example=lambda ex_id, rec: seen.append(rec))
    assert seen[-1] == {}  # the same precision: kept


def test_the_estimate_counts_the_faster_scoring():
    size = ExampleSize(n_tokens=300, n_target=3, n_generated=60, n_prompt=200)
    info = {"n_layers": 30, "n_heads": 9, "n_kv_heads": 3, "hidden_size": 576, "vocab_size": 49152,
            "n_params": 134_515_008, "dtype": "float32", "name": "m", "family": "llama"}
    from flashtrace.analysis.schema import ModelInfo

    model = ModelInfo(**info)
    plain = example_estimate(model, size, ["attention", "ifr"], k=20, recorded=True)
    faster = example_estimate(model, size, ["attention", "ifr"], k=20, recorded=True, score_speedup=4.0)
    # products 4x faster speed up 70 % of the body's time; the attention (scores, weighted sums) stays float32
    body, attention = 2 * (134_515_008 - 49152 * 576) * 300, 2 * 30 * 9 * 64 * 300 ** 2
    share = (body * (0.7 / 4 + 0.3) + attention) / (body + attention)
    for name in ("attention", "ifr"):
        assert faster["methods"][name][0] == plain["methods"][name][0]  # attribution unchanged
        assert faster["methods"][name][1] == pytest.approx(plain["methods"][name][1] * share)


def test_eval_records_the_precision_in_its_settings(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["eval", "--model", "tiny-llama", "--task", "needle", "--n", "1", "--length", "30", "--k", "3",
                 "--methods", "attention", "--score-dtype", "model", "--out", str(out), "--no-plots",
                 "--no-progress"])
    assert code == 0
    assert json.loads((out / "settings.json").read_text())["score_dtype"] == "float32"
    assert json.loads((out / "examples" / "needle-0000.json").read_text())["score_dtype"] == "float32"


def test_eval_prompts_default_to_100_tokens_and_0_asks_for_the_task_default():
    import argparse

    from flashtrace.cli.commands import eval as eval_command

    parser = argparse.ArgumentParser()
    eval_command.add_arguments(parser)
    args = parser.parse_args(["--task", "needle", "--n", "1", "--out", "x"])
    assert args.length == eval_command.EVAL_LENGTH == 100
    (_, short), = eval_command._examples(args)
    args.length = 0
    (_, default), = eval_command._examples(args)
    assert short.prompt == make_example("needle", 0, length=100).prompt
    assert default.prompt == make_example("needle", 0).prompt and len(default.prompt) > 2 * len(short.prompt)


def test_on_ray_auto_is_decided_as_here_so_ray_and_serial_runs_agree(cpu):
    from argparse import Namespace

    from flashtrace.cli.commands.eval import _score_dtype_name

    def name(**kw):
        args = Namespace(ray="auto", dtype=None, score_dtype="auto", num_gpus_per_worker=0)
        vars(args).update(kw)
        return _score_dtype_name(args, None)

    assert name() == "bfloat16"
    assert name(dtype="bf16") == "bfloat16" and name(dtype="float16") == "float16"
    assert name(score_dtype="model") == "float32" and name(score_dtype="float32") == "float32"
    assert name(dtype="auto") == "auto"  # only the worker knows the checkpoint's dtype
    cpu.setattr(scoring, "_cpu_bf16", lambda: False)
    assert name() == "float32"


def test_auto_copies_only_up_to_a_quarter_of_the_room_and_reads_any_spelling_of_the_dtype(cpu):
    quarter = 16 * GiB // 4 // 2  # parameters whose bfloat16 copy is exactly a quarter of 16 GiB
    assert scoring.choose("float32", "cpu", quarter) == "bfloat16"
    assert scoring.choose("float32", "cpu", quarter + 1) == "float32"
    assert scoring.choose("torch.float32", "cpu", 10) == "bfloat16"  # str(torch.float32)
    assert scoring.choose("fp32", "cpu", 10) == "bfloat16" and scoring.choose("fp16", "cpu", 10, "model") == "float16"
    assert scoring.choose("float32", "cpu", 10, "") == "float32"  # no choice: the model's own
    assert scoring.choose("float32", "cpu", 10, "fp16") == "float16"
    with pytest.raises(ValueError) as refused:
        scoring.choose("float32", "cpu", 10, "int8")
    assert str(refused.value) == "unknown scoring precision 'int8'; use one of auto, model, float32, bfloat16, float16"
    cpu.setattr(scoring, "native_bf16", lambda device_type: True)
    cpu.setattr(scoring, "_room", lambda device_type: {"cpu": 16 * GiB, "cuda": 1 * GiB}[device_type])
    assert scoring.choose("float32", "cuda", 2**28) == "float32"  # fits the CPU's room, not the GPU's it runs on


def test_which_devices_multiply_bfloat16_fast(monkeypatch):
    monkeypatch.setattr(scoring, "_cpu_bf16", lambda: True)
    assert scoring.native_bf16("cpu") and not scoring.native_bf16("mps")
    monkeypatch.setattr(scoring, "_cpu_bf16", lambda: False)
    assert not scoring.native_bf16("cpu")
    for supported in (True, False):
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: supported)
        assert scoring.native_bf16("cuda") is supported


def test_the_room_for_a_copy_is_what_the_device_has_free(monkeypatch):
    import types

    import psutil

    monkeypatch.setattr(psutil, "virtual_memory", lambda: types.SimpleNamespace(available=7 * GiB))
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (3 * GiB, 80 * GiB))
    assert scoring._room("cpu") == 7 * GiB and scoring._room("cuda") == 3 * GiB


def test_a_gpus_speedup_is_the_table_for_half_precision_and_none_otherwise():
    assert scoring.speedup("float32", "cuda", "float16") == scoring.CUDA_SPEEDUP["float16"] > 1
    assert scoring.speedup("float32", "cuda", "float64") == 1.0
    assert scoring.speedup("float16", "cuda", "bfloat16") == 1.0  # the model is half precision already


def test_a_loaded_models_scoring_dtype(llama, cpu):
    assert scoring.score_dtype(llama, torch.float16) is torch.float16  # a dtype asked for is used as it is
    assert scoring.score_dtype(llama) is torch.bfloat16
    assert scoring.score_dtype(llama, "model") is torch.float32
    n = sum(p.numel() for p in llama.model.parameters())
    cpu.setattr(scoring, "_room", lambda device_type: 8 * n - 1)  # the copy (2 bytes each) over a quarter
    assert scoring.score_dtype(llama) is torch.float32
    assert scoring.dtype_name(torch.bfloat16) == "bfloat16"
