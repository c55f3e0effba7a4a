"""Issue 30, batch: a line that is not UTF-8 is one bad line, not the end of the batch, and a UTF-8 BOM is
not part of line 1 (defect 11); an unreachable Ray address fails fast with one line, and the driver stops
the cluster it started when it is terminated or interrupted (defect 12)."""

import json
import signal
import subprocess
import sys
import time

import psutil
import pytest

from flashtrace.run.batch import BatchSettings, read_lines
from flashtrace.run.distributed import RayPool, RayUnavailableError

LINE = {"prompt": "What is 2+3?", "response": "2 plus 3 is 5. The answer is 5.", "title": "ok"}


def test_a_non_utf8_line_is_one_bad_line(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(json.dumps(LINE).encode() + b"\n" + b'{"prompt": "caf\xe9"}\n'
                     + json.dumps({**LINE, "title": "two"}).encode() + b"\n")
    jobs, bad = read_lines(path, BatchSettings(model="tiny-llama"))
    assert [j["title"] for j in jobs] == ["ok", "two"]
    assert [(b.line, "UTF-8" in b.error) for b in bad] == [(2, True)]


def test_a_byte_order_mark_is_not_part_of_line_one(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(LINE).encode() + b"\n")
    jobs, bad = read_lines(path, BatchSettings(model="tiny-llama"))
    assert bad == [] and [j["title"] for j in jobs] == ["ok"]


class Doubler:
    def __init__(self, device=None):
        pass

    def __call__(self, job):
        return {"value": job * 2}


@pytest.mark.ray
def test_an_unreachable_ray_address_fails_at_once_with_one_line():
    import threading

    outcome = []

    def connect():
        try:
            RayPool(Doubler, (), address="127.0.0.1:1", workers=1)
        except Exception as exc:  # noqa: BLE001 - inspected below
            outcome.append(exc)

    thread = threading.Thread(target=connect, daemon=True)
    thread.start()
    thread.join(40)  # it hung for minutes (killed after 2 min 47 s)
    assert not thread.is_alive(), "no answer within 40 s"
    (error,) = outcome
    assert isinstance(error, RayUnavailableError) and "127.0.0.1:1" in str(error) and "\n" not in str(error)


DRIVER = """
import faulthandler, signal, sys, time
from flashtrace.run.distributed import RayPool

faulthandler.register(signal.SIGUSR1)  # where the driver is, should it hang (read by the test)

class Slow:
    def __init__(self, device=None):
        pass

    def __call__(self, job):
        time.sleep(600)

pool = RayPool(Slow, (), address="local", workers=1, num_cpus=1)
try:  # "started" is printed inside the try: a signal right after it still reaches the finally
    print("started", flush=True)
    for _ in pool.map([1]):
        pass
finally:
    pool.close()
"""


def _alive(processes: list) -> list:
    """The processes still running (a zombie has exited: in a container nobody may reap it)."""
    alive = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                alive.append(process)
        except psutil.NoSuchProcess:
            pass
    return alive


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_the_driver_stops_its_local_cluster_when_signalled(signum):
    driver = subprocess.Popen([sys.executable, "-c", DRIVER], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        assert driver.stdout.readline().strip() == "started"
        children = psutil.Process(driver.pid).children(recursive=True)
        assert children, "the local cluster runs as the driver's child processes"
        driver.send_signal(signum)
        try:
            driver.wait(timeout=60)
        except subprocess.TimeoutExpired:  # a hang: fail with the driver's stacks
            driver.send_signal(signal.SIGUSR1)
            time.sleep(2)
            driver.kill()
            pytest.fail("the driver did not exit within 60 s of the signal; its threads:\n"
                        + driver.communicate(timeout=30)[1][-6000:])
        # the cluster's processes exit after the driver; on a busy machine that takes seconds, so wait for them
        # (up to 60 s, a guard against hanging, not a time limit) rather than look once after a fixed pause
        alive = _alive(children)
        for _ in range(120):
            if not alive:
                break
            time.sleep(0.5)
            alive = _alive(alive)
        assert alive == [], [p.name() for p in alive]
    finally:
        if driver.poll() is None:
            driver.kill()


@pytest.fixture
def interrupts():
    from flashtrace.run.distributed import _Interrupts

    guard = _Interrupts()
    yield guard
    guard.restore()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_inside_a_ray_call_interrupts_when_the_call_returns(interrupts, signum):
    finished = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts.held():
            signal.raise_signal(signum)
            finished.append("the call went on to its end")
    assert finished == ["the call went on to its end"]


def test_a_second_signal_inside_a_ray_call_interrupts_at_once(interrupts):
    finished = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts.held():
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGINT)
            finished.append("not reached")
    assert finished == []


def test_outside_a_ray_call_a_signal_interrupts_at_once_and_closing_restores_the_handlers():
    from flashtrace.run.distributed import _Interrupts

    before = signal.getsignal(signal.SIGTERM)
    guard = _Interrupts()
    try:
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGTERM)
    finally:
        guard.restore()
    assert signal.getsignal(signal.SIGTERM) is before
