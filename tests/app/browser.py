"""Helpers shared by the browser test, the render benchmark and the screenshot script: Debian's chromium
for Playwright, an app server on a free loopback port, and waiting for Streamlit to settle."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(command: list[str], port: int, cwd, env: dict, timeout: float = 180):
    """Run `command` (a Streamlit server on loopback `port`) until Streamlit's health check answers;
    yields its base URL and stops it afterwards."""
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline or proc.poll() is not None:
                raise RuntimeError("the Streamlit server did not start")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextmanager
def app_server(env: dict | None = None, timeout: float = 180):
    """Run ``streamlit run app.py`` headless on a free loopback port; yields its base URL."""
    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.address",
               "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false",
               "--server.fileWatcherType", "none"]
    with serving(command, port, ROOT, {**os.environ, **(env or {})}, timeout) as url:
        yield url


def external(url: str) -> bool:
    """Whether a request the page made goes to a host other than the app's loopback one (``data:`` and
    ``blob:`` URLs are the page's own)."""
    return urlparse(url).hostname not in ("127.0.0.1", None) and not url.startswith(("data:", "blob:"))


def launch(playwright):
    """Debian's chromium through Playwright (never a downloaded browser)."""
    if not Path(CHROMIUM).exists():
        raise RuntimeError(f"chromium is not installed at {CHROMIUM} (apt-get install -y chromium)")
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


# Records in ``window.__ftLast`` the time (``performance.now()``) of the page's last DOM change. As an init
# script it runs before the page's own scripts; `settle` installs it on a page already loaded (then the
# quiet time counts from the install).
OBSERVER = """(() => {
    if (window.__ftLast !== undefined) return;
    window.__ftLast = performance.now();
    new MutationObserver(() => { window.__ftLast = performance.now(); })
        .observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
})()"""

# Streamlit is idle and the page is drawn: connected, no script run in progress or requested (the app root's
# ``data-test-script-state``, set at once, unlike the status widget that shows only 0.5 s into a run), the
# status widget hidden, `selector` (if any) present, and the DOM unchanged for `quiet` ms since `since`.
QUIET = """([quiet, selector, since]) => {
    const app = document.querySelector('[data-testid="stApp"]');
    const status = document.querySelector('[data-testid="stStatusWidget"]');
    return !!app && app.dataset.testConnectionState === 'CONNECTED' && app.dataset.testScriptState === 'notRunning'
        && !(status && status.offsetParent !== null) && (!selector || !!document.querySelector(selector))
        && performance.now() - Math.max(window.__ftLast, since) > quiet;
}"""
QUIET_MS = 500  # longer than Streamlit takes to answer a click with "running", even on a loaded 2-core machine


def wait_quiet(page, quiet_ms: float = QUIET_MS, timeout: float = 90_000, selector: str | None = None) -> float:
    """Wait until Streamlit is idle and the page's DOM has not changed for `quiet_ms`, counted from the later
    of the last change and this call (what the caller just did may show only after a moment: a rerun the
    server has yet to start, a chart that re-lays out after a resize); returns the time of the last change
    (ms since the navigation started)."""
    since = page.evaluate(f"{OBSERVER}, performance.now()")
    page.wait_for_function(QUIET, arg=[quiet_ms, selector, since], timeout=timeout, polling=100)
    return page.evaluate("window.__ftLast")


def settle(page, timeout: float = 90_000, quiet_ms: float = QUIET_MS) -> None:
    """Wait until Streamlit has finished running the script and the page (charts included) stopped changing
    for `quiet_ms`."""
    wait_quiet(page, quiet_ms, timeout)


def server_pid(url: str) -> int:
    """The process of the app server at `url` (the one whose command line serves its port)."""
    port = url.rsplit(":", 1)[1].encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"streamlit" in b" ".join(cmd) and port in cmd:
            return int(proc.name)
    raise RuntimeError(f"no server process for {url}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process (all its threads) has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_bytes(pid: int, field: str = "VmRSS") -> int:
    """A process's resident memory now (``VmRSS``) or at its peak (``VmHWM``), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} for process {pid}")


def reset_peak_memory(pid: int) -> None:
    """Start a process's peak resident memory (``VmHWM``) over from what it holds now (Linux ``clear_refs``)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
