"""File writes that never leave a partial file and never overwrite by accident.

Every write goes to a temporary file ``.tmp-<pid>-<random><suffix>`` in the destination's folder
(locked with ``flock`` while it is being written), then:

- `atomic_write_text` renames it over the destination (replaces: for a path the user named);
- `publish_text` publishes it under the first *free* name of a list, with exclusive creation
  (``os.link``, which fails when the name exists), so two writers never take the same name.

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
            self.path.unlink(missing_ok=True)
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> "_TempFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def atomic_write_text(path: str | Path, text: str | bytes) -> Path:
    """Write `text` to `path`, replacing any file there; readers see the old or the new file, never a part."""
    path = Path(path)
    with _TempFile(path.parent, path.suffix, text) as tmp:
        os.replace(tmp.path, path)
    return path


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """`atomic_write_text` for bytes (an image)."""
    return atomic_write_text(path, data)


def link_exclusive(src: Path, dst: Path) -> bool:
    """Give the file at `src` the name `dst` unless `dst` exists (atomic); False when it does.
    `src` keeps its name. Where hard links are not supported, an exclusively created placeholder
    reserves `dst` and is then replaced."""
    try:
        os.link(src, dst)
        return True
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
    try:
        os.close(os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        return False
    import shutil

    shutil.copyfile(src, dst)
    return True


def publish_text(folder: str | Path, names: Iterable[str], text: str, suffix: str = ".json") -> str:
    """Write `text` as ``folder/<name><suffix>`` under the first name of `names` that is free at the
    moment of creation; returns that name. Never overwrites a file, also against concurrent writers."""
    folder = Path(folder)
    with _TempFile(folder, suffix, text) as tmp:
        for name in names:
            if link_exclusive(tmp.path, folder / f"{name}{suffix}"):
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
    """Remove temporary files left in `folder` by writers that died; returns the names removed."""
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


def check_destination(path: str | Path, what: str = "destination") -> Path:
    """`ValueError` (one line) unless a file can be written at `path`: not a folder, and its nearest
    existing parent folder is writable (missing folders are created on write). Checked before the work."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{what} {path} is a folder; give a file name")
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ValueError(f"{what} {path} cannot be written: {parent} is not a folder")
    probe = parent / f"{TEMP_PREFIX}{os.getpid()}-probe-{secrets.token_hex(4)}"
    try:  # a real file, not os.access: root, read-only mounts and /proc answer differently
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        probe.unlink()
    except OSError as exc:
        raise ValueError(f"{what} {path} cannot be written: {exc.strerror or type(exc).__name__} in {parent}") from None
    if path.exists() and not os.access(path, os.W_OK):
        raise ValueError(f"{what} {path} cannot be written: the file is read-only")
    return path


def is_device(path: str | Path) -> bool:
    """True for a character or block device (``/dev/zero``, ``/dev/urandom``): endless, never a file."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
