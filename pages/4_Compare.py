"""Compare: hop depths (what each hop adds, agreement, attribution reaching the prompt) and methods side
by side (time and live deletion-curve faithfulness)."""

import streamlit as st

from flashtrace.app import methods as app_methods, state as app_state, ui
from flashtrace.analysis.facts import OF_PROMPT, analyse
from flashtrace.analysis.limits import EVAL_STOP_TOKENS
from flashtrace.app.glossary import help_link
from flashtrace.analysis.story import change_words, depth_table, gold_words, moves_words, reach_words, swap_words
from flashtrace.viz import mass_per_hop, visible_label
from flashtrace.viz.compare import (deletion_curves, depth_agreement, hop_segment_strips, hop_token_strips,
                                    method_strips, method_table, reach_bars)

CHART = {"displaylogo": False}


def hop_depths(trace) -> None:
    """The hop-depth tab: what each hop adds on tokens and sentences, in words and on one colour scale."""
    if trace.settings.hops == 0:
        st.info("This trace has no hops beyond 0; run it with more hops to compare depths.")
        return
    facts = analyse(trace)
    chart = st.container()  # the strips first, their controls in one row under them (720-px screens)
    c1, c2, c3, c4 = st.columns([5, 3, 3, 3])
    view = c1.segmented_control("Show", ["added by each hop", "total after hop K"], default="added by each hop",
                                key="depth_view",
                                help=help_link("rho", "added by each hop: hop K's own contribution ρ(K-1)·a(K), as a "
                                               "share of the final prompt attribution (the hops add up to it); "
                                               "total after hop K: the prompt attribution after hops 0..K, as a "
                                               "share of the prompt's attribution at that depth (the Story's "
                                               "numbers).")) or "added by each hop"
    unit = c2.segmented_control("On", ["sentences", "tokens"], default="sentences", key="depth_unit") or "sentences"
    per_row = c3.toggle("Per-hop scale", value=False, key="depth_per_row",
                        help="Off: one colour scale for every hop, so colours compare across hops. On: each hop's "
                             "row (or column) is scaled to its own maximum.")
    limit = c4.slider("How many", 5, 40, 12 if unit != "tokens" else 30, key=f"depth_limit_{unit}")
    mode = "cumulative" if view == "total after hop K" else "added"
    if unit == "tokens" or facts.piece_kind != "sentence":
        fig = hop_token_strips(facts, [t.text for t in trace.tokens], mode, shared=not per_row, limit=limit)
    else:
        fig = hop_segment_strips(facts, mode, shared=not per_row, limit=limit, details=ui.details())
    chart.plotly_chart(fig, key="hop_strips", config=CHART)
    with st.container(border=True):  # the same in words
        for line in (reach_words(facts), change_words(facts), swap_words(facts), moves_words(facts), gold_words(facts)):
            if line:
                st.text(ui.visible(line))
    k = st.slider("k for the top-k overlap", 3, 30, 10, key="depth_k")
    comparison = facts.comparison(k)
    left, right = st.columns(2)
    with left:
        st.plotly_chart(depth_agreement(comparison), key="depth_agreement", config=CHART)
        conv = comparison.convergence_depth
        st.caption(f"Top-{k:d} prompt tokens: stable (overlap ≥ 90 % with every deeper depth) from K={conv:d}."
                   if conv is not None else f"Top-{k:d} prompt tokens: still changing at the deepest hop computed.")
    with right:
        st.plotly_chart(reach_bars(facts), key="reach_bars", config=CHART)
        st.caption("Each bar: the share of the answer's attribution on the input after hops 0..K, split by the hop "
                   "that moved it there. ρ (in the table) is the share still on the model's own text.")
    rows = depth_table(facts, compact=True)
    extra = [({"ρ": f"{d.rho:.3f}"} if ui.details() else {}) for d in facts.depths]
    ui.table([{**row, **more} for row, more in zip(rows, extra)], hide_index=True, key="depth_table")
    st.caption(f"reached the input: share {ui.plain(facts.of_answer)} · its share: the top sentence's share "
               f"{ui.plain(OF_PROMPT)} "
               "after hops 0..K")
    # the expanders are filled when opened: each table or chart drawn costs the page's first load
    words = st.expander(f"Top-{k:d} prompt words at each depth", key="depth_words", on_change="rerun")
    if words.open:
        words.dataframe([{"depth": row["depth"], "words": " · ".join(visible_label(trace.tokens[i].text, 20)
                                                                     for i in comparison.top[d.k])}
                         for row, d in zip(rows, facts.depths)], hide_index=True)
    mass = st.expander("Attribution mass per hop (chart)", key="depth_mass", on_change="rerun")
    if mass.open:
        mass.plotly_chart(mass_per_hop(facts), key="mass", config=CHART)


