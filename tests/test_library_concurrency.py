"""Issue 13 items 1-3: concurrent saves and renames never lose a trace; killed writers leave nothing behind."""

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import flashtrace
from flashtrace.base.fileio import remove_stale_temps
from flashtrace.store.library import Library, LibraryError
from flashtrace.analysis.schema import Trace


@pytest.fixture(scope="module")
def a_trace():
    model = flashtrace.load_model("tiny-llama")
    return flashtrace.trace(model, prompt="Ann has 3 apples and buys 4. How many?", response="3 + 4 = 7.\nAnswer: 7",
                            hops=1, title="Apples")


def _save_after(barrier, root: str, trace: Trace, title: str, out) -> None:
    barrier.wait()
    out.put(Library(root).save(trace.model_copy(update={"title": title}), "same"))


def test_concurrent_saves_of_one_name_keep_every_trace(tmp_path, a_trace):
    """Issue 13.1: 8 processes released together saving "same" used to leave 5-6 files."""
    ctx = multiprocessing.get_context("fork")
    barrier, out = ctx.Barrier(8), ctx.Queue()
    procs = [ctx.Process(target=_save_after, args=(barrier, str(tmp_path), a_trace, f"writer {i}", out))
             for i in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    names = sorted(out.get(timeout=5) for _ in procs)
    assert len(set(names)) == 8
    assert names == sorted(["same"] + [f"same-{i}" for i in range(2, 9)])
    assert sorted(p.stem for p in tmp_path.iterdir()) == names  # no temporary file left either
    titles = {Library(tmp_path).open(n).title for n in names}
    assert titles == {f"writer {i}" for i in range(8)}


def test_concurrent_renames_to_one_name_never_lose_a_trace(tmp_path, a_trace):
    """Issue 13.2: rename("a","c") and rename("b","c") at once lost a trace in 13 of 30 rounds."""
    for round_ in range(30):
        root = tmp_path / f"r{round_}"
        lib = Library(root)
        lib.save(a_trace.model_copy(update={"title": "A"}), "a")
        lib.save(a_trace.model_copy(update={"title": "B"}), "b")
        barrier, results = threading.Barrier(2), {}

        def rename(old):
            barrier.wait()
            try:
                results[old] = lib.rename(old, "c")
            except LibraryError as exc:
                results[old] = exc

        threads = [threading.Thread(target=rename, args=(old,)) for old in ("a", "b")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        won = [old for old, r in results.items() if r == "c"]
        assert len(won) == 1, results
        lost = "b" if won == ["a"] else "a"
        assert "already exists" in str(results[lost])
        assert sorted(p.name for p in root.iterdir()) == sorted(["c.json", f"{lost}.json"])
        assert {lib.open("c").title, lib.open(lost).title} == {"A", "B"}


_KILLED_WRITER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from flashtrace.store.library import Library
    from flashtrace.analysis.schema import Trace

    root, source, ready = sys.argv[1:4]
    trace = Trace.load(source)
    lib = Library(root)
    lib.save(trace, "finished")
    real_link = os.link

    def stall(src, dst):  # the temporary file is complete: signal, then wait to be killed
        Path(ready).write_text(str(src))
        time.sleep(120)

    os.link = stall
    lib.save(trace.model_copy(update={"extra": {"pad": "x" * 4_000_000}}), "interrupted")
""")


def test_a_killed_writer_leaves_nothing_on_the_next_open(tmp_path, a_trace):
    """Issue 13.3: kill -9 during a save left hidden .tmp-*.json files (4 MB each) that were never removed."""
    root, ready = tmp_path / "lib", tmp_path / "ready"
    source = a_trace.save(tmp_path / "source.json")
    env = {**os.environ, "PYTHONPATH": str(Path(flashtrace.__file__).parents[1])}
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, str(root), str(source), str(ready)], env=env)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the writer did not reach its save"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    leftover = Path(ready.read_text())
    assert leftover.exists() and leftover.stat().st_size > 4_000_000  # the kill did strike mid-save
    lib = Library(root)
    assert not leftover.exists()
    assert [p.name for p in root.iterdir()] == ["finished.json"]
    assert lib.open("finished").scores.final == a_trace.scores.final


def test_a_live_writers_temporary_file_is_kept(tmp_path, a_trace):
    """Cleaning only removes what dead writers left: a save in progress (lock held, process alive) stays."""
    from flashtrace.base.fileio import _TempFile

    with _TempFile(tmp_path, ".json", "{}") as live:
        assert remove_stale_temps(tmp_path) == []
        Library(tmp_path)
        assert live.path.exists()
    assert not live.path.exists()
    orphan = tmp_path / ".tmp-partial.json"  # an old-style leftover without a process id: removed by age
    orphan.write_text("{")
    assert remove_stale_temps(tmp_path) == []
    os.utime(orphan, (time.time() - 7200, time.time() - 7200))
    assert remove_stale_temps(tmp_path) == [".tmp-partial.json"]
