"""Issue 30, files: output paths never replace a special file or a link (defect 2), renames without hard
links are atomic and keep the file's mode (defect 9), a FIFO as an input never blocks (defect 15)."""

import errno
import os
import signal
import stat
import subprocess
import sys
import threading

import pytest

from flashtrace.base import fileio
from flashtrace.base.fileio import atomic_write_text, check_destination
from flashtrace.store.library import Library
from tests.bad_files import gallery_data
from tests.cli_run import run_main

CLI = [sys.executable, "-m", "flashtrace.cli"]


def run_cli(*args, timeout=60):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def trace_file(tmp_path):
    import json

    path = tmp_path / "t.json"
    path.write_text(json.dumps(gallery_data("free-form")), encoding="utf-8")
    return path


def special_files(tmp_path) -> dict:
    """A character device (like /dev/null), a FIFO, a link to a regular file and a link to a device."""
    target = tmp_path / "target.txt"
    target.write_text("keep me")
    made = {"device": tmp_path / "null-dev", "fifo": tmp_path / "pipe", "link": tmp_path / "link.json",
            "device_link": tmp_path / "stdout-like"}
    os.mknod(made["device"], stat.S_IFCHR | 0o666, os.makedev(1, 3))
    os.mkfifo(made["fifo"])
    made["link"].symlink_to(target)
    made["device_link"].symlink_to(made["device"])
    return made


def kinds(paths: dict) -> dict:
    return {name: stat.filemode(os.lstat(path).st_mode)[0] for name, path in paths.items()}


@pytest.mark.parametrize("flag", ["--json", "--html"])
def test_export_refuses_special_files_and_links(tmp_path, trace_file, flag):
    made = special_files(tmp_path)
    before = kinds(made)
    for name, path in made.items():
        res = run_cli("export", str(trace_file), flag, str(path))
        assert res.returncode == 2, (name, res.stderr)
        assert res.stderr.strip().count("\n") == 0 and str(path) in res.stderr
    assert kinds(made) == before == {"device": "c", "fifo": "p", "link": "l", "device_link": "l"}
    assert (tmp_path / "target.txt").read_text() == "keep me"


