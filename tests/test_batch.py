"""`flashtrace batch` without Ray: one validated trace per line, bad lines recorded, resumable."""

import json

import pytest

from flashtrace.run import batch as batch_mod
from flashtrace.run.batch import BatchSettings, run_batch
from flashtrace.cli import main
from flashtrace.store.library import Library
from flashtrace.store.index import LibraryIndex

from .batch_helpers import PROMPTS, traces, write_input

BAD = ['{"prompt": "x", "respons": "y"}', "not json", '{"prompt": "Why?", "generate": true, "response": "no"}',
       '{"prompt": "Hi", "response": "Hello.", "hops": 9}', '["a list"]', '{"prompt": "Hi"}']


def test_batch_writes_validated_traces_and_records_bad_lines(tmp_path, capsys):
    src = write_input(tmp_path / "in.jsonl", n=3, extra_lines=BAD)
    out = tmp_path / "out"
    code = main(["batch", str(src), "--out", str(out), "--model", "tiny-llama", "--no-progress"])
    assert code == 1  # bad lines make the run exit non-zero, but every good line is traced
    found = traces(out)
    assert len(found) == 3
    # each trace is its own line: title, line number, hops and prompt as written there
    assert sorted((t.title, t.extra["batch"]["line"], t.settings.hops, t.prompt) for t in found.values()) == [
        (f"ex{i}", i + 1, i % 3, PROMPTS[i]) for i in range(3)]
    assert LibraryIndex(out).sync() == 0  # the driver indexed what it wrote: the Library need not reread it
    assert [e.name for e in Library(out).entries() if not e.readable] == []  # the folder is a library collection
    summary = json.loads((out / "_batch" / "summary.json").read_text())
    assert summary["counts"]["done"] == 3 and summary["counts"]["bad_lines"] == len(BAD)
    errors = [json.loads(line) for line in (out / "_batch" / "errors.jsonl").read_text().splitlines()]
    by_line = {e["line"]: e["error"] for e in errors}
    assert "unknown field" in by_line[4] and "not valid JSON" in by_line[5] and "not both" in by_line[6]
    assert "less than or equal to 8" in by_line[7] and "JSON object" in by_line[8] and "no response" in by_line[9]
    err = capsys.readouterr().err
    assert f"{src}:5: not valid JSON" in err


