"""The Cancel button and progress bar of a long run in the app (`app.live.cancellable`): however the run ends,
neither stays on the page (issue 48 L7: the bar stayed up after a failed re-run, beside its error)."""

from streamlit.testing.v1 import AppTest


def _failing_run():
    import streamlit as st

    from flashtrace.app.live import cancellable

    try:
        with cancellable("cancel_test", "cancelled_test", "running_test", "Working…", 10.0) as run:
            run.progress(3, 10)
            raise RuntimeError("the model failed")
    except RuntimeError as exc:
        st.error(str(exc))


def _finished_run():
    from flashtrace.app.live import cancellable

    with cancellable("cancel_test", "cancelled_test", "running_test", "Working…", 10.0) as run:
        run.progress(10, 10)


def test_a_failed_run_leaves_its_error_and_no_bar_or_cancel_button():
    at = AppTest.from_function(_failing_run).run()
    assert [e.value for e in at.error] == ["the model failed"]
    assert not at.get("progress") and not [b for b in at.button if b.label == "Cancel"]
    assert at.session_state["running_test"] is None


def test_a_finished_run_leaves_no_bar_or_cancel_button():
    at = AppTest.from_function(_finished_run).run()
    assert not at.get("progress") and not [b for b in at.button if b.label == "Cancel"]