def test_a_path_that_becomes_special_after_the_check_is_not_replaced(tmp_path):
    """The check runs before a long trace; the write re-checks what is there just before it renames."""
    path = tmp_path / "out.json"
    check_destination(path, "--json")
    os.mkfifo(path)  # appears during the run
    with pytest.raises(ValueError, match="named pipe"):
        atomic_write_text(path, "{}")
    assert stat.S_ISFIFO(os.lstat(path).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temporary file left


def test_a_regular_file_is_still_replaced_atomically(tmp_path):
    path = tmp_path / "out.json"
    path.write_text("old")
    atomic_write_text(check_destination(path), "new")
    assert path.read_text() == "new"


def refuse_links(monkeypatch):
    def no_link(src, dst):
        raise OSError(errno.EPERM, "Operation not permitted (simulated filesystem without hard links)")

    monkeypatch.setattr(fileio.os, "link", no_link)


def test_rename_without_hard_links_keeps_the_mode_and_the_content(tmp_path, trace_file, monkeypatch):
    lib = Library(tmp_path / "lib")
    name = lib.import_json(trace_file.read_bytes(), name="a")
    os.chmod(lib.path(name), 0o644)
    refuse_links(monkeypatch)
    lib.rename("a", "b")
    assert stat.S_IMODE(os.stat(lib.path("b")).st_mode) == 0o644
    assert not lib.exists("a") and lib.open("b").n_tokens > 0


KILLED_RENAME = """
import os, sys, shutil
from flashtrace.base import fileio
from flashtrace.store.library import Library

def no_link(src, dst):
    raise OSError(1, "no hard links here")

def die(*args, **kwargs):  # killed at the worst moment: in the middle of moving the file
    os.kill(os.getpid(), 9)

fileio.os.link = no_link
shutil.copyfile = die
shutil.copyfileobj = die
os.rename = die
os.replace = die
Library(sys.argv[1]).rename("a", "b")
"""


def test_a_rename_killed_midway_leaves_no_partial_file(tmp_path, trace_file):
    lib = Library(tmp_path / "lib")
    lib.import_json(trace_file.read_bytes(), name="a")
    before = lib.path("a").read_bytes()
    res = subprocess.run([sys.executable, "-c", KILLED_RENAME, str(lib.root)], capture_output=True, timeout=60)
    assert res.returncode == -signal.SIGKILL
    names = {e.name: e for e in Library(lib.root).entries()}
    assert all(entry.readable for entry in names.values()), names
    assert lib.path("a").read_bytes() == before or lib.path("b").read_bytes() == before


def test_a_fifo_as_export_input_is_refused_at_once(tmp_path):
    fifo = tmp_path / "in.json"
    os.mkfifo(fifo)
    res = run_cli("export", str(fifo), "--json", str(tmp_path / "o.json"), timeout=30)  # blocked forever before
    assert res.returncode == 2 and "named pipe" in res.stderr, res.stderr


def test_a_fifo_as_prompt_file_is_refused_at_once(tmp_path):
    fifo = tmp_path / "prompt.txt"
    os.mkfifo(fifo)
    res = run_cli("trace", "--model", "tiny-llama", "--prompt-file", str(fifo), "--response", "Answer: 2", timeout=60)
    assert res.returncode == 2 and "named pipe" in res.stderr, res.stderr


WRITERS = {  # every command that writes a file named on its command line: the flag, and what runs before it
    "trace --json": lambda tmp, out: ["trace", "--model", "tiny-llama", "--prompt", "2 + 2?", "--response", "Answer: 4",
                                      "--no-progress", "--json", out],
    "export --json": lambda tmp, out: ["export", str(tmp / "t.json"), "--json", out],
    "export --html": lambda tmp, out: ["export", str(tmp / "t.json"), "--html", out],
    "intervene --out": lambda tmp, out: ["intervene", str(tmp / "t.json"), "--no-progress", "--out", out],
    # the commands that write into a folder: each refuses a file, a pipe, a device or a link to one as the folder
    "batch --out": lambda tmp, out: ["batch", str(tmp / "t.json"), "--model", "tiny-llama", "--no-progress", "--out", out],
    "eval --out": lambda tmp, out: ["eval", "--model", "tiny-llama", "--task", "needle", "--n", "1", "--k", "0",
                                    "--methods", "ifr", "--no-plots", "--no-progress", "--out", out],
    "gallery --out": lambda tmp, out: ["gallery", "--model", "tiny-llama", "--out", out],
}


def run_in_process(args: list[str], fifo, capsys) -> tuple[int, str]:
    """`flashtrace ARGS` in this process (no interpreter and torch start per call): its exit status and stderr.
    A command that blocks opening `fifo` is freed after 30 s by a reader opening the pipe's other end, and the
    test then fails on the ``blocked`` it records rather than hanging."""
    blocked = []

    def free():
        blocked.append(True)
        with open(fifo, "rb"):
            pass

    watchdog = threading.Timer(30, free)
    watchdog.start()
    try:
        res = run_main(capsys, *args)
    finally:
        watchdog.cancel()
    assert not blocked, f"flashtrace {' '.join(args)} blocked on the named pipe"
    return res.returncode, res.stderr


@pytest.mark.parametrize("command", list(WRITERS))
def test_every_writer_refuses_a_link_a_fifo_and_a_device_before_any_work(tmp_path, trace_file, command, capsys):
    """Issue 48 item 4: each command's output flag, given a link, a named pipe or a device, says so in one line and
    exits 2 without waiting on the pipe or touching what the link points to. (Run in this process: a fresh
    interpreter per call took 7 s each; `test_a_fifo_as_prompt_file_is_refused_at_once` runs the CLI as a shell does.)"""
    made = special_files(tmp_path)
    before = kinds(made)
    for name, path in made.items():
        code, err = run_in_process(WRITERS[command](tmp_path, str(path)), made["fifo"], capsys)
        assert code == 2 and str(path) in err, (command, name, err)
        assert err.strip().count("\n") == 0, (command, name, err)
    assert kinds(made) == before and (tmp_path / "target.txt").read_text() == "keep me"
