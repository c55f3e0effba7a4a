"""The Trace page's model picker: the built-in models with their size, licence and speed, opening on the most capable
one that is prepared, and a built-in not prepared yet named with the command that prepares it (nothing runs)."""

import json

import pytest

from flashtrace.app import state as app_state
from flashtrace.engine.models.builtin import BUILTINS
from flashtrace.engine.models.prepare import MARKER, prepared_folder

from .conftest import no_problems

TRACE = "pages/1_Trace.py"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty model cache; `mark(name)` makes a built-in look prepared (its marker, no weights: nothing loads)."""
    monkeypatch.setenv("FLASHTRACE_CACHE", str(tmp_path / "cache"))
    app_state.model_options.clear()

    def mark(name: str) -> None:
        folder = prepared_folder(name)
        folder.mkdir(parents=True)
        (folder / MARKER).write_text(json.dumps({"sha256": BUILTINS[name].sha256, "dtype": "float32"}))
        app_state.model_options.clear()

    yield mark
    app_state.model_options.clear()


def test_the_picker_lists_every_builtin_and_opens_on_the_most_capable_prepared_one(open_page, cache):
    cache("qwen2.5-coder-0.5b")
    at = open_page(TRACE)
    no_problems(at)
    picker = at.selectbox(key="model_choice")
    assert picker.value == "qwen2.5-coder-0.5b"  # the 1.5B is not prepared: the 0.5B is the most capable here
    assert picker.options[:3] == [
        f"qwen2.5-coder-0.5b · 0.63 B · {picker.options[0].rsplit(' · ', 1)[1]}",
        f"smollm2-135m · 0.13 B · {picker.options[1].rsplit(' · ', 1)[1]}",
        f"qwen2.5-coder-1.5b · 1.78 B · {picker.options[2].split(' · ')[2]} · not prepared"]
    assert all(o.endswith(" s/token") for o in picker.options[:2])
    facts = " ".join(c.value for c in at.caption).replace("\\", "")  # shown as plain text: punctuation escaped
    assert "0.63 B parameters, 2.5 GB, Apache-2.0 (upstream model); about " in facts and " here" in facts
    cache("qwen2.5-coder-1.5b")
    assert open_page(TRACE).selectbox(key="model_choice").value == "qwen2.5-coder-1.5b"


def test_a_builtin_not_prepared_names_the_command_and_runs_nothing(open_page, cache):
    at = open_page(TRACE)
    at.selectbox(key="model_choice").set_value("qwen2.5-coder-1.5b").run()
    at.radio(key="mode").set_value("Generate with the model").run()
    at.text_area(key="prompt").input("What is 12 + 7 - 4?").run()
    assert not at.exception
    [warning] = at.warning
    assert "qwen2.5-coder-1.5b is not prepared yet" in warning.value.replace("\\", "")
    assert "`flashtrace prepare --model qwen2.5-coder-1.5b`" in warning.value
    assert at.button(key="generate").disabled
    assert any("Generating needs a model." in c.value for c in at.caption)
