"""Issue 30, the read-only demo mode (AppTest): no control that writes or runs a model is on any page, and
crafted query parameters and session states trigger none of them; the library folder is left as it was."""

import json
import os

import pytest

from flashtrace.app import state as app_state
from flashtrace.store.app_files import READ_ONLY_ENV
from flashtrace.store.library import Library, LibraryError
from tests.bad_files import gallery_data

from .conftest import APP

PAGES = ["pages/1_Trace.py", "pages/2_Explore.py", "pages/3_Hop_graph.py", "pages/4_Compare.py",
         "pages/5_Library.py", "pages/6_Evaluation.py", "pages/7_Story.py", "pages/8_Glossary.py"]
WRITE_OR_RUN = {"run", "generate", "load_preset", "import", "rename", "delete", "run_methods", "story_run_check",
                "cancel_methods"}
CRAFTED_STATE = {"methods_run": ("lib:good", ("flashtrace",)), "methods": ["flashtrace", "ifr"],
                 "methods_cancelled": False, "pending_prompt": "x", "pending_response": "y", "prompt": "Hi",
                 "response": "Answer: 1", "library_pick": "good", "model_choice": "tiny-llama"}


@pytest.fixture
def demo(library_dir, monkeypatch):
    """A read-only server with one library trace; any model load fails the test."""
    monkeypatch.setenv(READ_ONLY_ENV, "1")
    library_dir.mkdir(parents=True)
    (library_dir / "good.json").write_text(json.dumps(gallery_data("free-form")), encoding="utf-8")
    loads = []

    def refuse(name, *args, **kwargs):
        loads.append(name)
        raise AssertionError(f"a model was loaded: {name}")

    import flashtrace.engine.models as models

    monkeypatch.setattr(models, "load_model", refuse)
    app_state.cached_model.clear()
    return library_dir, loads


def snapshot(folder) -> dict:
    return {p.name: (p.stat().st_ino, p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir()}


def controls(at) -> set[str]:
    """The write or run controls on the page (buttons and form buttons by key, a file uploader, the
    Evaluation page's free folder path)."""
    keys = {b.key for b in at.button} | {b.key for b in at.get("form_submit_button")}
    found = {k for k in keys if k in WRITE_OR_RUN}
    if at.get("file_uploader"):
        found.add("file_uploader")
    if any(t.key == "eval_path" for t in at.text_input):
        found.add("eval_path")
    return found


@pytest.mark.parametrize("page", PAGES)
def test_no_write_or_run_control_on_any_page(demo, page):
    from streamlit.testing.v1 import AppTest

    folder, loads = demo
    before = snapshot(folder)
    for query in ({}, {"trace": "lib:good", "step": "5", "node": "A", "run": "1"}, {"trace": "gallery:needle"}):
        at = AppTest.from_file(APP, default_timeout=90)
        at.run()
        for key, value in query.items():
            at.query_params[key] = value
        for key, value in CRAFTED_STATE.items():
            at.session_state[key] = value
        at.switch_page(page).run()
        assert not at.exception, [e.message for e in at.exception]
        assert controls(at) == set(), (page, query)
    assert loads == []
    assert snapshot(folder) == before  # nothing written, renamed, deleted; no index file either


def test_home_has_no_start_link_and_says_it_is_a_demo(demo):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    assert not at.exception
    shown = " ".join(str(e.proto) for e in at.get("page_link"))
    assert "Start a new trace" not in shown and "1_Trace.py" not in shown
    assert any("Read-only demo" in c.value for c in at.caption)


def test_the_server_refuses_writes_and_model_runs_whatever_asks(demo):
    folder, loads = demo
    lib = app_state.library()
    assert lib.read_only and [e.name for e in lib.entries()] == ["good"]
    for action in (lambda: lib.delete("good"), lambda: lib.rename("good", "other"),
                   lambda: lib.import_json(json.dumps(gallery_data("free-form")), name="x"),
                   lambda: lib.save(lib.open("good"), "y")):
        with pytest.raises(LibraryError, match="read-only"):
            action()
    with pytest.raises(app_state.ReadOnlyError):
        app_state.cached_model("tiny-llama")
    with pytest.raises(app_state.ReadOnlyError):
        app_state.live_faithfulness("lib:good")
    assert loads == [] and sorted(os.listdir(folder)) == ["good.json"]


def test_the_flag_is_documented_and_sets_the_mode():
    from flashtrace.cli import build_parser

    parser = build_parser(only="app")
    args = parser.parse_args(["app", "--read-only"])
    assert args.read_only and "--read-only" in parser.commands["app"].format_help()
