"""Compare: hop depths side by side (agreement, convergence) and methods side by side (time and live
deletion-curve faithfulness)."""

import streamlit as st

from flashtrace import app_state, ui
from flashtrace.compare import compare_depths
from flashtrace.evaluate.methods import DEFAULT_METHODS
from flashtrace.viz import mass_per_hop, visible_label
from flashtrace.viz.compare import deletion_curves, depth_agreement, depth_strips, method_strips, method_table

picked = ui.trace_page("Compare")
if picked:
    ref, trace = picked
    depths_tab, methods_tab = st.tabs(["Hop depths", "Methods"])
    with depths_tab, ui.shown_errors():
        if trace.settings.hops == 0:
            st.info("This trace has no hops beyond 0; run it with more hops to compare depths.")
        else:
            k = st.slider("k for the top-k overlap", 3, 30, 10, key="depth_k")
            comparison = compare_depths(trace, k=k)
            texts = [t.text for t in trace.tokens]
            st.plotly_chart(depth_strips(comparison, texts), key="depth_strips", config={"displaylogo": False})
            st.plotly_chart(depth_agreement(comparison), key="depth_agreement", config={"displaylogo": False})
            conv = comparison.convergence_depth
            st.markdown(f"The top-{k} prompt tokens stop changing from **K={conv}**." if conv is not None else
                        f"The top-{k} prompt tokens are still changing at the deepest hop computed.")
            st.dataframe([{"depth": f"K={d}", "ρ (left on generated text)": comparison.rho[d],
                           f"top-{k} prompt tokens": " · ".join(visible_label(trace.tokens[i].text, 20)
                                                                for i in comparison.top[d])}
                          for d in comparison.depths], hide_index=True)
            st.plotly_chart(mass_per_hop(trace), key="mass", config={"displaylogo": False})
    with methods_tab:
        st.caption(f"Runs each method live with **{ui.plain(trace.model.name)}** on this trace's prompt, response and target, "
                   "then deletes prompt tokens in 20 steps (one shared deletion set) to measure faithfulness. "
                   "IG and perturbation run the model many times: slow on long traces.")
        chosen = st.multiselect("Methods", list(DEFAULT_METHODS), ["flashtrace-k0", "flashtrace-k1", "ifr", "attention"],
                                key="methods")
        if st.button("Run the comparison", type="primary", disabled=not chosen, key="run_methods"):
            st.session_state["methods_for"] = (str(ref), tuple(chosen))
        if st.session_state.get("methods_for") == (str(ref), tuple(chosen)):
            with ui.shown_errors("Comparison failed: "), st.spinner("Running methods and deletion curves…"):
                record = app_state.method_comparison(ref, chosen)
                st.dataframe(method_table(record), hide_index=True)
                st.plotly_chart(deletion_curves(record), key="deletion", config={"displaylogo": False})
                st.plotly_chart(method_strips(record), key="method_strips", config={"displaylogo": False})
    ui.nav_links(ref, "compare")
