"""Tiny GGUF files written with the `gguf` package's writer, and fake chunk distributions that carry them.

`write_tiny_gguf` writes a random-weight Qwen2 (q/k/v biases, an untied head) or Llama (tied embeddings, query and
key rows in llama.cpp's order) model of a few hundred thousand parameters, with quantized blocks (Q8_0, Q4_0, Q5_0),
float32 and float16 tensors, a byte-level BPE vocabulary and a chat template. `split_into_distributions` cuts it
into parts, each installed as pip would install a wheel (a package folder with ``data/partNN.bin`` and an
``__init__.py`` that must never run, plus its ``.dist-info`` with METADATA and RECORD), or built as a real wheel
file for pip; it returns the `BuiltinModel` entry that describes them.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from flashtrace.engine.models.builtin import QWEN_05B, BuiltinModel, Part

CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MERGES = ["Ġ t", "h e", "Ġt he", "i n", "a n"]
SENTINEL = "IMPORTED"  # what a part's __init__.py writes beside itself if anything ever imports it
HIDDEN, LAYERS, HEADS, KV_HEADS, FFN = 64, 2, 4, 2, 128


def _byte_tokens() -> list[str]:
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    return [bytes_to_unicode()[b] for b in range(256)]


def vocabulary() -> list[str]:
    """The tiny byte-level BPE vocabulary: the 256 byte symbols, one token per merge, then the special tokens."""
    return _byte_tokens() + [m.replace(" ", "") for m in MERGES] + SPECIALS


def _hf_model(arch: str, seed: int):
    from transformers import AutoConfig, AutoModelForCausalLM

    vocab = len(vocabulary())
    specials = {"bos_token_id": vocab - 3, "eos_token_id": vocab - 1, "pad_token_id": vocab - 3}
    config = AutoConfig.for_model(arch, vocab_size=vocab, hidden_size=HIDDEN, intermediate_size=FFN,
                                  num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
                                  max_position_embeddings=512, rms_norm_eps=1e-6, rope_theta=10000.0,
                                  tie_word_embeddings=arch == "llama", **specials)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name:
                p.copy_(torch.randn_like(p) * 0.1 + (1.0 if "norm" in name else 0.0))
    return model


def _llama_cpp_order(weights: np.ndarray, n_head: int) -> np.ndarray:
    """Query/key rows as llama.cpp's converter stores them for Llama (the interleaved rotary halves)."""
    return weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:]).swapaxes(1, 2) \
        .reshape(weights.shape)


def _kind(hf_name: str):
    from gguf import GGMLQuantizationType as Q

    if hf_name.endswith("bias") or "norm" in hf_name:
        return Q.F32
    if "embed_tokens" in hf_name or "lm_head" in hf_name:
        return Q.Q8_0
    if "mlp.down_proj" in hf_name:
        return Q.F16
    return Q.Q4_0 if "mlp" in hf_name else Q.Q5_0


def write_tiny_gguf(path: Path, arch: str = "qwen2", seed: int = 0):
    """Write a tiny `arch` (``qwen2`` or ``llama``) model as a GGUF file at `path`; returns the random-weight HF
    model whose weights it holds (before quantization)."""
    import gguf
    from gguf import GGMLQuantizationType as Q

    model = _hf_model(arch, seed)
    kind = gguf.MODEL_ARCH.QWEN2 if arch == "qwen2" else gguf.MODEL_ARCH.LLAMA
    names = gguf.get_tensor_name_map(kind, LAYERS)
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_name(f"Tiny {arch}")
    writer.add_block_count(LAYERS)
    writer.add_context_length(512)
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-6)
    tokens = vocabulary()
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types([1] * (len(tokens) - len(SPECIALS)) + [3] * len(SPECIALS))
    writer.add_token_merges(MERGES)
    writer.add_bos_token_id(model.config.bos_token_id)
    writer.add_eos_token_id(model.config.eos_token_id)
    writer.add_pad_token_id(model.config.pad_token_id)
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)
    for hf_name, tensor in model.state_dict().items():
        if arch == "llama" and hf_name == "lm_head.weight":
            continue  # tied to the embedding: llama.cpp writes no output tensor
        base, suffix = hf_name.rsplit(".", 1)
        values = tensor.numpy().astype(np.float32)
        if arch == "llama" and (".q_proj." in hf_name or ".k_proj." in hf_name):
            values = _llama_cpp_order(values, HEADS if ".q_proj." in hf_name else KV_HEADS)
        qtype = _kind(hf_name)
        if qtype == Q.F32:
            writer.add_tensor(f"{names.get_name(base)}.{suffix}", values)
        elif qtype == Q.F16:
            writer.add_tensor(f"{names.get_name(base)}.{suffix}", values.astype(np.float16))
        else:
            writer.add_tensor(f"{names.get_name(base)}.{suffix}", gguf.quants.quantize(values, qtype),
                              raw_shape=gguf.quants.quant_shape_to_byte_shape(values.shape, qtype), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return model


def _record_line(relative: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{relative},sha256={digest},{len(data)}"


def _files(dist: str, version: str, number: int, chunk: bytes) -> dict[str, bytes]:
    """The files of one part's wheel, by path: its package (data and a never-to-run __init__.py) and dist-info."""
    package = dist.replace("-", "_")
    sentinel = f"open(__file__ + '.{SENTINEL}', 'w').close()\nraise ImportError('a chunk package was imported')\n"
    files = {f"{package}/__init__.py": sentinel.encode(), f"{package}/data/part{number:02d}.bin": chunk}
    info = f"{package}-{version}.dist-info"
    files[f"{info}/METADATA"] = (f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n"
                                 f"Requires-Dist: flashtrace-no-such-dependency\n").encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[f"{info}/top_level.txt"] = f"{package}\n".encode()
    record = [_record_line(path, data) for path, data in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    return files


def split_into_distributions(gguf_path: Path, n_parts: int, site: Path | None = None, wheels: Path | None = None,
                             name: str = "tiny-qwen2-gguf", prefix: str = "ft-test-chunks",
                             version: str = "1.0.0") -> BuiltinModel:
    """Cut `gguf_path` into `n_parts` pieces; install each under `site` as pip would (when given) and/or write it as
    a wheel file into `wheels`. Returns the table entry describing them (size and sha256 of the whole file)."""
    data = gguf_path.read_bytes()
    bounds = np.linspace(0, len(data), n_parts + 1).astype(int)
    parts = []
    for number in range(1, n_parts + 1):
        dist = f"{prefix}-part{number}"
        files = _files(dist, version, number, data[bounds[number - 1]:bounds[number]])
        if site is not None:
            for relative, content in files.items():
                (site / relative).parent.mkdir(parents=True, exist_ok=True)
                (site / relative).write_bytes(content)
        if wheels is not None:
            wheels.mkdir(parents=True, exist_ok=True)
            with zipfile.ZipFile(wheels / f"{dist.replace('-', '_')}-{version}-py3-none-any.whl", "w") as wheel:
                for relative, content in files.items():
                    wheel.writestr(relative, content)
        parts.append(Part(dist, version, f"{dist.replace('-', '_')}/data/part{number:02d}.bin"))
    return replace(QWEN_05B, name=name, title=f"Tiny GGUF {name}", upstream="none", n_params=0, gguf_bytes=len(data),
                   sha256=hashlib.sha256(data).hexdigest(), parts=tuple(parts), source="tests", note="test model")
