"""Issue 30 in a real browser (Playwright + Debian's chromium):

- a library folder seeded with one file of every bad kind found by the probe (an overflowing trace, a
  memory-amplifying one, truncated, not UTF-8, nested lists, empty, a right-to-left override in its name, a
  folder, a FIFO and a device link named *.json, garbage in the index file): every page renders, the bad
  files are listed as unreadable with their reason, and one is deleted from the Library page;
- ``flashtrace app --read-only``: no control that writes or runs a model on any page, crafted query
  parameters trigger none, and the library folder and the server's CPU time are unchanged afterwards."""

import subprocess
import sys
import time

import psutil
import pytest

from flashtrace.store.library import LIBRARY_ENV, Library
from tests.bad_files import RTL_NAME, gallery_data, seed_library

from .browser import ROOT, free_port, serving, settle
from .url_params import runs_apart

pytestmark = [pytest.mark.browser, pytest.mark.slow]
PAGES = ["", "Trace", "Explore", "Hop_graph", "Compare", "Library", "Evaluation", "Story", "Glossary"]
WRITE_OR_RUN = ["Run trace", "Generate response", "Load preset", "Import", "Rename", "Delete", "Run the comparison",
                "Run the check now", "Cancel"]


def problems(page) -> list[str]:
    """Tracebacks Streamlit shows (an exception element) on the page."""
    return [e.inner_text()[:300] for e in page.locator('[data-testid="stException"]').all()]


def visit(page, url: str) -> None:
    """Open `url` and wait for its first script run to finish: until then the app reports no finished run,
    so a short quiet suffices (what is checked here is drawn by the script, not by the charts)."""
    page.goto(url, timeout=120_000)
    settle(page, timeout=120_000, quiet_ms=200)


def flashtrace_app(env: dict, *flags: str):
    """``flashtrace app`` itself (the command users run), headless on a free loopback port."""
    port = free_port()
    command = [sys.executable, "-m", "flashtrace.cli", "app", "--headless", "--address", "127.0.0.1", "--port",
               str(port), *flags]
    import os

    return serving(command, port, ROOT, {**os.environ, **env})


QUERIES = ["", "?trace=lib:good", "?trace=lib:overflow", "?trace=gallery:needle&step=4"]


def test_every_page_renders_with_every_kind_of_bad_file(tmp_path, browser):
    folder = tmp_path / "library"
    listed = seed_library(folder)
    bad = [name for name, kind in listed.items() if kind == "bad"]
    with flashtrace_app({LIBRARY_ENV: str(folder)}) as url:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        for name in PAGES:
            # once per distinct set of parameters the page reads (a page reading no ?trace= lists the bad
            # files the same whichever trace the URL names; tests/app/url_params.py)
            for query in runs_apart(name, QUERIES):
                visit(page, f"{url}/{name}{query}")
                assert problems(page) == [], (name, query, problems(page))
        visit(page, f"{url}/Library")
        warnings = " ".join(w.inner_text() for w in page.locator('[data-testid="stAlertContentWarning"]').all())
        for name in bad:
            shown = name.replace("\u202e", "⟨U+202E⟩")
            assert f"{shown} is unreadable and skipped:" in warnings, (name, warnings[:2000])
        assert "⟨U+202E⟩" in warnings and "\u202e" not in page.content()
        selected = page.locator('[data-testid="stSelectbox"]').filter(has_text="Selected trace").locator("input")
        selected.click()
        page.keyboard.type("overflow")  # the option list is virtualised: filter it so the option is drawn
        page.get_by_role("option", name="overflow", exact=True).click()
        settle(page)
        page.get_by_text("Yes, delete 'overflow' for good").click()
        settle(page)
        page.get_by_role("button", name="Delete", exact=True).click()
        page.get_by_text("Deleted").wait_for(timeout=60_000)
        settle(page)
        assert problems(page) == []
        page.close()
    assert not (folder / "overflow.json").exists()
    assert {e.name for e in Library(folder).entries()} == set(listed) - {"overflow"}
    assert (folder / f"{RTL_NAME}.json").exists()


def snapshot(folder) -> dict:
    return {p.name: (p.stat().st_ino, p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir()}


def cpu_seconds(pid: int) -> float:
    """CPU time of the server process and every process it started."""
    root = psutil.Process(pid)
    total = 0.0
    for proc in [root, *root.children(recursive=True)]:
        try:
            times = proc.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            continue
    return total


def cpu_until_idle(pid: int, window_s: float = 2.0, idle_s: float = 0.2, limit_s: float = 30.0) -> float:
    """CPU seconds the server (with its children) uses from now until it is idle: until some `window_s`
    seconds in which it used under `idle_s` of CPU (a model run or a write started behind the pages keeps
    it busy); `limit_s` at most."""
    start = time.monotonic()
    samples = [(start, cpu_seconds(pid))]
    while time.monotonic() - start < limit_s:
        time.sleep(0.25)
        now = (time.monotonic(), cpu_seconds(pid))
        samples.append(now)
        before = [s for s in samples if s[0] <= now[0] - window_s]  # the samples at least `window_s` old
        if before and now[1] - before[-1][1] < idle_s:
            break
    return samples[-1][1] - samples[0][1]


def server_pid(port_url: str) -> int:
    port = int(port_url.rsplit(":", 1)[1])
    for conn in psutil.net_connections(kind="tcp"):
        if conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN and conn.pid:
            return conn.pid
    raise RuntimeError(f"no process listens on {port}")


CRAFTED = ["?trace=lib:good", "?trace=lib:good&step=5&run=1", "?trace=gallery:needle&node=A&methods=flashtrace",
           "?trace=lib:good&model_choice=tiny-llama&prompt=hi&response=ok&run=true", "?run_methods=1&tab=Methods",
           "?trace=lib:good&delete=good&confirm_delete_good_0=true"]


def test_read_only_demo_shows_no_write_or_run_control_and_changes_nothing(tmp_path, browser):
    folder = tmp_path / "library"
    folder.mkdir()
    import json

    (folder / "good.json").write_text(json.dumps(gallery_data("free-form")), encoding="utf-8")
    before = snapshot(folder)
    with flashtrace_app({LIBRARY_ENV: str(folder)}, "--read-only") as url:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        pid = server_pid(url)
        for name in PAGES:
            for query in runs_apart(name, ["", *CRAFTED]):  # the others run the page's script the same
                visit(page, f"{url}/{name}{query}")
                assert problems(page) == [], (name, query, problems(page))
                for label in WRITE_OR_RUN:
                    assert page.get_by_role("button", name=label, exact=True).count() == 0, (name, query, label)
                assert page.locator('[data-testid="stFileUploader"]').count() == 0, (name, query)
                assert page.get_by_role("link", name="Trace", exact=True).count() == 0
        visit(page, f"{url}/Compare?trace=lib:good")
        assert page.get_by_role("tab", name="Methods").count() == 0
        idle = cpu_until_idle(pid)  # a model run or a write started behind the pages would show as CPU time here
        page.close()
    assert idle < 1.0, f"the server used {idle:.1f} s of CPU after the pages were drawn"
    assert snapshot(folder) == before
    assert not subprocess.run(["ls", "-A", str(folder)], capture_output=True, text=True).stdout.count(".index")
