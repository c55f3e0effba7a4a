"""Batch tracing: a JSONL file of prompts → one validated trace file per example in a folder.

Each input line is a JSON object with ``prompt`` and optionally ``response`` or ``generate``, ``target``
(answer, response, reasoning, ``START:END`` or ``[start, end]``), ``hops``, ``title``, ``gold`` and
``task`` (both kept in the trace's ``extra``) and ``id`` (ignored). Every line is checked before any
model loads; a bad line is reported with its line number and recorded, never stops the batch.

Each example is keyed by a hash of its inputs and the run's settings; its trace file is
``<title>-<key>.json``, published with exclusive creation, so a rerun skips every example already
written (identical inputs and settings) and nothing is ever written twice. Traces are computed by
`TraceWorker` (in this process, or in Ray actors: `flashtrace.run.distributed`); only the driver writes.
The run's record is ``<out>/_batch/summary.json`` (and ``errors.jsonl``, one line per failed
example or bad input line), outside the folder's trace listing.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .distributed import kill_hook
from ..base.fileio import DestinationError, atomic_write_text, open_log, publish_text
from ..store.library import Library, sanitize_name
from ..store.index import LibraryIndex
from ..analysis.limits import DEFAULT_HOPS, DEFAULT_STOP_TOKENS, HOP0_SPANS, MAX_HOPS, RECURSIVE_SPANS, check_hops
from ..analysis.schema import Trace
from ..base.errors import InputError

RECORD_DIR = "_batch"
KEY_CHARS = 12
class BatchLine(BaseModel):
    """One input line."""

    model_config = ConfigDict(extra="forbid")

    prompt: str = Field(min_length=1)
    response: str | None = None
    generate: bool | None = None
    target: str | tuple[int, int] | None = None
    hops: int | None = Field(default=None, ge=0, le=MAX_HOPS)
    title: str | None = Field(default=None, max_length=500)
    gold: list[Any] | None = None
    task: str | None = Field(default=None, max_length=100)
    id: str | int | None = None

    @model_validator(mode="after")
    def _one_response(self) -> "BatchLine":
        if self.response is not None and self.generate:
            raise InputError("give either response or generate: true, not both")
        if self.response is not None and not self.response.strip():
            raise InputError("response is empty")
        if isinstance(self.target, str):
            check_target(self.target)
        return self


def check_target(spec: str) -> None:
    """Raise ValueError unless `spec` is value, answer, response, reasoning or START:END with 0 <= START < END.

    Args:
        spec: The target, as a line or the settings give it.

    Raises:
        InputError: A ValueError, when `spec` is none of those.
    """
    if spec in ("value", "answer", "response", "reasoning"):
        return
    try:
        lo, hi = (int(x) for x in spec.split(":"))
    except ValueError:
        raise InputError(f"target must be value, answer, response, reasoning or START:END, got {spec!r}") from None
    if not 0 <= lo < hi:
        raise InputError(f"target {spec} needs 0 <= START < END")


@dataclass
class BatchSettings:
    """What applies to every line (a line's own target and hops replace the defaults)."""

    model: str = "smollm2-135m"
    method: str = "flashtrace"
    options: dict = field(default_factory=dict)
    hops: int | None = None
    target: str = "value"
    recursive: str = RECURSIVE_SPANS[0]
    stop_tokens: str | list = DEFAULT_STOP_TOKENS
    hop0: str = HOP0_SPANS[0]
    chat_template: bool = True
    generate: bool = False
    reasoning_instruction: bool = False  # when generating: append the instruction (template tokens)
    max_new_tokens: int = 256
    steps: bool = False
    dtype: str | None = None
    device: str | None = None  # where it runs: not part of an example's key

    def keyed(self) -> dict:
        """The settings that make an example's key (the device is left out, and the reasoning instruction
        when it is off, so keys match folders written before it).

        Returns:
            ``{setting: value}`` of the settings that make the key.
        """
        data = dict(vars(self))
        data.pop("device")
        if not data["reasoning_instruction"]:  # off (the default): keys stay those of folders written before it
            data.pop("reasoning_instruction")
        return data


@dataclass
class BadLine:
    """An input line that could not be read: its number and the error."""
    line: int
    error: str


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        msg = "unknown field (allowed: " + ", ".join(BatchLine.model_fields) + ")"
    return f"{loc}: {msg}" if loc else msg


def read_lines(path: str | Path, settings: BatchSettings) -> tuple[list[dict], list[BadLine]]:
    """The jobs of an input file and its bad lines (1-based line numbers; blank lines are skipped).

    Args:
        path: The JSONL input file.
        settings: The batch's settings: defaults for what a line leaves out, and part of each example's key.

    Returns:
        ``(jobs, bad)``: one job per good line, each a dict of its inputs with its ``line`` and ``key`` (a line
            with the same inputs as an earlier one is bad, as a duplicate); and the bad lines with their errors.

    Raises:
        InputError: When the settings name an unknown method.
        OSError: When the input file cannot be opened.
    """
    from ..engine.attribution import get_method

    spec = get_method(settings.method)
    jobs, bad, seen = [], [], {}
    with open(path, "rb") as handle:
        for number, raw in _text_lines(handle, bad):
            try:
                data = json.loads(raw)
            except ValueError as exc:
                bad.append(BadLine(number, f"not valid JSON ({exc.msg} at column {exc.colno})"))
                continue
            if not isinstance(data, dict):
                bad.append(BadLine(number, f"expected a JSON object, got {type(data).__name__}"))
                continue
            try:
                line = BatchLine.model_validate(data)
            except ValidationError as exc:
                bad.append(BadLine(number, _first_error(exc)))
                continue
            generate = line.generate if line.generate is not None else (settings.generate and line.response is None)
            if line.response is None and not generate:
                bad.append(BadLine(number, "no response: give response, generate: true, or run with --generate"))
                continue
            hops = line.hops if line.hops is not None else settings.hops if settings.hops is not None else (
                DEFAULT_HOPS if spec.hops else 0)
            if hops > 0 and not spec.hops:
                bad.append(BadLine(number, f"hops {hops}: method {settings.method} runs without hops (use 0)"))
                continue
            target = list(line.target) if isinstance(line.target, tuple) else line.target or settings.target
            job = {"line": number, "prompt": line.prompt, "response": None if generate else line.response,
                   "generate": generate, "target": target, "hops": hops, "title": line.title or "",
                   "gold": line.gold, "task": line.task}
            job["key"] = example_key(job, settings)
            if job["key"] in seen:
                bad.append(BadLine(number, f"duplicate of line {seen[job['key']]} (same inputs): skipped"))
                continue
            seen[job["key"]] = number
            jobs.append(job)
    return jobs, bad


def _text_lines(handle, bad: list[BadLine]):
    """``(number, text)`` of the non-blank lines of a binary file, decoded one at a time: a line that is not
    UTF-8 is recorded in `bad` (the others go on), and a byte-order mark is not part of line 1."""
    for number, raw in enumerate(handle, 1):
        try:
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            bad.append(BadLine(number, f"not UTF-8 text (byte {exc.start + 1} of the line)"))
            continue
        if text.strip():
            yield number, text


def example_key(job: dict, settings: BatchSettings) -> str:
    """A hash of an example's inputs and the settings that shape its trace.

    Args:
        job: The example's inputs (prompt, response, generate, target, hops, title, gold, task).
        settings: The batch's settings (those of `BatchSettings.keyed`).

    Returns:
        The first `KEY_CHARS` hexadecimal digits of the SHA-256 hash.
    """
    inputs = {k: job[k] for k in ("prompt", "response", "generate", "target", "hops", "title", "gold", "task")}
    text = json.dumps({"inputs": inputs, "settings": settings.keyed()}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:KEY_CHARS]


def file_stem(job: dict) -> str:
    """The trace file's name: the title (or the prompt's start) and the example key.

    Args:
        job: The example, with its ``prompt``, ``title`` and ``key``.

    Returns:
        The file's stem, ``<title>-<key>`` (the title sanitised, at most 60 characters; ``trace`` when empty).
    """
    lines = job["prompt"].strip().splitlines()
    head = job["title"] or (lines[0] if lines else "")
    return f"{sanitize_name(head)[:60].rstrip('.-_') or 'trace'}-{job['key']}"


def check_model(name: str) -> None:
    """Refuse, before any work, a model whose family FlashTrace does not support (local folders; built-in
    aliases are known, and refused when not prepared yet; a hub id is checked when it loads).

    Args:
        name: The model: an alias, a local folder or a Hugging Face id.

    Raises:
        ModelLoadError: When a local folder has no ``config.json``.
        UnsupportedModelError: When a local folder's model type is not a supported family.
        ModelNotPreparedError: When a built-in model is not prepared yet (the message names the command).
    """
    from ..engine.models import MODEL_ALIASES
    from ..engine.models.builtin import BUILTINS
    from ..engine.models.families import spec_for_model_type
    from ..engine.models.loading import ModelLoadError
    from ..engine.models.prepare import require_prepared

    if name in MODEL_ALIASES:
        if name in BUILTINS:
            require_prepared(name)  # a built-in not prepared yet is refused here, naming the command
        return
    folder = Path(name).expanduser()
    if folder.is_dir():
        config = folder / "config.json"
        if not config.is_file():
            raise ModelLoadError(f"{name} has no config.json: not a model folder")
        spec_for_model_type(json.loads(config.read_text(encoding="utf-8")).get("model_type", "unknown"))


class TraceWorker:
    """Loads the model once; each call traces one job and returns ``{"trace": json}`` or ``{"error": msg}``
    (a failing example never raises out of a worker)."""

    def __init__(self, settings: BatchSettings, device: str | None = None):
        from ..engine.models import load_model

        self.settings = settings
        self.loaded = load_model(settings.model, device=device or settings.device, dtype=settings.dtype)

    def __call__(self, job: dict) -> dict:
        from .tracing import attribute, prepare

        kill_hook(job["title"])
        s, start = self.settings, time.perf_counter()
        try:
            prepared = prepare(self.loaded, job["prompt"], job["response"], generate=job["generate"],
                               max_new_tokens=s.max_new_tokens, chat_template=s.chat_template, hops=job["hops"],
                               reasoning_instruction=s.reasoning_instruction)
            target = tuple(job["target"]) if isinstance(job["target"], list) else job["target"]
            trace = attribute(prepared, target=target, hops=job["hops"], method=s.method, recursive=s.recursive,
                              stop_tokens=s.stop_tokens, hop0=s.hop0, options=s.options, title=job["title"],
                              steps=s.steps)
        except Exception as exc:  # noqa: BLE001 - recorded per example
            return {"error": f"{type(exc).__name__}: {exc}", "seconds": time.perf_counter() - start}
        given = {name: job[name] for name in ("gold", "task") if job[name] is not None}
        trace = trace.model_copy(update={"extra": {**trace.extra, "batch": {"key": job["key"], "line": job["line"]},
                                                   **given}})  # a new trace: a Trace is never changed in place
        return {"trace": trace.to_json(), "seconds": time.perf_counter() - start}


@dataclass
class BatchResult:
    """The outcome of a batch: the output folder, one record per example, the bad input lines and the
    time taken."""
    out: Path
    records: list[dict]
    bad: list[BadLine]
    seconds: float

    def count(self, status: str) -> int:
        """The number of records with status `status` ("done", "skipped" or "failed").

        Args:
            status: The status counted: ``"done"``, ``"skipped"`` or ``"failed"``.

        Returns:
            How many records have that status.
        """
        return sum(r["status"] == status for r in self.records)

    @property
    def ok(self) -> bool:
        """Whether every input line was read and no example failed."""
        return not self.bad and not self.count("failed")


class _Writer:
    """The driver's side: publishes traces, records outcomes, keeps the summary."""

    def __init__(self, out: Path, on_record: Callable[[dict], None] | None):
        self.out, self.on_record = out, on_record
        self.records_dir = out / RECORD_DIR
        if self.records_dir.is_symlink():
            raise DestinationError(f"{self.records_dir} is a symbolic link; the batch's records are never written "
                                   "through one")
        self.records_dir.mkdir(parents=True, exist_ok=True)
        self.errors = open_log(self.records_dir / "errors.jsonl", "the batch's error log")
        self.records: list[dict] = []
        self.index = LibraryIndex(out)

    def record(self, job: dict, status: str, **extra) -> None:
        rec = {"line": job["line"], "key": job["key"], "title": job["title"], "status": status, **extra}
        self.records.append(rec)
        if status == "failed":
            self.errors.write(json.dumps(rec) + "\n")
            self.errors.flush()
        if self.on_record:
            self.on_record(rec)

    def result(self, job: dict, outcome: dict, attempts: int = 1) -> None:
        if "trace" not in outcome:
            self.record(job, "failed", error=outcome.get("error", "unknown error")[:2000], attempts=attempts)
            return
        stem = file_stem(job)
        trace = Trace.from_json(outcome["trace"])  # validated before it is written
        try:
            publish_text(self.out, [stem], trace.to_json())
        except FileExistsError:  # written meanwhile by another run of the same batch: keep that one
            self.record(job, "skipped", file=f"{stem}.json")
            return
        self.index.add(stem, trace)  # the Library lists it without reading it back
        self.record(job, "done", file=f"{stem}.json", seconds=round(outcome.get("seconds", 0.0), 3),
                    attempts=attempts)

    def close(self, bad: list[BadLine], summary: dict) -> None:
        for b in bad:
            self.errors.write(json.dumps({"line": b.line, "status": "bad_line", "error": b.error}) + "\n")
        self.errors.close()
        atomic_write_text(self.records_dir / "summary.json", json.dumps(summary, indent=1))


def run_batch(input_path: str | Path, out: str | Path, settings: BatchSettings, *,
              ray_address: str | None = None, workers: int | None = None, num_cpus_per_worker: float = 1,
              num_gpus_per_worker: float = 0, max_retries: int = 2,
              on_record: Callable[[dict], None] | None = None,
              on_plan: Callable[[int, int, list[BadLine]], None] | None = None) -> BatchResult:
    """Trace every line of `input_path` into `out`. Lines already traced there are skipped.

    Args:
        input_path: The JSONL file of examples.
        out: The output folder (created when missing).
        settings: What applies to every line.
        ray_address: Run examples on Ray actors: 'local' starts a cluster on this machine, 'auto' joins a running
            one; None runs them in this process.
        workers: How many Ray actors (None: as many as the cluster and the jobs allow).
        num_cpus_per_worker: CPUs each Ray actor reserves.
        num_gpus_per_worker: GPUs each Ray actor reserves.
        max_retries: How many times a Ray actor's example is retried after the actor dies.
        on_record: `on_record(record)` sees each example's outcome as it arrives.
        on_plan: `on_plan(total, to_do, bad_lines)` is told the work before it starts.

    Returns:
        The output folder, one record per example, the bad input lines and the seconds taken.

    Raises:
        InputError: When the settings are refused (the method's options, hops or target) before any work.
        ModelLoadError: When the model cannot be used (`check_model`).
        DestinationError: When the batch's record folder is a symbolic link or cannot be written.
    """
    from ..engine.attribution import get_method

    start = time.perf_counter()
    out = Path(out)
    spec = get_method(settings.method)
    spec.resolve_options(dict(settings.options))  # a bad option fails before any work
    if settings.hops is not None:
        check_hops(settings.hops, "--hops")
    check_target(settings.target)
    check_model(settings.model)
    jobs, bad = read_lines(input_path, settings)
    Library(out)  # creates nothing; removes temporary files that a killed run left
    out.mkdir(parents=True, exist_ok=True)
    writer = _Writer(out, on_record)
    todo = []
    for job in jobs:
        if (out / f"{file_stem(job)}.json").is_file():
            writer.record(job, "skipped", file=f"{file_stem(job)}.json")
        else:
            todo.append(job)
    if on_plan:
        on_plan(len(jobs), len(todo), bad)
    info: dict = {"mode": "serial"}
    try:
        if todo and ray_address:
            from .distributed import RayPool

            pool = RayPool(TraceWorker, (settings,), address=ray_address, workers=workers,
                           num_cpus=num_cpus_per_worker, num_gpus=num_gpus_per_worker, max_retries=max_retries,
                           jobs=len(todo))
            info = {"mode": "ray", "address": ray_address, **pool.describe()}
            try:
                for job, outcome, attempts in pool.map(todo):
                    writer.result(job, outcome, attempts)
            finally:
                pool.close()
        elif todo:
            worker = TraceWorker(settings)
            for job in todo:
                writer.result(job, worker(job))
    finally:
        seconds = time.perf_counter() - start
        done = [r for r in writer.records if r["status"] == "done"]
        summary = {"input": str(input_path), "settings": vars(settings), "run": info, "seconds": round(seconds, 3),
                   "counts": {s: sum(r["status"] == s for r in writer.records) for s in ("done", "skipped", "failed")}
                   | {"bad_lines": len(bad), "lines": len(jobs) + len(bad)},
                   "examples_per_second": round(len(done) / seconds, 4) if done else 0.0,
                   "examples": sorted(writer.records, key=lambda r: r["line"]),
                   "bad_lines": [vars(b) for b in bad]}
        writer.close(bad, summary)
    return BatchResult(out, writer.records, bad, seconds)


__all__ = ["BatchLine", "BatchSettings", "BatchResult", "BadLine", "TraceWorker", "read_lines", "example_key",
           "file_stem", "check_model", "run_batch"]
