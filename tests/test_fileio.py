"""File writes and reads of `flashtrace.base.fileio`: never a partial file, never an overwrite by accident, never
a hang on a special file."""

import fcntl
import os
import socket
import stat
import subprocess
import sys
import threading

import pytest

from flashtrace.base import fileio
from flashtrace.base.fileio import (DestinationError, FileTooLargeError, NotAFileError, atomic_write_text,
                                    check_destination, check_folder, is_device, kind_of, move_exclusive,
                                    publish_text, read_regular_file, remove_stale_temps)


def test_a_write_replaces_the_file_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")
    assert atomic_write_text(target, "new é") == target
    assert target.read_bytes() == "new é".encode()
    assert os.listdir(tmp_path) == ["out.json"]


def test_a_write_creates_missing_folders_with_the_users_umask(tmp_path):
    old = os.umask(0o027)
    try:
        atomic_write_text(tmp_path / "a" / "b" / "c.txt", b"\x00\x01")
        os.umask(0o022)
        atomic_write_text(tmp_path / "d.txt", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "a" / "b" / "c.txt").read_bytes() == b"\x00\x01"
    assert stat.S_IMODE((tmp_path / "a" / "b" / "c.txt").stat().st_mode) == 0o640
    assert stat.S_IMODE((tmp_path / "d.txt").stat().st_mode) == 0o644


def test_published_names_are_taken_in_order_and_never_overwritten(tmp_path):
    (tmp_path / "t.json").write_text("first")
    assert publish_text(tmp_path, ["t", "t-2", "t-3"], "second") == "t-2"
    assert publish_text(tmp_path, ["t", "t-2", "t-3"], "third") == "t-3"
    with pytest.raises(FileExistsError, match="no free name left"):
        publish_text(tmp_path, ["t", "t-2", "t-3"], "fourth")
    assert [(tmp_path / f"{n}.json").read_text() for n in ("t", "t-2", "t-3")] == ["first", "second", "third"]
    assert sorted(os.listdir(tmp_path)) == ["t-2.json", "t-3.json", "t.json"]  # no temporary file left


@pytest.mark.parametrize("links", [True, False])
def test_a_move_never_takes_a_name_in_use(tmp_path, monkeypatch, links):
    if not links:  # a filesystem that refuses hard links: one locked rename instead
        def refused(src, dst):
            raise OSError(1, "Operation not permitted")

        monkeypatch.setattr(fileio.os, "link", refused)
    src, dst = tmp_path / "a", tmp_path / "b"
    src.write_text("A")
    dst.write_text("B")
    assert move_exclusive(src, dst) is False
    assert (src.read_text(), dst.read_text()) == ("A", "B")
    dst.unlink()
    assert move_exclusive(src, dst) is True
    assert dst.read_text() == "A" and not src.exists()


def test_a_move_of_a_vanished_file_raises_and_claims_nothing(tmp_path):
    with pytest.raises(FileNotFoundError):
        move_exclusive(tmp_path / "gone", tmp_path / "b")
    assert not (tmp_path / "b").exists()


def test_stale_temporary_files_are_removed_live_ones_kept(tmp_path):
    dead = tmp_path / ".tmp-999999999-abc.json"  # no such process
    dead.write_text("x")
    mine = tmp_path / f".tmp-{os.getpid()}-abc.json"  # a live writer (this process)
    mine.write_text("x")
    old = tmp_path / f".tmp-{os.getpid()}-old.json"  # a live pid but over an hour old: pid reused
    old.write_text("x")
    os.utime(old, (1, 1))
    kept = tmp_path / "t.json"
    kept.write_text("x")
    assert sorted(remove_stale_temps(tmp_path)) == sorted([dead.name, old.name])
    assert sorted(os.listdir(tmp_path)) == sorted([mine.name, "t.json"])
    assert remove_stale_temps(tmp_path / "missing") == []


