"""How load_model treats a folder on its way in: a path under the home folder, a config too large for this
machine's memory (refused before any weight is read), the device asked (checked, then the model placed there),
a device map (passed on, the size check and placement left to accelerate), FlashTrace's attention set at load,
and the CPU kernels warmed before the first attribution."""

import json
import shutil

import pytest
import torch
import transformers

from flashtrace.engine.kernels import proximity
from flashtrace.engine.models import ModelLoadError, ResourceError, load_model
from flashtrace.engine.models.recording import ATTN_IMPLEMENTATION
from tests.conftest import record_calls, save_tiny_llama


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A tiny llama saved with its tokenizer, loaded by transformers with SDPA attention."""
    where = tmp_path_factory.mktemp("tiny-folder")
    save_tiny_llama(where)
    return where


def test_a_folder_under_the_home_folder_loads_by_a_path_with_a_tilde(folder, tmp_path, monkeypatch):
    shutil.copytree(folder, tmp_path / "models" / "tiny")
    monkeypatch.setenv("HOME", str(tmp_path))
    loaded = load_model("~/models/tiny", verify=False)
    assert loaded.name == "~/models/tiny" and loaded.spec.name == "llama"


def test_a_folder_loads_with_transformers_default_attention_and_keeps_it_after_a_trace(folder):
    """Issue 49 item 7: a model FlashTrace loaded kept ``ft_record`` after use where a user's model was restored; now
    it loads as ``from_pretrained`` gives it to anyone and recording switches to FlashTrace's attention and back."""
    import flashtrace

    loaded = load_model(str(folder))  # the load-time check records one forward pass
    assert loaded.model.config._attn_implementation == "sdpa" != ATTN_IMPLEMENTATION
    flashtrace.trace(loaded, "Ann has 3 balls. How many?", "Answer: 3", hops=1)
    assert loaded.model.config._attn_implementation == "sdpa" and not loaded.model.training


def test_a_folder_too_large_for_memory_is_refused_before_its_weights_are_read(folder, tmp_path, monkeypatch):
    """A config.json declaring ~1 T parameters (1,000 layers of width 4,096) beside the tiny weights: refused by
    its size, in the words of the size check, before transformers reads a weight (no shape mismatch is met)."""
    big = tmp_path / "big"
    shutil.copytree(folder, big)
    config = json.loads((big / "config.json").read_text())
    config.update(num_hidden_layers=1000, hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                  num_key_value_heads=8, head_dim=128)
    (big / "config.json").write_text(json.dumps(config))
    read = record_calls(monkeypatch, transformers.AutoModelForCausalLM, "from_pretrained")
    for dtype, named in ((None, "float32"), ("bf16", "bfloat16")):
        with pytest.raises(ResourceError) as refused:
            load_model(str(big), dtype=dtype)
        words = str(refused.value)
        assert words.startswith(f"{big} needs ~") and f" B parameters in {named}) but ~" in words, words
        assert words.endswith("refused before loading: choose a smaller model or dtype" +
                              (" (bfloat16 halves it)" if named == "float32" else ""))
    assert read == []


def test_a_device_map_goes_to_transformers_which_places_the_weights(folder, monkeypatch):
    """With a device map accelerate places (and may offload) the weights, so the size check is left to it and
    the model is not moved afterwards."""
    read = record_calls(monkeypatch, transformers.AutoModelForCausalLM, "from_pretrained")
    loaded = load_model(str(folder), device_map="cpu", verify=False)
    assert read[-1]["device_map"] == "cpu" and "attn_implementation" not in read[-1]
    assert loaded.device.type == "cpu"


def test_loading_a_cpu_model_warms_the_cpu_kernels_for_the_first_attribution(folder, monkeypatch):
    """The first attribution in a process must not pay for loading numba's kernels: load_model does it."""
    warmed = []
    monkeypatch.setattr(proximity, "warm_up", lambda: warmed.append(True))
    load_model(str(folder), verify=False)
    assert warmed == [True]
    with pytest.raises(ModelLoadError):
        load_model(str(folder / "missing"), verify=False)
    assert warmed == [True]  # a refused load warms nothing


def test_a_folder_is_checked_for_and_placed_on_the_device_asked_unless_a_device_map_places_it(folder, monkeypatch):
    from flashtrace.engine.models import loading

    devices, checked = [], []
    monkeypatch.setattr(loading, "check_device", devices.append)  # "meta" passes: shapes only, nothing computed
    monkeypatch.setattr(loading, "check_weights_fit", lambda *args: checked.append(args))
    placed = load_model(str(folder), device="meta", dtype="bf16", verify=False)
    assert {(p.device.type, p.dtype) for p in placed.model.parameters()} == {("meta", torch.bfloat16)}
    (name, _, dtype, device), = checked
    assert (name, dtype, device) == (str(folder), torch.bfloat16, "meta") and devices == ["meta"]
    mapped = load_model(str(folder), device="meta", device_map="cpu", verify=False)
    assert {p.device.type for p in mapped.model.parameters()} == {"cpu"} and len(checked) == 1
