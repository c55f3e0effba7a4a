"""The Hop graph's intervention panel: step influence by removal beside the hop graph's influence, with their
rank correlation, from the trace when it stores them, else computed here with the trace's model (estimate
first, progress by layer, Cancel) and kept for the session.

Every number comes from `flashtrace.analysis.interventions`; every text from the trace is plain text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from ..analysis.interventions import DROP, intervention_facts, with_interventions
from ..analysis.schema import InterventionRecord, Trace
from ..base.units import time_range
from . import state as app_state, ui
from .live import cancellable
from ..store.pairs import store_interventions

if TYPE_CHECKING:
    from .state import TraceRef

RUN, CANCELLED, SAVED = "interventions_run", "interventions_cancelled", "interventions_saved"


def _key(ref) -> str:
    return f"interventions_{ref}"


def _shown(ref, trace: Trace) -> tuple[Trace, bool]:
    """The trace with its interventions (stored, or computed in this session) and whether they were stored."""
    if trace.interventions is not None:
        return trace, True
    live = st.session_state.get(_key(ref))
    return (with_interventions(trace, InterventionRecord.model_validate(live)) if live else trace), False


def _table(info) -> None:
    rows = [{"step": f"{seg_id}: {label}" if ui.details() else label, "drop": drop, "graph": graph}
            for seg_id, label, drop, graph in zip(info.ids, info.labels, info.drops, info.graph)]
    ui.table(rows, hide_index=True, key="intervention_table", column_config={
        "step": st.column_config.TextColumn("reasoning step", width="large"),
        "drop": st.column_config.NumberColumn("drop when removed", format="%.3f", help=ui.plain(DROP)),
        "graph": st.column_config.NumberColumn("hop-graph influence", format="percent",
                                               help="influence through the step graph, of the answer's attribution")})


def _run(ref, trace: Trace, seconds: float) -> None:
    """Compute the interventions with the trace's model; Cancel stops at the next layer of a forward pass."""
    from ..run.interventions import intervene

    with cancellable("cancel_interventions", CANCELLED, RUN, "Removing each step and sentence…", seconds) as run, \
            app_state.using_model():
        record = intervene(app_state.cached_model(trace.model.name), trace, progress=run.progress)
        st.session_state[_key(ref)] = record.model_dump()
    st.rerun()


def _offer(ref, trace: Trace) -> None:
    """The button that computes the interventions (estimate first), or why there is none."""
    from ..run.interventions import estimate_seconds, plan

    ss = st.session_state
    if ui.read_only():
        st.caption("Step influence by intervention runs the trace's model: switched off in this read-only demo.")
        return
    edits = plan(trace)
    if not any(e.kind == "step" for e in edits):
        st.caption("This trace has no reasoning step before its answer to remove.")
        return
    seconds = estimate_seconds(trace.model, trace, len(edits))
    st.caption(ui.plain(f"Removes each of the {sum(e.kind == 'step' for e in edits):d} reasoning steps and the "
                        f"top, random and gold prompt sentences in turn, and scores the answer each time with "
                        f"{trace.model.name}: about {time_range(seconds / 2, seconds * 2)} (plus the model load on "
                        "first use)."))
    if st.button("Compute step influence by intervention", key="run_interventions"):
        ss[RUN], ss[CANCELLED] = str(ref), False
    if ss.get(RUN) == str(ref) and not ss.get(CANCELLED):
        with ui.shown_errors("Intervention failed: "):
            _run(ref, trace, seconds)
    elif ss.get(CANCELLED):
        st.info("Cancelled: nothing was kept. Compute again to finish.")


def _save(ref, shown: Trace) -> str:
    """Store the computed interventions: in the library trace itself, or (a gallery trace) in a library copy."""
    lib = app_state.library()
    if ref.source == "lib":
        store_interventions(lib, ref.name, shown.interventions)  # onto the file as it is now: a link stays
        return f"Stored in the trace {ui.code_text(ref.name)}."
    name = lib.save(shown, ref.name)
    return f"Saved a copy with it to the library as {ui.code_text(name)}."


def _offer_save(ref, shown: Trace) -> None:
    """The button that stores a step influence computed in this session with the trace."""
    where = "the trace in the library" if ref.source == "lib" else "a copy of this gallery trace in the library"
    if st.button(f"Save it to {where}", key="save_interventions",  # md-ok: constant texts
                 help="so the table shows without a model next time, in the app, the exports and the gallery"):
        with ui.shown_errors("Not saved: "):
            st.session_state[SAVED] = _save(ref, shown)
            st.session_state.pop(_key(ref), None)
            st.rerun()


def intervention_panel(ref: TraceRef, trace: Trace) -> None:
    """Step influence by intervention beside the hop graph's (with the sentence removals), or the offer to
    compute it.

    Interventions stored in the trace are shown as they are; computed ones are kept for the session, with an
    offer to save them into the trace (not in a read-only demo).

    Args:
        ref: The trace's reference (gallery or library); it keys the interventions computed in this session.
        trace: The trace the page shows.
    """
    shown, stored = _shown(ref, trace)
    facts = intervention_facts(shown)
    if facts is None or facts.steps is None:
        _offer(ref, trace)
        return
    _table(facts.steps)
    st.caption(ui.plain(facts.steps.sentence))
    if facts.removal is not None:
        st.caption(ui.plain(facts.removal.sentence))
    source = "stored in the trace" if stored else "computed just now"
    st.caption(ui.plain(f"drop: {DROP}, with {facts.model} ({source}); answer log-probability unedited "
                        f"{facts.before:.3f}."))
    if not stored and not ui.read_only():
        _offer_save(ref, shown)
    if st.session_state.get(SAVED):
        st.success(st.session_state.pop(SAVED))  # md-ok: built from code_text


__all__ = ["intervention_panel"]
