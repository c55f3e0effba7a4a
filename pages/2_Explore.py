"""Explore a trace: token heatmap per hop, text view, segments, top-k table and mass per hop."""

import streamlit as st

from flashtrace import ui
from flashtrace.viz import mass_per_hop, token_heatmap, tokens_html, top_tokens, view_values
from flashtrace.viz.segments import segment_bars

picked = ui.trace_page("Explore", "Explore a trace")
if picked:
    ref, trace = picked
    c1, c2 = st.columns([3, 2])
    with c1:
        hop_label = ui.synced(st.segmented_control, "Hop", "hop", ui.hop_options(trace), "combined",
                              help="combined: the final prompt attribution (all hops); k: hop k's own attribution")
    with c2:
        view = ui.synced(st.segmented_control, "View", "view", ["heatmap", "text", "segments"], "heatmap")
    hop = None if hop_label == "combined" else int(hop_label)
    with ui.shown_errors():
        if view == "heatmap":
            shown = trace.positions("prompt") if hop is None else trace.positions("prompt", "reasoning", "answer")
            window = ui.heatmap_window(trace, view_values(trace, hop), shown)
            fig = token_heatmap(trace, hop=hop, token_range=window)
            box = st.container(height=640) if fig.layout.height > 640 else st.container()
            box.plotly_chart(fig, key="heatmap", config={"displaylogo": False})
        elif view == "text":
            st.html(tokens_html(trace, hop=hop, max_height_px=640))
        else:
            fig = segment_bars(trace, hop=hop)
            box = st.container(height=640) if fig.layout.height > 640 else st.container()
            box.plotly_chart(fig, key="segments", config={"displaylogo": False})
    left, right = st.columns([2, 3])
    with left, ui.shown_errors():
        k = st.slider("Top-k", 5, 50, 10, key="topk")
        st.dataframe(top_tokens(trace, hop=hop, k=k), hide_index=True,
                     column_config={"score": st.column_config.NumberColumn(format="%.4f")})
    with right, ui.shown_errors():
        st.plotly_chart(mass_per_hop(trace), key="mass", config={"displaylogo": False})
    ui.nav_links(ref, "explore")
