"""Edit and re-run (Story, Explore): remove prompt sentences or reasoning steps, or replace them with text,
then see beside the original the answer's log-probability and its change, the answer the model now writes
(greedy) and the new trace's attribution with a difference heatmap. An estimate first, progress by layer
and a Cancel that stops within a layer; the result is kept for the session, saved to the library as a
linked pair and exported as one offline HTML page. Hidden in a read-only demo.

Every number comes from `flashtrace.analysis.diff`; every text from a trace or the user is plain text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from ..analysis.diff import answer_text, attribution_diff, default_edit, edit_outcome, editable
from ..analysis.schema import Trace
from ..base.units import time_range
from ..store.gallery import list_gallery
from ..store.pairs import linked, save_pair
from ..viz.diff import pair_document, pair_heatmaps
from . import state as app_state, ui
from .export import file_stem
from .live import cancellable

if TYPE_CHECKING:
    from .state import TraceRef

RUN, CANCELLED = "rerun_run", "rerun_cancelled"
MODES = ("remove", "replace with text")
CHART = {"displaylogo": False}


def _key(ref) -> str:
    return f"rerun_{ref}"


def default_new_tokens(trace: Trace) -> int:
    """Room for a response as long as the original's (16 more), within 16..256 tokens.

    Args:
        trace: The original trace.

    Returns:
        The number of reasoning and answer tokens plus 16, clamped to 16..256: the default new-token limit.
    """
    n_response = sum(t.role in ("reasoning", "answer") for t in trace.tokens)
    return min(max(n_response + 16, 16), 256)


def estimate_seconds(trace: Trace, new_tokens: int) -> float:
    """Scoring before and after, generating up to `new_tokens`, and tracing the result (no model load).

    Args:
        trace: The original trace (its model and settings are the re-run's).
        new_tokens: The most tokens the model may generate after the edit.

    Returns:
        The predicted seconds of the whole edit and re-run.
    """
    from ..engine.estimate import estimate
    from ..run.interventions import estimate_seconds as scoring

    n = len(trace.tokens)
    return scoring(trace.model, trace, 1, new_tokens) + estimate(
        trace.model, n + new_tokens // 2, trace.settings.hops, steps=trace.steps is not None).seconds


def edit_words(trace: Trace, segments: list[str], replacement: str | None) -> str:
    """The edit in words: which segments, removed or replaced by what.

    Args:
        trace: The original trace (it labels the segments with their first words).
        segments: The ids of the edited segments (``P0``, ``S1``, ...).
        replacement: The text the segments are replaced with; None or "" when they are removed.

    Returns:
        ``removed <segments>`` or ``replaced <segments> with "<replacement>"``, each segment with its label.
    """
    labels = editable(trace)
    named = "; ".join(f"{s} \u201c{labels.get(s, s)}\u201d" for s in segments)
    return f"replaced {named} with \u201c{replacement}\u201d" if replacement else f"removed {named}"


def _run(ref, trace: Trace, job: dict, seconds: float) -> None:
    """Run the edit with the trace's model; Cancel stops at the next layer of any forward pass."""
    from ..engine.models.progress import each_layer
    from ..run.rerun import edit

    label = "Scoring, generating and tracing again…"
    with cancellable("cancel_rerun", CANCELLED, RUN, label, seconds) as run, app_state.using_model():
        loaded = app_state.cached_model(trace.model.name)
        with each_layer(loaded, run.stop_point):
            result = edit(loaded, trace, job["segments"], job["replacement"], retrace=True,
                          max_new_tokens=job["new_tokens"], progress=run.progress)
        st.session_state[_key(ref)] = {**job, "before": result.before, "after": result.after,
                                       "generated": result.generated, "trace": result.trace, "source": str(ref),
                                       "original_id": trace.id}
    st.rerun()


def _form(ref, trace: Trace) -> dict | None:
    """The edit's widgets; the job to run (segments, replacement, new tokens), None until complete."""
    options = editable(trace)
    if not options:
        st.caption("This trace has no prompt sentence or reasoning step (segments) that can be edited.")
        return None
    first = default_edit(trace)
    steps = {s.id: n for n, s in enumerate((s for s in trace.segments or [] if s.role == "reasoning"), 1)}

    def choice(key: str) -> str:  # as the hop graph numbers steps; segment ids only with Details
        return ui.visible(f"{key}: {options[key]}" if ui.details() else
                          (f"step {steps[key]}: " if key in steps else "") + options[key])

    chosen = st.multiselect("Sentences or steps to edit", list(options), default=[first] if first else [],
                            format_func=choice, key=f"rerun_pick_{ref}",
                            help="prompt sentences and the model's reasoning steps (\"step 2: …\"); the first "
                                 "choice is the top evidence sentence")
    left, right = st.columns([2, 1])
    mode = left.radio("Edit", MODES, horizontal=True, key="rerun_mode")
    new_tokens = right.number_input("New tokens at most", 1, 1024, default_new_tokens(trace), key=f"rerun_new_{ref}",
                                    help="how many tokens the model may write after the edit (greedy)")
    replacement = None
    if mode == MODES[1]:
        replacement = st.text_input("Replacement text", key="rerun_text", max_chars=2000,
                                    help="takes the place of the first chosen segment; the others are removed")
        if not replacement.strip():
            st.caption("Type the replacement text.")
            return None
    if not chosen:
        st.caption("Choose at least one sentence or step.")
        return None
    return {"segments": list(chosen), "replacement": replacement, "new_tokens": int(new_tokens)}


def _offer(ref, trace: Trace) -> None:
    """The form, the estimate and the Run button (with progress and Cancel while it runs)."""
    ss = st.session_state
    job = _form(ref, trace)
    if job is None:
        return
    seconds = estimate_seconds(trace, job["new_tokens"])
    st.caption(ui.plain(f"Scores the answer before and after the edit, lets {trace.model.name} write up to "
                        f"{job['new_tokens']:d} new tokens and traces them: about "
                        f"{time_range(seconds / 2, seconds * 2)} (plus the model load on first use)."))
    if st.button("Edit and re-run", key="run_rerun", type="primary"):
        ss[RUN], ss[CANCELLED] = (str(ref), repr(job)), False
    if ss.get(RUN) == (str(ref), repr(job)) and not ss.get(CANCELLED):
        with ui.shown_errors("Re-run failed: "):
            _run(ref, trace, job, seconds)
    elif ss.get(CANCELLED):
        st.info("Cancelled: nothing was kept. Run again to finish.")


def _save(ref, trace: Trace, done: dict, words: str) -> None:
    """Save the original and the edited trace as a linked pair."""
    lib = app_state.library()
    in_library = ref.source == "lib" and "/" not in ref.name
    edit = {"source": done["source"], "segments": done["segments"], "replacement": done["replacement"],
            "before": done["before"], "after": done["after"], "generated": done["generated"], "words": words}
    names = save_pair(lib, trace, done["trace"], edit, file_stem(ref.name),
                      original_name=ref.name if in_library else None)
    st.session_state[f"{_key(ref)}_saved"] = names


def _results(ref, trace: Trace, done: dict) -> None:
    """The verdict, the new answer, both heatmaps on one scale and the difference; save and export."""
    new = done["trace"]
    new_answer = answer_text(new) if new is not None else (done["generated"] or "")
    outcome = edit_outcome(done["before"], done["after"], answer_text(trace), new_answer)
    words = edit_words(trace, done["segments"], done["replacement"])
    before, after, answer = st.columns([1, 1, 2])
    before.metric("Answer log-probability, original", f"{outcome.before:.3f}")
    after.metric("After the edit", f"{outcome.after:.3f}", delta=f"{outcome.change:+.3f} nats",
                 delta_color="off" if outcome.verdict == "tie" else "normal",
                 help="the original answer, teacher-forced after the edit (summed over its tokens)")
    with answer.container(border=True, key="rerun_new_answer"):
        st.caption("The answer the model now writes (greedy)")
        st.text(ui.visible(new_answer) or "(nothing)")
    st.caption(ui.plain(f"Edit: {words}. {outcome.sentence}"))
    diff = attribution_diff(trace, new) if new is not None else None
    if diff is not None:
        original_fig, edited_fig, diff_fig = pair_heatmaps(trace, new, diff)
        # one under the other at the page's width: side by side, half as wide, token labels ran into each other
        st.plotly_chart(original_fig, key="rerun_original", config=CHART)
        st.plotly_chart(edited_fig, key="rerun_edited", config=CHART)
        st.plotly_chart(diff_fig, key="rerun_difference", config=CHART)
        st.caption(ui.plain(diff.sentence))
    else:
        st.caption("The model wrote nothing after the edit: there is no new trace to compare.")
    title = f"{trace.title or ref.name}: edited and re-run"
    save_col, export_col = st.columns(2)
    if save_col.button("Save both to the library (linked pair)", key="rerun_save", disabled=new is None):
        with ui.shown_errors("Not saved: "):
            _save(ref, trace, done, words)
    export_col.download_button(
        "Pair (offline HTML)", data=lambda: pair_document(trace, new, outcome, diff, words, title),
        file_name=f"{file_stem(ref.name)}-edited-pair.html", mime="text/html", key="rerun_export",
        on_click="ignore", icon=":material/download:",
        help="Both heatmaps, the difference, the log-probability change and the new answer in one HTML file "
             "that needs no network.")
    saved = st.session_state.get(f"{_key(ref)}_saved")
    if saved:
        st.success(f"Saved as {ui.code_text(saved[0])} (original) and {ui.code_text(saved[1])} (edited).")
        st.page_link(ui.PAGES["story"], label=ui.plain(f"Open the edited trace: {saved[1]}"),
                     query_params={"trace": f"lib:{saved[1]}"}, icon=":material/call_split:")


def edit_panel(ref: TraceRef, trace: Trace) -> None:
    """Edit and re-run, behind a toggle (nothing is computed until it is on): the form with its estimate,
    and after a run the result beside the original.

    Only a caption in a read-only demo (the re-run needs the trace's model).

    Args:
        ref: The trace's reference (gallery or library); it keys the result kept for the session.
        trace: The trace the page shows, the original of the edit.
    """
    if ui.read_only():
        st.caption("Edit and re-run runs the trace's model: switched off in this read-only demo.")
        return
    if not st.toggle("Prove it live: edit and re-run", key="rerun_open",
                     help="Remove prompt sentences or reasoning steps (or replace them with your text), then see "
                          "what the model does without them: the answer's log-probability, the answer it now "
                          "writes and the new attribution beside the original."):
        return
    done = st.session_state.get(_key(ref))
    if done is not None and done.get("original_id") != trace.id:
        done = None
    _offer(ref, trace)
    if done is not None:
        _results(ref, trace, done)


def pair_links(ref: TraceRef, trace: Trace) -> None:
    """For a library or gallery trace in a linked pair: a link to the other trace(s).

    Nothing is shown for a trace in no pair; partners missing from the library or gallery are named, not
    linked.

    Args:
        ref: The trace's reference; its source (``lib`` or ``gallery``) says where the partners are looked for.
        trace: The trace the page shows.
    """
    if ref.source not in ("lib", "gallery"):
        return
    if ref.source == "gallery":
        names = {item.name for item in list_gallery()}
        link = linked(None, trace, exists=names.__contains__)
    else:
        link = linked(app_state.library(), trace)
    if link is None:
        return
    lead = "Edited version of" if link.role == "edited" else "Edited versions:"
    where = "library" if ref.source == "lib" else "gallery"
    st.caption(ui.plain(f"{lead} {', '.join(link.others)}"
                        + (f" (missing from the {where}: {', '.join(link.missing)})" if link.missing else "")))
    for name in (n for n in link.others if n not in link.missing):
        # a button, not st.page_link: a page link to the page already open (the Story) does nothing
        if st.button(ui.plain(f"Open {name}"), key=f"open_pair_{name}", icon=":material/call_split:"):
            st.switch_page(ui.PAGES["story"], query_params={"trace": f"{ref.source}:{name}"})


__all__ = ["edit_panel", "pair_links", "default_new_tokens", "estimate_seconds", "edit_words"]
