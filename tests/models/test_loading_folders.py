"""Loading from a folder, the hub probe and model objects, in the words a user reads: what a folder lacks, weights
that cannot be read, pickle files, configs that name a dtype or need code, the facts a trace stores, and the
label a model object gets."""

import json
import shutil
from types import SimpleNamespace

import pytest
import torch
import transformers

from flashtrace.engine.models import ModelLoadError, load_model, loading, wrap_model
from flashtrace.engine.models.aliases import TINY_ALIASES
from flashtrace.engine.models.loading import LoadedModel, _config_dtype, _hub_offline, _hub_reachable, default_tokenizer
from flashtrace.engine.models.tiny import build_tiny_model
from tests.conftest import record_calls, save_tiny_llama


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A tiny llama saved with its tokenizer twice: safetensors weights, and pickle (``.bin``) weights."""
    folders = {kind: tmp_path_factory.mktemp(kind) for kind in ("safetensors", "pickle")}
    model = save_tiny_llama(folders["safetensors"])
    save_tiny_llama(folders["pickle"])  # the same seed: the same weights
    (folders["pickle"] / "model.safetensors").unlink()  # transformers 5 saves safetensors only: pickle by hand
    torch.save(model.state_dict(), folders["pickle"] / "pytorch_model.bin")
    return folders, model


def _copy(saved_folder, tmp_path, keep=lambda name: True):
    folder = tmp_path / "model"
    folder.mkdir()
    for path in saved_folder.iterdir():
        if keep(path.name):
            shutil.copy(path, folder / path.name)
    return folder


def _refusal(*args, **kwargs) -> str:
    with pytest.raises(ModelLoadError) as refused:
        load_model(*args, verify=False, **kwargs)
    return str(refused.value)


# --- what a folder lacks ----------------------------------------------------------------------------------------

def test_a_folder_without_config_json_says_what_a_model_folder_holds(tmp_path):
    assert _refusal(str(tmp_path)) == (f"{tmp_path} has no config.json; a model folder needs config.json, tokenizer "
                                       "files and *.safetensors weights")


def test_a_folder_with_a_config_but_no_weights_is_refused(saved, tmp_path):
    folder = _copy(saved[0]["safetensors"], tmp_path, keep=lambda name: not name.endswith(".safetensors"))
    assert _refusal(str(folder)) == (f"{folder} has config.json but no weights: a model folder needs *.safetensors "
                                     "weight files beside it")


@pytest.mark.parametrize("weights", ["pytorch_model.bin", "model.pt"])
def test_pickle_weights_are_refused_unless_allowed(saved, tmp_path, weights):
    folder = _copy(saved[0]["pickle"], tmp_path, keep=lambda name: not name.endswith(".bin"))
    shutil.copy(saved[0]["pickle"] / "pytorch_model.bin", folder / weights)
    assert _refusal(str(folder)) == (
        f"{folder} holds only pickle weight files (.bin/.pt), which can run code when loaded; convert them to "
        "safetensors first, or pass allow_pickle=True if you trust the files")


def test_pickle_weights_load_when_allowed(saved):
    loaded = load_model(str(saved[0]["pickle"]), allow_pickle=True, verify=False)
    original = dict(saved[1].named_parameters())
    assert all(torch.equal(p, original[name]) for name, p in loaded.model.named_parameters())


def test_missing_tokenizer_files_are_named_in_one_line(saved, tmp_path):
    folder = _copy(saved[0]["safetensors"], tmp_path, keep=lambda name: not name.startswith("tokenizer"))
    with pytest.raises(ValueError) as direct:
        transformers.AutoTokenizer.from_pretrained(str(folder))
    first = str(direct.value).splitlines()[0]
    assert _refusal(str(folder)) == (f"the tokenizer in {folder} cannot be read (ValueError: {first}); a model folder "
                                     "needs its tokenizer files (tokenizer.json, tokenizer_config.json) beside "
                                     "config.json")


@pytest.mark.parametrize("local", [True, False], ids=["folder", "hub id"])
def test_files_that_cannot_be_fetched_are_named_by_their_first_line(saved, monkeypatch, local):
    def unavailable(*args, **kwargs):
        raise OSError("no file named tokenizer.json\n(the rest of transformers' explanation)")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", unavailable)
    if local:
        where = str(saved[0]["safetensors"])
        assert _refusal(where) == f"{where} cannot be loaded (OSError: no file named tokenizer.json)"
        return
    monkeypatch.setattr(loading, "_hub_reachable", lambda model_id: True)
    config = transformers.AutoConfig.from_pretrained(str(saved[0]["safetensors"]))
    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", lambda *args, **kwargs: config)
    assert _refusal("org/model") == f"{HINT} (OSError: no file named tokenizer.json)"


def test_an_error_nobody_classified_reaches_the_caller_as_it_is(saved, monkeypatch):
    """A failure while reading the model (after the tokenizer) that is neither unreadable nor mismatched weights
    is a bug to see whole, not a refusal."""
    def broken(*args, **kwargs):
        raise ValueError("something transformers did not expect")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", broken)
    with pytest.raises(ValueError, match="^something transformers did not expect$"):
        load_model(str(saved[0]["safetensors"]), verify=False)


@pytest.mark.parametrize("error, what", [
    (type("SafetensorError", (Exception,), {})("header too large"), "cannot be read"),
    (RuntimeError("Error while deserializing header: invalid JSON"), "cannot be read"),
    (OSError("unable to open the SafeTensors file"), "cannot be read"),
    (RuntimeError("size mismatch for lm_head.weight"), "do not match"),
    (ValueError("ignore_mismatched_sizes=True would skip it"), "do not match"),
    (RuntimeError("Mismatch between the checkpoint's shape and the model's"), "do not match"),
    (RuntimeError("a shape the model did not expect"), None),
    (RuntimeError("a mismatch of another kind"), None),
])
def test_weight_errors_are_told_apart_by_their_words(error, what):
    problem = loading._weights_problem("/models/m", error)
    if what is None:
        assert problem is error  # not a weights problem: re-raised as it is
    else:
        assert isinstance(problem, ModelLoadError) and f"the weights in /models/m {what}" in str(problem)


def test_a_long_unreadable_weights_message_is_cut_at_200_characters():
    problem = loading._weights_problem("/m", RuntimeError("safetensors " + "x" * 400 + "\n  end"))
    assert str(problem) == ("the weights in /m cannot be read (a truncated or damaged safetensors file?): "
                            + ("safetensors " + "x" * 400)[:200])


@pytest.mark.parametrize("error, line", [
    (OSError("first\nsecond"), "OSError: first"),
    (OSError("x" * 300), "OSError: " + "x" * 200),
    (ValueError(""), "ValueError"),
    (ValueError("  \n"), "ValueError"),
])
def test_an_error_is_named_by_its_type_and_first_line(error, line):
    assert loading._first_line(error) == line


def test_damaged_weights_are_named_as_such(saved, tmp_path):
    folder = _copy(saved[0]["safetensors"], tmp_path)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])  # truncated
    assert _refusal(str(folder)).startswith(f"the weights in {folder} cannot be read (a truncated or damaged "
                                            "safetensors file?): ")


def test_weights_that_do_not_match_the_config_are_named_as_such(saved, tmp_path):
    folder = _copy(saved[0]["safetensors"], tmp_path)
    config = json.loads((folder / "config.json").read_text())
    config["intermediate_size"] += 8
    (folder / "config.json").write_text(json.dumps(config))
    assert _refusal(str(folder)) == (f"the weights in {folder} do not match its config.json: a layer's shape differs "
                                     "(was config.json edited, or does it belong to another checkpoint?)")


def test_the_tokenizer_is_read_at_the_revision_and_with_the_code_setting_asked(saved, monkeypatch):
    seen = record_calls(monkeypatch, transformers.AutoTokenizer, "from_pretrained")
    load_model(str(saved[0]["safetensors"]), revision="main", verify=False)
    assert seen[-1] == {"trust_remote_code": False, "revision": "main"}


# --- configs ----------------------------------------------------------------------------------------------------

def test_an_unreadable_config_is_named_with_the_start_of_the_reason(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "x" * 300}))
    with pytest.raises(ValueError) as direct:
        transformers.AutoConfig.from_pretrained(str(tmp_path))
    reason = " ".join(str(direct.value).split())
    assert len(reason) > 200
    assert _refusal(str(tmp_path)) == (f"{tmp_path}/config.json cannot be read as a model config (ValueError: "
                                       f"{reason[:200]})")


def test_a_config_that_needs_its_own_code_is_read_only_when_trusted(tmp_path):
    """The folder's Python is run only with trust_remote_code: refused in words without it; with it, the config is
    read (here an unsupported family, which is then named)."""
    from flashtrace.engine.models import UnsupportedModelError

    (tmp_path / "configuration_mine.py").write_text(
        "from transformers import PretrainedConfig\n\nclass MineConfig(PretrainedConfig):\n    model_type = 'mine'\n")
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "mine",
                                                      "auto_map": {"AutoConfig": "configuration_mine.MineConfig"}}))
    assert _refusal(str(tmp_path)) == (f"{tmp_path}/config.json needs the model's own Python code; it is not run "
                                       "unless load_model(..., trust_remote_code=True) is set and you trust the folder")
    with pytest.raises(UnsupportedModelError, match="mine"):
        load_model(str(tmp_path), trust_remote_code=True, verify=False)


@pytest.mark.parametrize("config, dtype", [
    (SimpleNamespace(dtype="bfloat16"), torch.bfloat16),
    (SimpleNamespace(torch_dtype="float16"), torch.float16),  # the name older checkpoints use
    (SimpleNamespace(dtype=None, torch_dtype="bfloat16"), torch.bfloat16),
    (SimpleNamespace(dtype=torch.float16, torch_dtype="bfloat16"), torch.float16),
    (SimpleNamespace(), torch.float32),
    (SimpleNamespace(dtype="int8"), torch.float32),  # not a floating dtype: the default
])
def test_dtype_auto_reads_the_dtype_a_checkpoint_names(config, dtype):
    assert _config_dtype(config) == dtype


# --- the hub ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, offline", [("1", True), ("true", True), ("TRUE", True), ("yes", True),
                                            ("On", True), ("0", False), ("", False), ("no", False)])
def test_hf_hub_offline_is_read_as_huggingface_hub_reads_it(monkeypatch, value, offline):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "is_offline_mode", lambda: False)
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    assert _hub_offline() is offline


class _Session:
    def __init__(self, answer=True):
        self.calls, self.answer = [], answer

    def head(self, url, **kwargs):
        self.calls.append((url, kwargs))
        if not self.answer:
            raise OSError("no answer")


@pytest.fixture
def session(monkeypatch):
    import huggingface_hub

    fake = _Session()
    monkeypatch.setattr(huggingface_hub, "get_session", lambda: fake)
    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", lambda *a, **k: (_ for _ in ()).throw(OSError()))
    monkeypatch.setattr(loading, "_hub_offline", lambda: False)
    return fake


def test_a_model_in_the_local_cache_is_reachable_without_asking_the_hub(session, monkeypatch):
    def cached(model_id, local_files_only=False):
        if model_id == "org/cached" and local_files_only:
            return object()
        raise OSError("not in the cache")

    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", cached)
    assert _hub_reachable("org/cached") is True and session.calls == []


@pytest.mark.parametrize("path", ["./here", "/abs/path", "~/models/x"])
def test_a_local_path_that_does_not_exist_is_never_probed(session, path):
    assert _hub_reachable(path) is False and session.calls == []


def test_the_probe_waits_three_seconds_at_most_and_follows_no_redirect(session):
    assert _hub_reachable("org/model") is True
    (url, kwargs), = session.calls
    assert url.endswith("org/model/resolve/main/config.json") and kwargs == {"timeout": 3, "follow_redirects": False}
    session.answer = False
    assert _hub_reachable("org/model") is False


# --- names: built-in, built here, on the hub ------------------------------------------------------------------

HINT = ("'org/model' is neither a local folder nor a model available offline; use a built-in model "
        "(qwen2.5-coder-1.5b, qwen2.5-coder-0.5b, smollm2-135m), a tiny-<family> model, or a folder with config.json")


def test_the_built_in_alias_loads_its_converted_folder_under_its_alias(saved, monkeypatch):
    asked = []
    monkeypatch.setattr(loading, "_builtin_folder", lambda name, dtype: asked.append((name, dtype)) or saved[0]["safetensors"])
    loaded = load_model(verify=False)
    assert asked == [("smollm2-135m", torch.float32)]
    assert loaded.name == "smollm2-135m"
    original = dict(saved[1].named_parameters())
    assert all(torch.equal(p, original[name]) for name, p in loaded.model.named_parameters())


def test_a_tiny_model_is_built_from_its_seed_and_placed_on_the_device_asked(monkeypatch):
    devices = []
    monkeypatch.setattr(loading, "check_device", devices.append)  # "meta" passes: shapes only, nothing computed
    placed = load_model("tiny-llama", device="meta", verify=False)
    assert devices == ["meta"] and {p.device.type for p in placed.model.parameters()} == {"meta"}
    seeded = [dict(load_model("tiny-llama", seed=s, verify=False).model.named_parameters()) for s in (0, 1, 1)]
    assert any(not torch.equal(p, seeded[1][n]) for n, p in seeded[0].items())  # another seed, other weights
    assert all(torch.equal(p, seeded[2][n]) for n, p in seeded[1].items())  # the same seed, the same weights


def test_a_real_shaped_model_is_checked_and_built_as_asked(monkeypatch):
    from flashtrace.engine.models.tiny import shaped_config

    checked, devices = [], []
    monkeypatch.setattr(loading, "check_weights_fit", lambda *args: checked.append(args))
    monkeypatch.setattr(loading, "check_device", devices.append)
    loaded = load_model("random-smollm2-135m", dtype="bfloat16", device="meta", verify=False)
    assert {(p.device.type, p.dtype) for p in loaded.model.parameters()} == {("meta", torch.bfloat16)}
    (name, config, dtype, device), = checked
    assert (name, dtype, device) == ("random-smollm2-135m", torch.bfloat16, "meta") and devices == ["meta"]
    assert config.to_dict() == shaped_config("random-smollm2-135m").to_dict()
    assert loaded.name == "random-smollm2-135m" and loaded.spec.name == "llama"
    assert loaded.tokenizer.encode("Hello") == default_tokenizer().encode("Hello")


def test_an_id_the_hub_cannot_be_asked_about_is_refused_in_one_line(monkeypatch):
    probed = []
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(loading, "_hub_reachable", lambda model_id: bool(probed.append(model_id)))  # False
    assert _refusal("org/model") == HINT + " (the Hugging Face hub cannot be reached)"
    assert probed == ["org/model"]


@pytest.mark.parametrize("error", [OSError, ValueError])
def test_a_hub_config_is_asked_for_at_the_revision_and_its_failure_named(monkeypatch, error):
    asked = []

    def config(*args, **kwargs):
        asked.append((args, kwargs))
        raise error("no such model")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(loading, "_hub_reachable", lambda model_id: True)
    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", config)
    assert _refusal("org/model", revision="v1") == f"{HINT} ({error.__name__})"
    assert asked == [(("org/model",), {"trust_remote_code": False, "revision": "v1"})]


# --- the facts a trace stores -----------------------------------------------------------------------------------

class _Model(torch.nn.Module):
    """Stands in for a causal LM: a config, three decoder layers where llama keeps them, one weight."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = SimpleNamespace(layers=[0, 1, 2])
        self.weight = torch.nn.Parameter(torch.zeros(5, dtype=torch.bfloat16))


