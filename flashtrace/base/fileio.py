"""File writes that never leave a partial file and never overwrite by accident.

Every write goes to a temporary file ``.tmp-<pid>-<random><suffix>`` in the destination's folder
(locked with ``flock`` while it is being written), then:

- `atomic_write_text` renames it over the destination (replaces: for a path the user named);
- `publish_text` publishes it under the first *free* name of a list, with exclusive creation
  (`move_exclusive`: ``os.link``, which fails when the name exists, or where hard links are refused one
  rename under a folder lock), so two writers never take the same name.

A writer killed with ``kill -9`` leaves its temporary file behind; `remove_stale_temps` (called when a
`Library` is opened) removes those whose writer is gone (no lock held, and the process in the name
no longer exists or the file is over an hour old), never a live writer's.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat
import time
from pathlib import Path
from typing import Iterable

from .errors import InputError

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows
    fcntl = None

TEMP_PREFIX = ".tmp-"
STALE_AGE_S = 3600.0
_TEMP_PID = re.compile(r"^\.tmp-(\d+)-")


class _TempFile:
    """A locked temporary file in `folder` holding `text` (str as UTF-8, or bytes); removed on exit unless
    published."""

    def __init__(self, folder: Path, suffix: str, text: str | bytes):
        self.moved = False
        folder.mkdir(parents=True, exist_ok=True)
        umask = os.umask(0)
        os.umask(umask)
        while True:
            self.path = folder / f"{TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(6)}{suffix}"
            try:
                self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 & ~umask)
                break
            except FileExistsError:
                continue
        try:
            if fcntl is not None:
                fcntl.flock(self.fd, fcntl.LOCK_EX)
            data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view):]
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self.fd is not None:
            if not self.moved:
                self.path.unlink(missing_ok=True)
            os.close(self.fd)
            self.fd = None

    def published(self) -> None:
        """The file now has its final name (moved there): closing must not remove it."""
        self.moved = True

    def __enter__(self) -> "_TempFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class DestinationError(InputError):
    """An output path cannot be written: a folder, a device, a named pipe, a socket or a symbolic link is
    there (never replaced), or the folder is not writable. The message is one line naming the path."""


def _check_replaceable(path: Path, what: str) -> None:
    """`DestinationError` unless `path` is missing or a regular file (not followed if it is a link)."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # nothing there (the parent is checked apart)
        return
    if stat.S_ISDIR(mode):
        raise DestinationError(f"{what} {path} is a folder; give a file name")
    if not stat.S_ISREG(mode):
        hint = "write to the file it points to instead" if stat.S_ISLNK(mode) else "it is never replaced"
        raise DestinationError(f"{what} {path} is {kind_of(mode)}, not a regular file; {hint}")


def open_log(path: str | Path, what: str = "log") -> "io.TextIOWrapper":
    """`path` opened for writing text from its start (created, or emptied), never through a link: a symbolic link,
    folder or device there is refused (`DestinationError`) and a link planted between the check and the open is
    not followed (``O_NOFOLLOW``).

    Args:
        path: The log file to open; created, or emptied when it exists.
        what: What the file is, in words, for the error messages.

    Returns:
        The file opened for writing UTF-8 text, positioned at its start.

    Raises:
        DestinationError: When `path` or its folder is a symbolic link, or a folder, device, named pipe or
            socket is at `path`.
        OSError: When the file cannot be opened for another reason.
    """
    import io

    path = Path(path)
    _check_replaceable(path, what)
    if path.parent.is_symlink():
        raise DestinationError(f"{what} folder {path.parent} is a symbolic link; it is never written through")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise DestinationError(f"{what} {path} is a symbolic link, not a regular file") from None
        raise
    return io.open(fd, "w", encoding="utf-8")


def atomic_write_text(path: str | Path, text: str | bytes, what: str = "destination") -> Path:
    """Write `text` to `path`, replacing a regular file there; readers see the old or the new file, never a
    part. A folder, a device, a named pipe, a socket or a symbolic link at `path` is never replaced
    (`DestinationError`): checked before the temporary file is written and again just before the rename.

    Args:
        path: The destination file; a regular file there is replaced.
        text: The content: a str (written as UTF-8) or bytes.
        what: What the destination is, in words, for the error messages.

    Returns:
        `path`, as a `Path`.

    Raises:
        DestinationError: When a folder, a device, a named pipe, a socket or a symbolic link is at `path`.
    """
    path = Path(path)
    _check_replaceable(path, what)
    with _TempFile(path.parent, path.suffix, text) as tmp:
        _check_replaceable(path, what)  # something may have appeared there meanwhile
        os.replace(tmp.path, path)
    return path


def atomic_write_bytes(path: str | Path, data: bytes, what: str = "destination") -> Path:
    """`atomic_write_text` for bytes (an image).

    Args:
        path: The destination file; a regular file there is replaced.
        data: The bytes to write.
        what: What the destination is, in words, for the error messages.

    Returns:
        `path`, as a `Path`.

    Raises:
        DestinationError: When a folder, a device, a named pipe, a socket or a symbolic link is at `path`.
    """
    return atomic_write_text(path, data, what)


