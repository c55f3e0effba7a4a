"""Real browser: the Trace page lists the built-in models with their facts, and a user traces with the built-in
Qwen2.5-Coder-0.5B: its reasoning streams in while it is written, then the trace runs and is saved. The model is
prepared by the suite itself (cached after the first time)."""

import re
import time

import pytest

from flashtrace.engine.models.prepare import prepare_builtin
from flashtrace.store.library import LIBRARY_ENV

from .browser import ROOT, app_server, settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]
NAME = "qwen2.5-coder-0.5b"
SHOTS = ROOT / "test-artifacts"


@pytest.fixture(scope="module")
def prepared():
    return prepare_builtin(NAME)


def _pick_model(page, name: str) -> None:
    for _attempt in range(3):  # a click landing while the page still reruns can be dropped: try again
        page.locator('[data-testid="stSelectbox"]').first.click()
        try:
            page.get_by_role("option", name=re.compile(rf"^{re.escape(name)} ")).click(timeout=15_000)
            return
        except Exception:  # noqa: BLE001 - retried
            settle(page)
    raise AssertionError(f"could not pick {name}")


def test_a_user_traces_with_the_built_in_qwen_and_sees_its_reasoning_stream(prepared, tmp_path, browser):
    with app_server({LIBRARY_ENV: str(tmp_path / "library")}) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/Trace", timeout=90_000)
        page.get_by_role("heading", name="Run a trace").wait_for(timeout=90_000)
        settle(page)
        page.locator('[data-testid="stSelectbox"]').first.click()
        listed = page.get_by_role("option").all_inner_texts()
        page.keyboard.press("Escape")
        for built_in in ("qwen2.5-coder-1.5b", NAME, "smollm2-135m"):
            assert any(text.startswith(built_in) for text in listed), listed
        assert any(re.match(rf"{re.escape(NAME)} · 0\.63 B · \d\.\d\d s/token$", text) for text in listed), listed
        settle(page)
        _pick_model(page, NAME)
        settle(page)
        facts = page.get_by_text(re.compile(r"0\.63 B parameters, 2\.5 GB, Apache-2\.0 .* per generated token"))
        assert facts.count() == 1
        page.get_by_text("Generate with the model").click()
        settle(page)
        prompt = page.get_by_label("Prompt")
        prompt.fill("Tom has 12 marbles. He loses 4 and then finds 7 more. How many marbles does Tom have now?")
        prompt.press("Tab")
        page.get_by_text("Generating needs a prompt.").wait_for(state="detached", timeout=60_000)
        settle(page, timeout=180_000)  # the estimate loads the model once (seconds)
        assert page.get_by_text(re.compile(r"Generating up to 256 tokens after a \d+-token prompt: about")).count() == 1
        page.get_by_role("button", name="Generate response").click()

        streamed = page.locator('[data-testid="stText"]')
        lengths = []
        deadline = time.time() + 240  # a guard against a hung generation, not a speed claim
        while time.time() < deadline:
            texts = streamed.all_inner_texts()  # no wait: the panel may go between a count and a read
            if texts:
                lengths.append(len(texts[0]))
            elif lengths:
                break  # the panel is gone: generation finished
            page.wait_for_timeout(250)
        assert len(set(lengths)) >= 3 and lengths == sorted(lengths), lengths  # it grew while the model wrote
        settle(page, timeout=120_000)
        response = page.get_by_label("Response (reasoning, then the answer)").input_value()
        assert re.search(r"\b15\b", response), response
        page.screenshot(path=str(SHOTS / "trace_qwen_generated.png"), full_page=True)
        page.get_by_role("button", name="Run trace").click()
        page.get_by_text(re.compile("Saved to the library as")).wait_for(timeout=300_000)
        settle(page)
        page.close()