def test_batch_checks_settings_before_work(tmp_path, monkeypatch):
    src = write_input(tmp_path / "in.jsonl", n=2)
    loads = []
    monkeypatch.setattr(batch_mod.TraceWorker, "__init__", lambda self, *a, **k: loads.append(1))
    with pytest.raises(ValueError, match="hops must be between"):
        run_batch(src, tmp_path / "o", BatchSettings(model="tiny-llama", hops=12))
    with pytest.raises(ValueError, match="target"):
        run_batch(src, tmp_path / "o", BatchSettings(model="tiny-llama", target="middle"))
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "bert"}')
    with pytest.raises(ValueError, match="bert"):
        run_batch(src, tmp_path / "o", BatchSettings(model=str(folder)))
    assert loads == [] and not (tmp_path / "o").exists()
    assert main(["batch", str(src), "--out", str(tmp_path / "o"), "--workers", "2"]) == 2  # needs --ray
    assert main(["batch", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o")]) == 2


def test_interrupted_batch_resumes_without_recomputing(tmp_path, monkeypatch):
    src = write_input(tmp_path / "in.jsonl", n=5)
    out = tmp_path / "out"
    calls = []
    original = batch_mod.TraceWorker.__call__

    def counted(self, job):
        calls.append(job["title"])
        return original(self, job)

    monkeypatch.setattr(batch_mod.TraceWorker, "__call__", counted)

    def interrupt_after_two(rec):
        if sum(r == "done" for r in seen) >= 1 and rec["status"] == "done":
            raise KeyboardInterrupt
        seen.append(rec["status"])

    seen = []
    settings = BatchSettings(model="tiny-llama")
    with pytest.raises(KeyboardInterrupt):
        run_batch(src, out, settings, on_record=interrupt_after_two)
    assert len(traces(out)) == 2 and len(calls) == 2
    stamps = {p.name: p.stat().st_mtime_ns for p in out.glob("*.json")}
    calls.clear()
    first = sorted(t.title for t in traces(out).values())
    result = run_batch(src, out, BatchSettings(model="tiny-llama"))
    assert sorted(calls) == sorted({f"ex{i}" for i in range(5)} - set(first))  # only the unfinished ones ran again
    assert result.count("skipped") == 2 and result.count("done") == 3 and result.ok
    assert len(traces(out)) == 5
    assert all((out / n).stat().st_mtime_ns == t for n, t in stamps.items())  # finished files untouched
    calls.clear()
    changed = run_batch(src, out, BatchSettings(model="tiny-llama", hop0="generation"))  # other settings: new keys
    assert len(calls) == 5 and changed.count("done") == 5 and len(traces(out)) == 10


def test_batch_without_ray_never_imports_ray(tmp_path):
    """A plain run (here into a collection of the app's library) never imports Ray."""
    import os
    import subprocess
    import sys

    src = write_input(tmp_path / "in.jsonl", n=1)
    code = ("import sys; from flashtrace.cli import main; rc = main(['batch', sys.argv[1], '--collection', 'my batch', "
            "'--model', 'tiny-llama', '--no-progress']); print('RAY', 'ray' in sys.modules); sys.exit(rc)")
    env = {**os.environ, "FLASHTRACE_LIBRARY": str(tmp_path / "lib")}
    done = subprocess.run([sys.executable, "-c", code, str(src)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert "RAY False" in done.stdout and "1 traced" in done.stdout
    root = Library(tmp_path / "lib")
    assert root.collections() == ["my-batch"]  # the name is sanitised, as trace names are
    assert [e.title for e in root.collection("my-batch").entries()] == ["ex0"]


@pytest.mark.parametrize("command", ["batch", "eval"])
def test_ray_asked_for_without_ray_is_refused_before_anything_loads_or_is_written(command, tmp_path, monkeypatch,
                                                                                     capsys):
    import importlib.util

    from flashtrace.cli import main
    from flashtrace.engine.models import loading

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    monkeypatch.setattr(loading, "load_model", lambda *a, **k: pytest.fail("a model was loaded"))
    out = tmp_path / "out"
    args = ([command, str(write_input(tmp_path / "in.jsonl", n=1)), "--out", str(out)] if command == "batch" else
            [command, "--task", "needle", "--n", "1", "--out", str(out)])
    assert main([*args, "--model", "tiny-llama", "--ray"]) == 2
    err = capsys.readouterr().err
    assert "--ray needs Ray" in err and "pip install" in err and err.count("\n") == 1
    assert not out.exists()  # no summary.json, no settings.json, no folder


def test_the_error_log_is_never_written_through_a_planted_link(tmp_path):
    """Issue 48 M2: a link at _batch/errors.jsonl truncated a file outside the output folder."""
    from flashtrace.base.fileio import DestinationError

    src, out = write_input(tmp_path / "in.jsonl", n=1), tmp_path / "out"
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me")
    (out / "_batch").mkdir(parents=True)
    (out / "_batch" / "errors.jsonl").symlink_to(victim)
    with pytest.raises(DestinationError, match="symbolic link"):
        run_batch(src, out, BatchSettings(model="tiny-llama"))
    assert victim.read_text() == "keep me"
    (out / "_batch" / "errors.jsonl").unlink()
    (out / "_batch").rmdir()
    (out / "_batch").symlink_to(tmp_path, target_is_directory=True)  # the whole records folder planted
    with pytest.raises(DestinationError, match="symbolic link"):
        run_batch(src, out, BatchSettings(model="tiny-llama"))
    assert victim.read_text() == "keep me" and not (tmp_path / "errors.jsonl").exists()