_NO_LINKS = (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK, errno.ENOSYS)
LOCK_NAME = ".flashtrace.lock"  # serialises renames in a folder whose filesystem refuses hard links


def _rename_if_free(src: Path, dst: Path) -> bool:
    """Rename `src` to `dst` unless `dst` exists, under an exclusive lock on the folder's `LOCK_NAME` (for
    filesystems without hard links: every writer of the folder takes the same lock). One ``rename``: the
    file moves whole, keeps its mode, and a writer killed midway leaves it under one of its two names."""
    fd = os.open(dst.parent / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError:  # no locks on this filesystem either: the check below is then only best effort
                pass
        if os.path.lexists(dst):
            return False
        os.rename(src, dst)
        return True
    finally:
        os.close(fd)


def move_exclusive(src: str | Path, dst: str | Path) -> bool:
    """Give the file at `src` the name `dst` instead, unless `dst` exists (then False and nothing changes).
    Atomic against concurrent writers: a hard link claims `dst` (it fails when the name exists), then `src`
    is unlinked; where hard links are refused, one locked rename (`_rename_if_free`). Never copies, so the
    file is never seen partly written and keeps its mode.

    Args:
        src: The file to rename.
        dst: Its new name.

    Returns:
        True when the file now has the name `dst`; False when `dst` exists (nothing changes then).

    Raises:
        FileNotFoundError: When `src` is gone (renamed or deleted meanwhile by someone else; any claim on
            `dst` is undone).
    """
    src, dst = Path(src), Path(dst)
    try:
        os.link(src, dst)
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno not in _NO_LINKS:
            raise
        return _rename_if_free(src, dst)
    try:
        os.unlink(src)
    except FileNotFoundError:
        dst.unlink(missing_ok=True)
        raise
    return True


def publish_text(folder: str | Path, names: Iterable[str], text: str, suffix: str = ".json") -> str:
    """Write `text` as ``folder/<name><suffix>`` under the first name of `names` that is free at the
    moment of creation; returns that name. Never overwrites a file, also against concurrent writers.

    Args:
        folder: The folder to write in (created when missing).
        names: The candidate names, without `suffix`, in order of preference.
        text: The content, written as UTF-8.
        suffix: The file name's ending, appended to each name.

    Returns:
        The name (from `names`, without `suffix`) the file was published under.

    Raises:
        FileExistsError: When every name of `names` is taken.
    """
    folder = Path(folder)
    with _TempFile(folder, suffix, text) as tmp:
        for name in names:
            if move_exclusive(tmp.path, folder / f"{name}{suffix}"):
                tmp.published()
                return name
    raise FileExistsError(f"no free name left in {folder}")


def _writer_gone(path: Path, now: float) -> bool:
    """True when no process is writing the temporary file `path`."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False  # its writer holds the lock: alive
        age = now - os.fstat(fd).st_mtime
    finally:
        os.close(fd)
    match = _TEMP_PID.match(path.name)
    if match and age < STALE_AGE_S:
        try:
            os.kill(int(match.group(1)), 0)
            return False  # that process still runs (it may be about to lock the file)
        except ProcessLookupError:
            return True
        except (PermissionError, OverflowError, ValueError):
            return False
    return age >= STALE_AGE_S


def remove_stale_temps(folder: str | Path) -> list[str]:
    """Remove temporary files left in `folder` by writers that died; returns the names removed.

    Args:
        folder: The folder to clean; an unreadable or missing folder removes nothing.

    Returns:
        The file names removed (empty when none).
    """
    folder = Path(folder)
    removed = []
    now = time.time()
    try:
        candidates = [p for p in folder.iterdir() if p.name.startswith(TEMP_PREFIX)]
    except OSError:
        return removed
    for path in candidates:
        try:
            if path.is_file() and _writer_gone(path, now):
                path.unlink()
                removed.append(path.name)
        except OSError:
            continue
    return removed


def _probe_writable(path: Path, what: str) -> Path:
    """The nearest existing folder at or above `path`, after checking a file can be created in it."""
    parent = path
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise DestinationError(f"{what} {path} cannot be written: {parent} is not a folder")
    probe = parent / f"{TEMP_PREFIX}{os.getpid()}-probe-{secrets.token_hex(4)}"
    try:  # a real file, not os.access: root, read-only mounts and /proc answer differently
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        probe.unlink()
    except OSError as exc:
        raise DestinationError(f"{what} {path} cannot be written: {exc.strerror or type(exc).__name__} in "
                               f"{parent}") from None
    return parent


def check_not_input(path: str | Path, source: str | Path, what: str = "destination") -> None:
    """`DestinationError` when the output `path` is the input file `source` (the same file, by any name): the
    command would write over what it reads.

    Args:
        path: The output path.
        source: The input file the command reads.
        what: What the output is, in words, for the error message.

    Raises:
        DestinationError: When `path` and `source` are the same file.
    """
    path, source = Path(path), Path(source)
    try:
        same = path.exists() and source.exists() and os.path.samefile(path, source)
    except OSError:
        same = False
    if same or path.resolve() == source.resolve():
        raise DestinationError(f"{what} {path} is the input trace {source}; write to another file")


def check_destination(path: str | Path, what: str = "destination") -> Path:
    """`DestinationError` (one line) unless a file can be written at `path`: nothing there or a regular file
    (a folder, a device such as ``/dev/null``, a named pipe, a socket or a symbolic link such as
    ``/dev/stdout`` is refused, never replaced), and its nearest existing parent folder is writable (missing
    folders are created on write). Checked before the work; the write checks again.

    Args:
        path: The output file to check.
        what: What the output is, in words, for the error message.

    Returns:
        `path`, as a `Path`.

    Raises:
        DestinationError: When something other than a regular file is at `path`, its folder is not writable,
            or the file there is read-only.
    """
    path = Path(path)
    _check_replaceable(path, what)
    _probe_writable(path.parent, what)
    if path.exists() and not os.access(path, os.W_OK):
        raise DestinationError(f"{what} {path} cannot be written: the file is read-only")
    return path


def check_folder(path: str | Path, what: str = "folder") -> Path:
    """`DestinationError` (one line) unless `path` is a folder files can be written in, or can be created as
    one (an existing file, device or link there is refused). Checked before the work.

    Args:
        path: The output folder to check.
        what: What the folder is, in words, for the error message.

    Returns:
        `path`, as a `Path`.

    Raises:
        DestinationError: When something other than a folder is at `path`, or no file can be written there.
    """
    path = Path(path)
    if os.path.lexists(path) and not path.is_dir():
        raise DestinationError(f"{what} {path} is {kind_of(os.lstat(path).st_mode)}, not a folder")
    _probe_writable(path, what)
    return path


class NotAFileError(InputError):
    """A path that should be a regular file is a folder, a device, a named pipe, a socket or a link; the
    message names what it is."""


class FileTooLargeError(InputError):
    """A file is larger than the bound it is read with."""


def kind_of(mode: int) -> str:
    """What a file of `mode` (``st_mode``) is, in words.

    Args:
        mode: The file's mode, as ``os.stat`` gives it in ``st_mode``.

    Returns:
        The kind with its article, such as "a folder" or "a named pipe (FIFO)"; "not a regular file" for a
        kind none of the tests knows.
    """
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"),
                       (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISLNK, "a symbolic link"), (stat.S_ISREG, "a regular file")):
        if test(mode):
            return name
    return "not a regular file"


# opened without blocking (a named pipe with no writer) and never as a controlling terminal, on the platforms
# that have those flags (Linux and macOS do; Windows has neither)
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)


def read_regular_file(path: str | Path, limit: int, what: str = "file") -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them. A folder, a device, a named pipe or a
    socket is refused with `NotAFileError` (opened without blocking, then checked: a FIFO with no writer
    never hangs the caller); a file over `limit` bytes raises `FileTooLargeError`.

    Args:
        path: The file to read.
        limit: The most bytes read; a larger file is refused.
        what: What the file should be, in words, for the error messages.

    Returns:
        The file's whole content.

    Raises:
        NotAFileError: When `path` is a folder, a device, a named pipe or a socket.
        FileTooLargeError: When the file is over `limit` bytes (also when it grew past them while read).
        FileNotFoundError: When the file is missing.
    """
    path = Path(path)
    try:  # a folder opens too (read-only), and fstat below names it
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ENXIO, errno.EOPNOTSUPP):  # a socket
            raise NotAFileError(f"{path} is a socket, not a {what}") from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise NotAFileError(f"{path} is {kind_of(info.st_mode)}, not a {what}")
    with os.fdopen(fd, "rb") as handle:
        if info.st_size > limit:
            raise FileTooLargeError(f"{path} is larger than {limit:,} bytes")
        data = handle.read(info.st_size + 1)  # the size it has now: no buffer of `limit` bytes up front
        while len(data) <= limit:  # the file grew meanwhile: read on, within the bound
            more = handle.read(min(limit + 1 - len(data), 1 << 20))
            if not more:
                break
            data += more
    if len(data) > limit:
        raise FileTooLargeError(f"{path} is larger than {limit:,} bytes")
    return data


def file_stamp(path: str | Path) -> tuple[int, int, int, int]:
    """What identifies a file's content for a cache: inode, size, modification and change times in ns. An edit
    of the same size with its modification time put back still changes the change time, which no user sets.

    Args:
        path: The file.

    Returns:
        ``(inode, size, modification time in ns, change time in ns)``.
    """
    info = os.stat(path)
    return info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


def is_device(path: str | Path) -> bool:
    """True for a character or block device (``/dev/zero``, ``/dev/urandom``): endless, never a file.

    Args:
        path: The path to test.

    Returns:
        True for a character or block device; False for anything else, or when `path` cannot be examined.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
