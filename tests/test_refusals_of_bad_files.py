"""Issue 30, defect 14: one line and the documented exit code (2: bad input) where raw errors and exit 1
were: damaged or mismatched model folders, a non-UTF-8 --prompt, a batch --out that cannot be a folder,
and library writes in a read-only folder or racing another process."""

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from flashtrace.store.library import Library, LibraryError
from tests.bad_files import gallery_data
from tests.cli_run import run_main

CLI = [sys.executable, "-m", "flashtrace.cli"]


def run_cli(*args, timeout=300):
    return subprocess.run([*CLI, *args], capture_output=True, timeout=timeout)


def one_line_exit_2(res) -> str:
    err = res.stderr.decode("utf-8", "replace")
    assert res.returncode == 2, err
    assert err.strip().count("\n") == 0 and "internal error" not in err and "Traceback" not in err, err
    return err


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory):
    """tiny-llama saved as a local model folder (config, safetensors weights, tokenizer)."""
    from tests.conftest import _load

    folder = tmp_path_factory.mktemp("models") / "tiny"
    loaded = _load("tiny-llama")
    loaded.model.save_pretrained(folder)
    loaded.tokenizer.save_pretrained(folder)
    return folder


def copy_of(folder, tmp_path):
    import shutil

    return shutil.copytree(folder, tmp_path / "model")


def trace_with(capsys, model, *extra) -> SimpleNamespace:
    """`flashtrace trace` on `model`, run by `main` in this process (a fresh interpreter per damaged folder took
    7 s; `test_a_prompt_that_is_not_utf8` runs one as a shell does): its exit status and stderr (bytes)."""
    res = run_main(capsys, "trace", "--model", str(model), "--prompt", "Tom has 2 pens.", "--response", "Answer: 2",
                   "--no-progress", *extra)
    return SimpleNamespace(returncode=res.returncode, stderr=res.stderr.encode())


def test_truncated_safetensors_weights(model_folder, tmp_path, capsys):
    folder = copy_of(model_folder, tmp_path)
    weights = next(folder.glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes()[:1000])
    assert "cannot be read" in one_line_exit_2(trace_with(capsys, folder))


def test_safetensors_with_a_bad_header(model_folder, tmp_path, capsys):
    folder = copy_of(model_folder, tmp_path)
    next(folder.glob("*.safetensors")).write_bytes(b"\xff" * 8 + b"not a header" * 10)
    assert "cannot be read" in one_line_exit_2(trace_with(capsys, folder))


def test_a_config_that_does_not_match_the_weights(model_folder, tmp_path, capsys):
    folder = copy_of(model_folder, tmp_path)
    config = json.loads((folder / "config.json").read_text())
    config["intermediate_size"] = config["intermediate_size"] * 2
    (folder / "config.json").write_text(json.dumps(config))
    assert "do not match" in one_line_exit_2(trace_with(capsys, folder))


def test_a_folder_with_a_config_but_no_weights(model_folder, tmp_path, capsys):
    folder = copy_of(model_folder, tmp_path)
    for weights in folder.glob("*.safetensors"):
        weights.unlink()
    err = one_line_exit_2(trace_with(capsys, folder))
    assert "no weights" in err and "neither a local folder" not in err


def test_a_prompt_that_is_not_utf8():
    res = subprocess.run([*CLI, "trace", "--model", "tiny-llama", "--prompt", b"caf\xe9 au lait", "--response",
                          "Answer: 2", "--no-progress"], capture_output=True, timeout=300)
    assert "not valid UTF-8" in one_line_exit_2(res)


@pytest.mark.parametrize("kind", ["file", "read-only"])
def test_batch_out_that_cannot_be_a_folder(tmp_path, kind):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"prompt": "What is 2+3?", "response": "5."}) + "\n")
    out = tmp_path / "out"
    if kind == "file":
        out.write_text("I am a file")
    else:  # a read-only filesystem: root can write through permission bits, not through a read-only bind
        out = "/sys/flashtrace-out"
    err = one_line_exit_2(run_cli("batch", str(src), "--out", str(out), "--model", "tiny-llama", "--no-progress"))
    assert str(out) in err


def test_library_writes_in_a_read_only_folder_name_no_hidden_file(tmp_path, monkeypatch):
    lib = Library(tmp_path / "lib")
    name = lib.import_json(json.dumps(gallery_data("free-form")), name="a")

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(lib.root / ".tmp-123-abc.json"))

    monkeypatch.setattr(os, "open", refuse)
    monkeypatch.setattr(os, "link", refuse)
    monkeypatch.setattr(os, "unlink", refuse)
    for action in (lambda: lib.import_json(json.dumps(gallery_data("free-form")), name="b"),
                   lambda: lib.rename(name, "c"), lambda: lib.delete(name)):
        with pytest.raises(LibraryError) as info:
            action()
        assert ".tmp-" not in str(info.value) and "Permission denied" in str(info.value)


def test_renames_and_deletes_racing_another_process_say_so(tmp_path, monkeypatch):
    lib = Library(tmp_path / "lib")
    name = lib.import_json(json.dumps(gallery_data("free-form")), name="a")
    real_link = os.link

    def gone_first(src, dst):  # another process renames the file between our check and our link
        os.unlink(src)
        return real_link(src, dst)

    monkeypatch.setattr(os, "link", gone_first)
    with pytest.raises(LibraryError, match="no trace named 'a'"):
        lib.rename(name, "b")
    monkeypatch.undo()
    lib.import_json(json.dumps(gallery_data("free-form")), name="d")
    real_unlink = os.unlink

    def deleted_meanwhile(path, *args, **kwargs):
        real_unlink(path)
        raise FileNotFoundError(2, "No such file or directory", str(path))

    monkeypatch.setattr(os, "unlink", deleted_meanwhile)
    with pytest.raises(LibraryError, match="no trace named 'd'"):
        lib.delete("d")