def test_destinations_that_are_not_regular_files_are_refused(tmp_path):
    (tmp_path / "dir").mkdir()
    with pytest.raises(DestinationError, match="is a folder; give a file name"):
        check_destination(tmp_path / "dir", "output")
    os.symlink(tmp_path / "x", tmp_path / "link")
    with pytest.raises(DestinationError, match="a symbolic link, not a regular file; write to the file it points"):
        check_destination(tmp_path / "link")
    with pytest.raises(DestinationError, match="/dev/null is a device, not a regular file; it is never replaced"):
        check_destination("/dev/null")
    assert check_destination(tmp_path / "new" / "f.txt") == tmp_path / "new" / "f.txt"
    assert sorted(os.listdir(tmp_path)) == ["dir", "link"]  # nothing written, no probe left


def test_a_folder_destination_must_be_a_folder(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(DestinationError, match="out .*/f is a regular file, not a folder"):
        check_folder(tmp_path / "f", "out")
    with pytest.raises(DestinationError, match="cannot be written: .*/f is not a folder"):
        check_folder(tmp_path / "f" / "sub", "out")
    assert check_folder(tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"


def _without_hanging(read, fifo) -> str:
    """The message `read` refuses with; if it blocks on `fifo` (waiting for a writer), the test fails after a
    few seconds instead of hanging: a writer is opened to release it."""
    said = []

    def run():
        try:
            read()
        except NotAFileError as exc:
            said.append(str(exc))

    reader = threading.Thread(target=run, daemon=True)
    reader.start()
    reader.join(5)
    if reader.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join()
        pytest.fail("reading a named pipe without a writer blocked")
    return said[0] if said else ""


def test_kinds_of_files_in_words(tmp_path):
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "s"))
    os.mkfifo(tmp_path / "p")
    try:
        assert [kind_of(os.lstat(p).st_mode) for p in (tmp_path, "/dev/null", tmp_path / "p", tmp_path / "s")] == [
            "a folder", "a device", "a named pipe (FIFO)", "a socket"]
        assert _without_hanging(lambda: read_regular_file(tmp_path / "p", 10, "trace"), tmp_path / "p") == (
            f"{tmp_path}/p is a named pipe (FIFO), not a trace")  # no writer: refused at once, no hang
        with pytest.raises(NotAFileError, match="is a socket, not a file"):
            read_regular_file(tmp_path / "s", 10)
    finally:
        sock.close()
    assert kind_of(0) == "not a regular file"
    with pytest.raises(NotAFileError, match="is a folder, not a file"):
        read_regular_file(tmp_path, 10)


def test_a_file_is_read_whole_up_to_its_bound(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    assert read_regular_file(path, 10) == b"x" * 10
    with pytest.raises(FileTooLargeError, match="larger than 9 bytes"):
        read_regular_file(path, 9)
    with pytest.raises(FileNotFoundError):
        read_regular_file(tmp_path / "missing", 10)


def test_devices_are_recognised(tmp_path):
    assert is_device("/dev/zero") and is_device("/dev/urandom")
    assert not is_device(tmp_path) and not is_device(tmp_path / "missing")


def test_refusals_name_what_was_being_written(tmp_path, monkeypatch):
    (tmp_path / "dir").mkdir()
    with pytest.raises(DestinationError, match=f"^destination {tmp_path}/dir is a folder"):
        atomic_write_text(tmp_path / "dir", "x")
    with pytest.raises(DestinationError, match=f"^image {tmp_path}/dir is a folder"):
        fileio.atomic_write_bytes(tmp_path / "dir", b"x", "image")
    with pytest.raises(DestinationError, match=f"^destination {tmp_path}/dir is a folder"):
        fileio.atomic_write_bytes(tmp_path / "dir", b"x")
    with pytest.raises(DestinationError, match=f"^destination {tmp_path}/dir is a folder"):
        check_destination(tmp_path / "dir")
    with pytest.raises(DestinationError, match="^output /sys cannot be written: Permission denied in /sys$"):
        check_destination("/sys/out.json", "output")  # sysfs: no file can be created there, not even by root
    with pytest.raises(DestinationError, match="^destination /sys cannot be written: Permission denied in /sys$"):
        check_destination("/sys/out.json")
    with pytest.raises(DestinationError, match="^folder /sys/new cannot be written: Permission denied in /sys$"):
        check_folder("/sys/new")
    (tmp_path / "f").write_text("x")
    with pytest.raises(DestinationError, match=f"^folder {tmp_path}/f is a regular file, not a folder$"):
        check_folder(tmp_path / "f")
    read_only = tmp_path / "ro.json"
    read_only.write_text("x")
    access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: mode != os.W_OK and access(p, mode))  # as a non-root user
    with pytest.raises(DestinationError, match=f"^output {read_only} cannot be written: the file is read-only$"):
        check_destination(read_only, "output")


