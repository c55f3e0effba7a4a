"""Hop graph: prompt segments → reasoning steps → answer, with a threshold and click-to-drill-down."""

import streamlit as st

from flashtrace import app_state, ui
from flashtrace.viz import step_values, token_heatmap, tokens_html
from flashtrace.viz.graph import hop_graph_figure, selected_node

NONE = "(none)"
THRESHOLDS = [f"{t / 100:.2f}" for t in (0, 1, 2, 3, 5, 8, 10, 15, 20, 30, 40, 50)]

picked = ui.trace_page("Hop graph")
if picked:
    ref, trace = picked
    if trace.steps is None:
        st.warning("This trace has no step-level attribution. Re-run it on the Trace page with "
                   "'Step-level data for the hop graph' ticked.")
        st.stop()
    tau = ui.synced(st.select_slider, "Edge threshold (edges below it are dropped; the rest renormalised)",
                    "tau", THRESHOLDS, "0.05")
    with ui.shown_errors():
        graph = app_state.hop_graph(ref, float(tau))
        ids = graph.nodes()
        node = st.query_params.get("node")
        event = st.plotly_chart(hop_graph_figure(graph, trace, selected=node), key="graph", on_select="rerun",
                                selection_mode="points", config={"displaylogo": False})
        clicked = selected_node(event)
        if clicked and clicked != st.session_state.get("last_click"):
            st.session_state["last_click"] = clicked
            st.query_params["node"] = clicked
            st.rerun()
        paths = graph.strongest_paths(5)
        with st.expander("Strongest paths from the answer back to the prompt", expanded=True):
            st.dataframe([{"path": " ← ".join(p.nodes), "hops": p.hops, "strength": p.strength} for p in paths],
                         hide_index=True)
        node = ui.synced(st.selectbox, "Node (or click one in the graph)", "node", [NONE, *ids], NONE)
        if node == NONE:
            st.caption("Click a node to see its own attribution: what a step or the answer draws on, or which "
                       "steps use a prompt sentence.")
        else:
            info = graph.graph.nodes[node]
            st.subheader(f"{node}: {info['role']} · tokens {info['start']}:{info['end']}", anchor=False)
            if info["role"] in ("reasoning", "answer") and node in trace.steps.vectors:
                values = step_values(trace, node)
                window = ui.heatmap_window(trace, values, list(range(info["start"])), param=None)
                fig = token_heatmap(trace, values=values, token_range=window,
                                    title=f"What {node} draws on (its own attribution, share of its mass)")
                box = st.container(height=520) if fig.layout.height > 520 else st.container()
                box.plotly_chart(fig, key="node_heatmap", config={"displaylogo": False})
                incoming = graph.incoming(node)
                st.dataframe([{"from": src, "role": graph.graph.nodes[src]["role"], "share": share}
                              for src, share in sorted(incoming.items(), key=lambda kv: -kv[1])],
                             hide_index=True, column_config={"share": st.column_config.ProgressColumn(
                                 format="%.3f", min_value=0.0, max_value=1.0)})
            else:
                st.html(tokens_html(trace, token_range=(info["start"], info["end"]), max_height_px=240))
                used_by = [{"step": dst, "share": share} for _src, dst, share in graph.graph.out_edges(node, data="share")]
                depth = graph.hop_depths().get(node)
                st.caption(f"Hop depth: {depth if depth is not None else 'not reached at this threshold'}")
                st.dataframe(used_by, hide_index=True)
    ui.nav_links(ref, "graph")