def _info(config) -> dict:
    from flashtrace.engine.models.families import spec_for_model_type

    return LoadedModel(_Model(config), None, spec_for_model_type("llama"), "m").info()


def test_model_facts_come_from_the_text_config_of_a_composite_model():
    class Composite:
        vocab_size = 7  # the outer config's own fields are not the text model's

        def get_text_config(self):
            return SimpleNamespace(num_attention_heads=8, num_key_value_heads=2, hidden_size=64, vocab_size=100)

    assert _info(Composite()) == {"name": "m", "family": "llama", "n_layers": 3, "n_heads": 8, "n_kv_heads": 2,
                                  "hidden_size": 64, "vocab_size": 100, "n_params": 5, "dtype": "bfloat16"}


def test_model_facts_read_gpt2s_names_and_count_every_head_as_its_own_kv_head():
    info = _info(SimpleNamespace(n_head=4, n_embd=32, vocab_size=50))
    assert (info["n_heads"], info["n_kv_heads"], info["hidden_size"], info["vocab_size"]) == (4, 4, 32, 50)


# --- model objects ----------------------------------------------------------------------------------------------

def test_loading_keywords_for_a_model_object_are_refused_by_name():
    tokenizer = default_tokenizer()
    model = build_tiny_model(TINY_ALIASES["tiny-llama"], tokenizer, seed=0)
    assert _refusal(model, tokenizer=tokenizer, device_map="auto", revision="main") == (
        "device_map, revision apply when loading by name or folder; this model object is already loaded (pass the "
        "model's name instead, or leave them out)")
    half = model.to(torch.bfloat16)
    assert load_model(half, tokenizer=tokenizer, verify=False).dtype == torch.bfloat16  # no dtype asked: as it is