def test_block_devices_are_devices_too():
    assert kind_of(stat.S_IFBLK) == "a device"


def test_the_lock_of_a_folder_without_hard_links_is_held_while_renaming(tmp_path, monkeypatch):
    def refused(src, dst):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(fileio.os, "link", refused)
    old = os.umask(0o022)
    try:
        src = tmp_path / "a"
        src.write_text("A")
        lock = os.open(tmp_path / fileio.LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another writer of the folder is renaming
            mover = threading.Thread(target=move_exclusive, args=(src, tmp_path / "b"))
            mover.start()
            mover.join(0.5)
            assert mover.is_alive() and src.exists()  # it waits for that writer
        finally:
            os.close(lock)
        mover.join()
        assert (tmp_path / "b").read_text() == "A" and not src.exists()
        (tmp_path / fileio.LOCK_NAME).unlink()
        (tmp_path / "c").write_text("C")
        assert move_exclusive(tmp_path / "c", tmp_path / "d")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / fileio.LOCK_NAME).stat().st_mode) == 0o644  # the lock file: no one else writes it


def test_a_temporary_file_locked_by_its_writer_is_never_removed(tmp_path):
    busy = tmp_path / ".tmp-999999999-abc.json"  # a pid that is not running, yet its writer holds the lock
    busy.write_text("x")
    fd = os.open(busy, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert remove_stale_temps(tmp_path) == [] and busy.exists()
    finally:
        os.close(fd)
    assert remove_stale_temps(tmp_path) == [busy.name]


def test_a_live_pids_temporary_file_is_stale_from_the_hour_on(tmp_path, monkeypatch):
    """The age rule at its limit (STALE_AGE_S): with this process's pid in its name (a live pid, maybe reused),
    a temporary file is kept until it is an hour old, to the nanosecond, and removed from then on."""
    path = tmp_path / f".tmp-{os.getpid()}-abc.json"
    path.write_text("x")
    os.utime(path, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))  # 1e9 s: exact as a float
    mtime = os.stat(path).st_mtime
    monkeypatch.setattr(fileio.time, "time", lambda: mtime + fileio.STALE_AGE_S - 1e-6)
    assert remove_stale_temps(tmp_path) == []
    monkeypatch.setattr(fileio.time, "time", lambda: mtime + fileio.STALE_AGE_S)
    assert remove_stale_temps(tmp_path) == [path.name]


def test_stale_checks_never_signal_a_live_writer_nor_guess_about_odd_pids(tmp_path):
    code = "import signal, time; signal.signal(signal.SIGHUP, signal.SIG_DFL); print(flush=True); time.sleep(60)"
    writer = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)  # dies of any signal but 0
    try:
        writer.stdout.readline()
        live = tmp_path / f".tmp-{writer.pid}-abc.json"
        odd = tmp_path / f".tmp-{2**70}-abc.json"  # a pid no process can have: cannot tell, kept while fresh
        for path in (live, odd):
            path.write_text("x")
        assert remove_stale_temps(tmp_path) == []
        with pytest.raises(subprocess.TimeoutExpired):  # the probe is signal 0: the writer still runs
            writer.wait(timeout=0.5)
    finally:
        writer.kill()
        writer.wait()


def test_a_temporary_file_that_cannot_be_opened_is_kept(tmp_path, monkeypatch):
    dead = tmp_path / ".tmp-999999999-abc.json"
    dead.write_text("x")
    real_open = os.open

    def refused(path, *args):  # what a non-root user gets for another user's unreadable file
        if str(path) == str(dead):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args)

    monkeypatch.setattr(os, "open", refused)
    assert remove_stale_temps(tmp_path) == [] and dead.exists()