def _method_choice(trace) -> tuple[list[str], str]:
    """The methods chosen (the slow ones offered only when asked for) and the deletion scoring precision."""
    ss = st.session_state
    slow = st.checkbox("Offer the slow methods (IG and segment ablation run the model many times: minutes on long "
                       "traces)", key="methods_slow")
    options = [*app_methods.FAST_METHODS, *(app_methods.SLOW_METHODS if slow else ())]
    ss["methods"] = [m for m in ss.get("methods", app_methods.DEFAULT_CHOICE) if m in options]
    chosen = st.multiselect("Methods", options, key="methods")
    stops = trace.settings.stop_tokens
    if stops != EVAL_STOP_TOKENS:  # the evaluation's method rows are fixed (FlashTrace's and IFR's stop tokens)
        st.caption(f"FlashTrace and IFR run here with the {ui.code_text(EVAL_STOP_TOKENS)} stop tokens, as in the "
                   f"evaluation's tables; this trace was made with "
                   f"{ui.code_text(stops if isinstance(stops, str) else ' '.join(stops))}, so its own scores can "
                   f"differ from the flashtrace-kK rows.")
    offered = app_methods.precisions(trace)
    precision = offered[0] if len(offered) == 1 else st.radio(
        "Deletion scoring", offered, format_func=lambda p: f"{p} ({'faster' if p == offered[0] else 'exact'})",
        horizontal=True, key="methods_precision",
        help="A copy of the model whose matrix products run in bfloat16 scores the deletion curves ~1.7x faster "
             "on this processor; float32 scores them in the model itself (docs/evaluation.md compares the two).")
    return chosen, precision


def _run_pending(trace, key: tuple, chosen: list[str], precision: str) -> None:
    """The estimate, the Run button and the live run of the chosen methods not run yet (or the word that it was
    cancelled)."""
    ss = st.session_state
    results = ss["methods_results"]
    pending = [m for m in chosen if m not in results]
    plan = app_methods.comparison_plan(trace, pending, first=not results, warm=app_methods.is_warm(key[:3]),
                                       precision=precision)
    estimated = st.empty()  # cleared once the run is over
    if pending:
        estimated.caption(ui.plain(f"Estimated {app_state.time_range(*plan.range())} for {len(pending):d} method(s) "
                                   f"on {len(trace.tokens):,} tokens" + ("" if plan.setup == 0 else ", with the warm-up")))
    if st.button("Run the comparison", type="primary", disabled=not pending, key="run_methods"):
        ss["methods_run"], ss["methods_cancelled"] = (key, tuple(chosen)), False
    if pending and ss.get("methods_run") == (key, tuple(chosen)) and not ss.get("methods_cancelled"):
        with ui.shown_errors("Comparison failed: "):
            app_methods.run_comparison(key[:3], pending, results, plan, precision)
            estimated.empty()
    elif pending and ss.get("methods_cancelled"):
        st.info("Cancelled. " + ("Shown: what finished; run" if any(m in results for m in chosen) else "Run")
                + " the comparison again for the rest.")


def _method_results(chosen: list[str]) -> None:
    """What the runs gave: the warm-up and timing captions, the table, the deletion curves and the strips."""
    ss = st.session_state
    record = app_methods.combined(ss["methods_results"], chosen)
    if ss.get("methods_warmup"):
        st.caption("Warm-up, once for this trace and in no method's time: "
                   + " · ".join(f"{step} {sec:.1f} s" for step, sec in ss["methods_warmup"].items()))  # md-ok
    if ss.get("methods_timing"):
        st.caption(app_methods.timing_caption(ss["methods_timing"]))  # md-ok: numbers and constant names
    if record:
        ui.table(method_table(record), hide_index=True, key="method_table")
        st.caption(app_methods.precision_caption(record))  # md-ok: a constant sentence or an escaped dtype name
        st.plotly_chart(deletion_curves(record), key="deletion", config=CHART)
        st.plotly_chart(method_strips(record), key="method_strips", config=CHART)


def methods(ref, trace) -> None:
    """The methods tab: methods run live on this trace one at a time (progress, elapsed time, cancel), with the
    warm-up timed apart; then time and deletion-curve faithfulness side by side."""
    ss = st.session_state
    st.caption(f"Runs each method live with **{ui.plain(trace.model.name)}** on this trace's prompt, response and "
               "target, then deletes prompt tokens in 20 steps to measure faithfulness (each deletion state is one "
               "model run, shared by the methods that reach it). The warm-up (model load, forward pass, first-use "
               "setup) runs once per trace and is timed apart from every method.")
    chosen, precision = _method_choice(trace)
    key = (*app_methods.stamp(ref), precision)
    if ss.get("methods_key") != key:  # results of one trace and precision at a time
        ss["methods_key"], ss["methods_results"], ss["methods_warmup"], ss["methods_timing"] = key, {}, None, None
    _run_pending(trace, key, chosen, precision)
    _method_results(chosen)


picked = ui.trace_page("Compare")
if picked:
    ref, trace = picked
    read_only = ui.read_only()  # the Methods tab runs models: not in a read-only demo
    tabs = st.tabs(["Hop depths"] if read_only else ["Hop depths", "Methods"])
    with tabs[0], ui.shown_errors():
        hop_depths(trace)
    if not read_only:
        with tabs[1]:
            methods(ref, trace)
    ui.nav_links(ref, "compare")
