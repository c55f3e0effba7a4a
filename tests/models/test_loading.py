"""Loading models (`engine.models.loading`): unsupported families and unknown models refused in words, built-in names and folders loaded."""

import json
import os
import socket
import sys
from pathlib import Path

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM

import flashtrace
from flashtrace.engine.models import ModelLoadError, UnsupportedModelError, load_model, spec_for, supported_families


def test_unsupported_family_is_refused_with_the_supported_list(tmp_path):
    config = AutoConfig.for_model("bloom", vocab_size=100, hidden_size=32, n_layer=1, n_head=4)
    model = AutoModelForCausalLM.from_config(config)
    with pytest.raises(UnsupportedModelError) as err:
        spec_for(model)
    msg = str(err.value)
    assert "bloom" in msg and "\n" not in msg
    for family in ("llama", "qwen2", "gemma3", "gpt2"):
        assert family in msg
    model.save_pretrained(tmp_path)
    with pytest.raises(UnsupportedModelError):
        load_model(str(tmp_path))


def test_unknown_model_offline_names_the_builtin_alias_without_trying_the_network(monkeypatch):
    """Offline, the hub is not probed (a probe of an unreachable hub waits for its timeout); libraries below
    may try their own requests, which fail at once here."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    callers = []

    def no_network(*args, **kwargs):
        callers.append(sys._getframe(1).f_code.co_filename)
        raise OSError("no network in this test")

    for name in ("getaddrinfo", "create_connection"):
        monkeypatch.setattr(socket, name, no_network)
    for name in ("connect", "connect_ex"):
        monkeypatch.setattr(socket.socket, name, no_network)
    with pytest.raises(ModelLoadError) as err:
        load_model("no-such-org/no-such-model")
    package = str(Path(flashtrace.__file__).parent) + os.sep
    assert not [c for c in callers if c.startswith(package)], callers
    assert "smollm2-135m" in str(err.value) and "\n" not in str(err.value)


def test_pickle_only_folder_is_refused(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    (tmp_path / "pytorch_model.bin").write_bytes(b"not really")
    with pytest.raises(ModelLoadError, match="pickle"):
        load_model(str(tmp_path))


def test_supported_families_cover_the_product_list():
    assert {"llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3", "gpt2"} <= set(supported_families())


def test_tiny_models_are_small_and_deterministic(tiny):
    info = tiny.info()
    assert 1e6 < info["n_params"] < 1e7
    again = load_model(tiny.name)
    for (n1, p1), (_, p2) in zip(tiny.model.named_parameters(), again.model.named_parameters()):
        assert torch.equal(p1, p2), n1


@pytest.mark.slow
def test_default_model_loads_and_answers(smollm):
    info = smollm.info()
    assert (info["family"], info["n_layers"], info["n_heads"], info["n_kv_heads"]) == ("llama", 30, 9, 3)
    tok = smollm.tokenizer
    ids = tok.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                                  add_generation_prompt=True, return_tensors="pt", return_dict=True)["input_ids"]
    out = smollm.model.generate(ids, max_new_tokens=12, do_sample=False)
    assert "Paris" in tok.decode(out[0, ids.shape[1]:])


def test_a_loaded_model_prints_as_one_short_line_naming_what_it_is(tiny_llama):
    text = repr(tiny_llama)
    assert len(text) <= 200 and "\n" not in text, text
    assert text.startswith(f"LoadedModel({tiny_llama.name!r}, family={tiny_llama.spec.name!r}, ")
    assert "float32" in text and "cpu" in text and "Linear" not in text  # no module tree, no tokenizer dump