def test_one_file_that_cannot_be_removed_does_not_stop_the_others(tmp_path, monkeypatch):
    names = [f".tmp-99999999{i}-abc.json" for i in range(4)]
    for name in names:
        (tmp_path / name).write_text("x")
    unlink, failed = type(tmp_path).unlink, []

    def first_fails(self, *args, **kwargs):
        if not failed:
            failed.append(self.name)
            raise PermissionError(13, "Permission denied")
        return unlink(self, *args, **kwargs)

    monkeypatch.setattr(type(tmp_path), "unlink", first_fails)
    assert sorted(remove_stale_temps(tmp_path)) == sorted(set(names) - set(failed))


@pytest.mark.parametrize("grown", [6, 2])
def test_a_file_that_grows_while_read_is_read_whole_within_its_bound(tmp_path, monkeypatch, grown):
    path = tmp_path / "f"
    path.write_bytes(bytes(range(10)))
    fstat = os.fstat

    class Earlier:  # what fstat said before a writer appended `grown` bytes
        def __init__(self, fd):
            info = fstat(fd)
            self.st_mode, self.st_size = info.st_mode, info.st_size - grown

    monkeypatch.setattr(os, "fstat", Earlier)
    assert read_regular_file(path, 10) == bytes(range(10))
    assert read_regular_file(path, 11) == bytes(range(10))
    with pytest.raises(FileTooLargeError, match=f"^{path} is larger than 9 bytes$"):
        read_regular_file(path, 9)


@pytest.mark.parametrize("seen", [0, 10])
def test_a_file_that_grew_far_past_its_bound_is_refused_without_being_read_whole(tmp_path, monkeypatch, seen):
    """fstat saw 0 or 10 bytes, then a writer appended 32 MiB: the read stops past the 1 MiB bound, it does not
    take the whole file into memory."""
    import tracemalloc

    path = tmp_path / "f"
    path.write_bytes(bytes(32 * 2**20))
    fstat = os.fstat

    class Earlier:
        def __init__(self, fd):
            self.st_mode, self.st_size = fstat(fd).st_mode, seen

    monkeypatch.setattr(os, "fstat", Earlier)
    tracemalloc.start()
    try:
        with pytest.raises(FileTooLargeError, match="is larger than 1,048,576 bytes$"):
            read_regular_file(path, 2**20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 2**20


def test_a_temporary_name_in_use_is_never_written_over(tmp_path, monkeypatch):
    names = iter(["aaaa", "bbbb"])
    monkeypatch.setattr(fileio.secrets, "token_hex", lambda n: next(names))
    other = tmp_path / f".tmp-{os.getpid()}-aaaa.json"  # another writer's file of that name
    other.write_text("theirs")
    atomic_write_text(tmp_path / "out.json", "mine")
    assert (tmp_path / "out.json").read_text() == "mine" and other.read_text() == "theirs"


def test_a_temporary_file_is_locked_while_it_is_written(tmp_path, monkeypatch):
    write, seen = os.write, []

    def checking(fd, data):  # another process's cleaner, trying the lock meanwhile
        (temp,) = [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]
        probe = os.open(temp, os.O_RDONLY)
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
            seen.append("unlocked")
        except BlockingIOError:
            seen.append("locked")
        finally:
            os.close(probe)
        return write(fd, data)

    monkeypatch.setattr(os, "write", checking)
    atomic_write_text(tmp_path / "out.json", "x")
    assert seen == ["locked"]


def test_an_image_is_written_whole_and_a_folder_appearing_meanwhile_is_never_replaced(tmp_path, monkeypatch):
    assert fileio.atomic_write_bytes(tmp_path / "chart.png", b"\x89PNG\r\n") == tmp_path / "chart.png"
    assert (tmp_path / "chart.png").read_bytes() == b"\x89PNG\r\n"
    write = os.write

    def racing(fd, data):  # another process makes a folder of that name while the file is written
        (tmp_path / "out.json").mkdir(exist_ok=True)
        return write(fd, data)

    monkeypatch.setattr(os, "write", racing)
    with pytest.raises(DestinationError, match=f"^destination {tmp_path}/out.json is a folder"):
        atomic_write_text(tmp_path / "out.json", "x")
    assert sorted(os.listdir(tmp_path)) == ["chart.png", "out.json"]  # the folder stays, no temporary file left