def test_a_model_object_is_labelled_by_its_name_its_checkpoint_or_its_class():
    tokenizer = default_tokenizer()
    model = build_tiny_model(TINY_ALIASES["tiny-llama"], tokenizer, seed=0)
    model.config._name_or_path = "org/checkpoint"
    assert wrap_model(model, tokenizer, name="mine").name == "mine"
    assert wrap_model(model, tokenizer).name == "org/checkpoint"
    model.config._name_or_path = ""
    assert wrap_model(model, tokenizer).name == "LlamaForCausalLM"


def test_a_model_object_without_a_usable_tokenizer_or_config_is_refused_in_words():
    tokenizer = default_tokenizer()
    model = build_tiny_model(TINY_ALIASES["tiny-llama"], tokenizer, seed=0)
    for bad in (None, object(), SimpleNamespace(encode="not callable")):
        with pytest.raises(ModelLoadError) as refused:
            wrap_model(model, bad)
        assert str(refused.value) == "pass the model's tokenizer too: load_model(model, tokenizer=tokenizer)"
    with pytest.raises(ModelLoadError) as refused:
        wrap_model(torch.nn.Linear(2, 2), tokenizer)
    assert str(refused.value) == ("a Linear is not a transformers model (it has no .config); pass an "
                                  "AutoModelForCausalLM, or a model name or folder")
