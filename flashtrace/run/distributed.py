"""Running jobs on Ray actors: each actor builds its worker (loads the model) once and keeps it.

`RayPool(factory, args)` starts actors that each call ``factory(*args, device=...)`` once, then
``worker(job)`` per job; results stream back to the caller (`map` yields them as they finish), so the
driver alone writes files. An actor that dies mid-job (its process killed, out of memory) is replaced
by a fresh one and the job is retried, at most `max_retries` times; after that the job is reported
failed. Workers are expected to return their own errors as values (they are never retried).

Ray is imported only here, and only when a pool is made: without ``--ray`` nothing imports it.
Address: ``local`` starts a Ray cluster on this machine for the run; ``auto`` joins the cluster that
``ray start --head`` started; anything else is passed to ``ray.init(address=...)``
(``ray://host:10001``). When Ray is already initialised in this process, that cluster is used.
An address that does not answer fails within `CONNECT_TIMEOUT_S` (a TCP probe) or `INIT_TIMEOUT_S` (the
handshake) with one line, instead of Ray's minutes of retries.

A cluster started here is stopped when the pool closes, also when the driver is interrupted (Ctrl-C) or
terminated (SIGTERM: turned into the same interruption while a pool is open). A signal that arrives while the
driver is inside a Ray call is held until the call returns (every wait is bounded by `POLL_S`), so the
interruption never unwinds through Ray's own code, where it could leave a lock held and the clean-up hanging;
a second signal interrupts at once. A driver killed with
``kill -9`` cannot clean up: the local cluster's processes (raylet, GCS, dashboard and runtime-env agents,
idle workers) may then survive it; ``ray stop`` ends them.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections import deque
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from ..base.errors import InputError, EXIT_USAGE, FlashTraceError
from ..base.install import extra_hint

FORWARDED_PREFIX = "FLASHTRACE_"  # environment variables the workers get from the driver
CONNECT_TIMEOUT_S = 5.0  # a cluster address must accept a TCP connection within this
INIT_TIMEOUT_S = 25.0  # and complete Ray's handshake within this
POLL_S = 0.5  # the longest a wait inside Ray holds back a Ctrl-C or SIGTERM
# Test hooks (not user options): a worker exits at once (os._exit, as a killed process would) on a job
# whose label is listed in $FLASHTRACE_TEST_KILL_ONCE (comma-separated; once per label, remembered by a
# marker file <$FLASHTRACE_TEST_KILL_MARK>.<label>) or in $FLASHTRACE_TEST_KILL_ALWAYS.
KILL_ONCE_ENV, KILL_ALWAYS_ENV, KILL_MARK_ENV = ("FLASHTRACE_TEST_KILL_ONCE", "FLASHTRACE_TEST_KILL_ALWAYS",
                                                 "FLASHTRACE_TEST_KILL_MARK")


class RayUnavailableError(FlashTraceError, RuntimeError):
    """``--ray`` was asked for but Ray is not installed, or the cluster cannot be reached."""

    exit_code = EXIT_USAGE


def kill_hook(label: str) -> None:
    """The test hook above; workers call it with their job's label (title, example id).

    Args:
        label: The job's label; the process exits at once (status 17) when the test variables list it, and an
            empty label never does.
    """
    if not label:
        return
    if label in os.environ.get(KILL_ALWAYS_ENV, "").split(","):
        os._exit(17)
    mark = os.environ.get(KILL_MARK_ENV)
    if mark and label in os.environ.get(KILL_ONCE_ENV, "").split(","):
        try:
            os.close(os.open(f"{mark}.{label}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            return  # killed once already
        os._exit(17)


class _Host:
    """The actor: holds one worker for its lifetime."""

    def __init__(self, factory: Callable, args: tuple, device: str | None):
        self.worker = factory(*args, device=device)

    def ready(self) -> int:
        return os.getpid()

    def run(self, job: Any) -> Any:
        return self.worker(job)


def require_ray() -> None:
    """Refuse `--ray` at once when Ray is not installed, before any model loads or any file is written; finds the
    package without importing it.

    Raises:
        RayUnavailableError: When Ray is not installed (the message names the extra).
    """
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise RayUnavailableError(f"--ray needs Ray; {extra_hint('ray')}")


def _import_ray():
    try:
        import ray
    except ImportError:
        raise RayUnavailableError(f"--ray needs Ray; {extra_hint('ray')}") from None
    return ray


def _worker_env() -> dict:
    """FLASHTRACE_* variables, and this copy of the package first on the workers' import path (a cluster
    started here then runs the same code as the driver; on other nodes the package must be installed)."""
    env = {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_PREFIX)}
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


class RayPool:
    """Workers on a Ray cluster (a local one unless `address` names another), each built with
    `factory(*args)`, that run jobs with retries (`map`); `close` stops them."""
    def __init__(self, factory: Callable, args: tuple, *, address: str = "local", workers: int | None = None,
                 num_cpus: float = 1, num_gpus: float = 0, max_retries: int = 2, jobs: int | None = None):
        if num_cpus <= 0 and num_gpus <= 0:
            raise InputError("a worker needs some CPUs or GPUs (--num-cpus-per-worker / --num-gpus-per-worker)")
        if num_cpus < 0 or num_gpus < 0 or max_retries < 0:
            raise InputError("worker resources and --max-retries cannot be negative")
        self.ray = ray = _import_ray()
        self.started = not ray.is_initialized()
        self._interrupts = _Interrupts()
        try:
            if self.started:
                with self._interrupts.held():
                    _connect(ray, address)
            self._start_workers(factory, args, workers, num_cpus, num_gpus, max_retries, jobs)
        except BaseException:  # a bad option, a worker that cannot start, an interruption: stop what started
            self.close()
            raise

    def _start_workers(self, factory, args, workers, num_cpus, num_gpus, max_retries, jobs) -> None:
        ray = self.ray
        self.factory, self.args, self.max_retries = factory, args, max_retries
        self.num_cpus, self.num_gpus = num_cpus, num_gpus
        self.n_workers = (min(workers, jobs) if jobs else workers) if workers else self._fit(jobs)
        if self.n_workers < 1:
            raise InputError("--workers must be at least 1")
        self.remote = ray.remote(_Host).options(num_cpus=num_cpus, num_gpus=num_gpus,
                                                runtime_env={"env_vars": _worker_env()})
        self.actors = [self._start() for _ in range(self.n_workers)]
        self.replaced = 0
        try:  # a worker that cannot load its model fails here, once, with the reason
            self._get([a.ready.remote() for a in self.actors])
        except ray.exceptions.RayActorError as exc:
            raise RayUnavailableError("the Ray workers could not start: " + _reason(exc)) from None

    def _fit(self, jobs: int | None) -> int:
        """As many workers as the cluster's resources hold (at least 1, at most one per job)."""
        total = self.ray.cluster_resources()
        fits = [int(total.get("CPU", 0) // self.num_cpus)] if self.num_cpus > 0 else []
        if self.num_gpus > 0:
            fits.append(int(total.get("GPU", 0) // self.num_gpus))
        n = max(1, min(fits) if fits else 1)
        return min(n, jobs) if jobs else n

    def _start(self):
        return self.remote.remote(self.factory, self.args, "cuda" if self.num_gpus > 0 else None)

    def describe(self) -> dict:
        """The pool's settings: workers, CPUs and GPUs per worker, retries.

        Returns:
            ``{"workers", "num_cpus_per_worker", "num_gpus_per_worker", "max_retries"}`` with their values.
        """
        return {"workers": self.n_workers, "num_cpus_per_worker": self.num_cpus,
                "num_gpus_per_worker": self.num_gpus, "max_retries": self.max_retries}

    def map(self, jobs: Iterable[Any]) -> Iterator[tuple[Any, Any, int]]:
        """Yield ``(job, result, attempts)`` as jobs finish (any order). A job whose actor died
        `max_retries` + 1 times yields ``{"error": ...}`` as its result.

        Args:
            jobs: The jobs, each passed to a worker as ``worker(job)``.

        Yields:
            ``(job, result, attempts)`` per job as it finishes: the worker's result (``{"error": ...}`` when the
                worker raised, or when its actor died `max_retries` + 1 times) and the attempts it took.
        """
        ray = self.ray
        pending = deque((job, 1) for job in jobs)
        running: dict = {}  # object ref -> (actor index, job, attempt)
        idle = deque(range(len(self.actors)))
        while pending or running:
            while pending and idle:
                index = idle.popleft()
                job, attempt = pending.popleft()
                running[self.actors[index].run.remote(job)] = (index, job, attempt)
            ready = self._wait(list(running), 1)
            index, job, attempt = running.pop(ready[0])
            try:
                result = self._get(ready[0])
            except ray.exceptions.RayActorError as exc:  # the process died: replace it, retry the job
                ray.kill(self.actors[index], no_restart=True)
                self.actors[index] = self._start()
                self.replaced += 1
                if attempt <= self.max_retries:
                    pending.appendleft((job, attempt + 1))
                else:
                    yield job, {"error": f"worker died {attempt} times on this example ({_reason(exc)})"}, attempt
                idle.append(index)
                continue
            except ray.exceptions.RayTaskError as exc:  # the worker raised (it should return errors)
                result = {"error": _reason(exc)}
            idle.append(index)
            yield job, result, attempt

    def _wait(self, refs: list, count: int) -> list:
        """The first `count` of `refs` to finish, waited for in `POLL_S` steps (a signal is handled between)."""
        while True:
            with self._interrupts.held():
                ready, _ = self.ray.wait(refs, num_returns=count, timeout=POLL_S)
            if len(ready) >= count:
                return ready

    def _get(self, refs):
        """``ray.get`` once `refs` (one or a list) have finished, waited for by `_wait`."""
        listed = refs if isinstance(refs, list) else [refs]
        self._wait(listed, len(listed))
        with self._interrupts.held():
            return self.ray.get(refs)

    def close(self) -> None:
        """Stop the workers, shut down the cluster this pool started and restore the signal handlers."""
        for actor in getattr(self, "actors", []):
            try:
                self.ray.kill(actor, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self.actors = []
        if self.started and self.ray.is_initialized():
            self.ray.shutdown()
        self._interrupts.restore()


def _connect(ray, address: str | None) -> None:
    """``ray.init`` for `address` (see the module docstring), or `RayUnavailableError` in one line within
    `CONNECT_TIMEOUT_S` + `INIT_TIMEOUT_S` seconds."""
    kwargs = dict(include_dashboard=False, log_to_driver=False)
    if address in (None, "", "local"):
        ray.init(**kwargs)
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if host and port.isdigit():
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
        except OSError as exc:
            raise RayUnavailableError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}") from None
    outcome: dict = {}

    def run() -> None:
        try:
            ray.init(address=address, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - reported by the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="ray-init", daemon=True)
    thread.start()
    thread.join(INIT_TIMEOUT_S)
    if thread.is_alive():
        raise RayUnavailableError(f"the Ray cluster at {address} did not answer within {INIT_TIMEOUT_S:.0f} s")
    if "error" in outcome:
        text = " ".join(str(outcome["error"]).split())[:300]
        raise RayUnavailableError(f"cannot reach the Ray cluster at {address}: {text}") from None


class _Interrupts:
    """While a pool is open (main thread only: elsewhere handlers cannot be set), SIGINT and SIGTERM raise
    KeyboardInterrupt, except inside `held`, where the first one is kept until the block ends."""
    def __init__(self):
        self.inside, self.pending, self.previous = False, None, {}
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self.previous[signum] = signal.signal(signum, self._handle)

    def _handle(self, signum, frame):
        if self.inside and self.pending is None:
            self.pending = signum
            return
        raise KeyboardInterrupt(f"signal {signum}")

    @contextmanager
    def held(self):
        """A block that a signal does not interrupt; the signal is raised when the block ends."""
        self.inside = True
        try:
            yield
        finally:
            self.inside = False
            signum, self.pending = self.pending, None
            if signum is not None:
                raise KeyboardInterrupt(f"signal {signum}")

    def restore(self) -> None:
        """Put back the handlers that were there before the pool (once)."""
        for signum, handler in self.previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        self.previous = {}


def _reason(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    errors = [ln for ln in lines if "Error" in ln and not ln.startswith(("File ", "Traceback"))]
    return (errors[-1] if errors else lines[0] if lines else type(exc).__name__)[:500]


__all__ = ["RayPool", "RayUnavailableError", "require_ray"]
