"""Hop graph: prompt segments → reasoning steps → answer, pruned by influence, with click-to-drill-down."""

import streamlit as st

from flashtrace.app import state as app_state, ui
from flashtrace.app.export import export_buttons
from flashtrace.app.glossary import help_link
from flashtrace.app.interventions import intervention_panel
from flashtrace.analysis.facts import OF_PROMPT, analyse
from flashtrace.analysis.graph import OTHER
from flashtrace.analysis.graph_words import graph_words, path_words
from flashtrace.viz import step_values, token_heatmap, tokens_html
from flashtrace.viz.tokens import plotly_text
from flashtrace.viz.graph import (ROLE_NAMES, evidence_paths, hop_graph_figure, node_label, node_links, path_text,
                                  selected_node)
from flashtrace.viz.report import static_graph

NONE = "(none)"


def named(graph, node: str, chars: int = 48) -> str:
    """A node in words: its (distinct) label, with its id in front when the reader asked for details."""
    label = node_label(graph, node, chars)
    return f"{node}: {label}" if ui.details() else label
KEEP = ["50%", "60%", "70%", "80%", "90%", "95%", "100%"]

picked = ui.trace_page("Hop graph")
if picked:
    ref, trace = picked
    if trace.steps is None:
        st.warning("This trace has no step-level attribution. Re-run it on the Trace page with "
                   "'Step-level data for the hop graph' ticked.")
        st.stop()
    chart = st.container()  # the graph first, its controls in one row under it (the graph fits a 720-px screen)
    left, right = st.columns([3, 2], vertical_alignment="center")
    with left:
        keep = ui.synced(st.select_slider, "Influence shown", "keep", KEEP, "80%",
                         help=help_link("threshold", "Keep the input sentences that together carry this much of the "
                                        "answer's attribution reaching the input (plus what each reasoning step reads "
                                        "most), and the edges that carry 98 % of the influence. Shares are shown as "
                                        "measured, never rescaled."))
    with right:
        show_all = st.toggle("Show every input sentence", value=st.query_params.get("inputs") == "all", key="all_inputs",
                             help="By default the less influential input sentences fold into one "
                                  "'other context' node so the graph stays readable.")
    if show_all != (st.query_params.get("inputs") == "all"):
        st.query_params["inputs"] = "all" if show_all else "folded"
    with ui.shown_errors():
        full = app_state.hop_graph(ref, 0.0)
        graph = full.pruned(node_threshold=int(keep.rstrip("%")) / 100, fold=not show_all)
        ids = [*graph.nodes(), *(n for n in full.nodes() if n not in graph.graph)]
        link = {**node_links(graph), **node_links(full)}  # the URL names a step as the page does: node=step-3
        unlink = {**{n: n for n in ids}, **{name: n for n, name in link.items()}}  # an id (older links) still opens
        node = unlink.get(st.query_params.get("node", ""))
        graph_fig = hop_graph_figure(graph, trace, selected=node, ids=ui.details())
        event = chart.plotly_chart(graph_fig, key="graph", on_select="rerun", selection_mode="points",
                                   config={"displaylogo": False})
        clicked = selected_node(event)
        if clicked and clicked != st.session_state.get("last_click"):
            st.session_state["last_click"] = clicked
            st.query_params["node"] = link.get(clicked, clicked)
            st.rerun()
        st.caption("Node size: influence on the answer (the answer's attribution followed back along every path). "
                   "Dotted purple: the strongest path to each of the three strongest pieces of evidence (as ranked "
                   "below). "
                   "Click a node to see its own attribution: what a step or the answer draws on, or which steps use "
                   "a prompt sentence.")
        static = static_graph(graph_fig)
        export_buttons(f"{ref.name}-hop-graph", trace.title or ref.name, [static], static, key="graph_export")
        facts = analyse(trace)
        st.caption(ui.plain(graph_words(facts)))
        why = path_words([path for _n, _v, path in evidence_paths(graph, trace=trace)])
        if why:
            st.caption(ui.plain(why))
        ranked = facts.evidence()
        evidence = ranked[:5] + [row for row in ranked[5:] if row[0].gold]  # the known evidence, however low it ranks
        rank = {piece.key: r for r, (piece, _) in enumerate(ranked, 1)}
        graph_share = {p.key: float(facts.graph.shares[i]) for i, p in enumerate(facts.pieces)} if facts.graph else {}
        with st.expander("Evidence: the prompt sentences the answer rests on most (the trace's hop scores, as on every "
                         "page), with their influence through this graph", expanded=True):
            paths = {piece.key: graph.strongest_path_to(piece.key) for piece, _ in evidence}
            ui.table([{"rank": rank[piece.key],
                           "sentence": f"{piece.key}: {piece.label}" if ui.details() else piece.label,
                           "share": share, "graph": graph_share.get(piece.key), "gold": "gold" if piece.gold else "",
                           "strongest path": path_text(graph, paths[piece.key], 18, ui.details()) if paths[piece.key] else
                           "(not shown at this setting)"} for piece, share in evidence],
                         hide_index=True, key="evidence_table", column_config={
                             "rank": st.column_config.NumberColumn(width="small"),
                             "sentence": st.column_config.TextColumn(width="medium"),
                             "share": st.column_config.ProgressColumn(
                                 format="percent", min_value=0.0, width="small", help=f"share {ui.plain(OF_PROMPT)}",
                                 max_value=max([v for _, v in evidence], default=1.0)),
                             "graph": st.column_config.NumberColumn(
                                 format="percent", width="small",
                                 help="influence through the graph, as a share of all the prompt influence the graph "
                                      "carries (a different quantity)"),
                             "gold": st.column_config.TextColumn(width="small", help="known evidence"),
                             "strongest path": st.column_config.TextColumn(width="medium")})
            st.caption(f"share: {ui.plain(OF_PROMPT)} after all hops (the ranking every page shows) · graph: influence "
                       "through the step graph, a share of all the prompt influence it carries")
        with st.expander("The chain: what each reasoning step and the answer read most in the prompt"):
            rows = []
            for dst, srcs in full.step_sources(2).items():
                reads = [f"{named(full, src, 34)} ({full.share(src, dst):.0%})" for src in srcs]
                rows.append({"step": named(full, dst, 40), "reads most": (reads + [""])[0],
                             "then": (reads + ["", ""])[1]})
            ui.table(rows, hide_index=True)
        with st.expander("Step influence by intervention: how far the answer's log-probability falls when each step "
                         "is removed, beside the hop graph's influence", expanded=trace.interventions is not None):
            intervention_panel(ref, trace)
        if st.query_params.get("node") in unlink and node is not None and st.query_params["node"] != link[node]:
            st.query_params["node"] = link[node]  # an older link's id, written as the page names it
        chosen = ui.synced(st.selectbox, "Node (or click one in the graph)", "node", [NONE, *(link[n] for n in ids)],
                           NONE, format_func=lambda name: name if name == NONE else
                           named(full if unlink[name] in full.graph else graph, unlink[name]))
        node = unlink.get(chosen, NONE)
        if node in graph.graph and graph.graph.nodes[node].get("folded"):  # other context, or a run of steps
            info = graph.graph.nodes[node]
            st.subheader(f"Other context: {len(info['folded']):d} input sentences folded together" if node == OTHER
                         else f"{len(info['folded']):d} reasoning steps folded together", anchor=False)
            influence = full.influence()
            ui.table([{"sentence" if node == OTHER else "step": named(full, n, 80), "influence": influence[n]}
                          for n in sorted(info["folded"], key=lambda n: -influence[n])], hide_index=True)
        elif node != NONE:
            info = full.graph.nodes[node]
            role = ROLE_NAMES.get(info["role"], info["role"])
            label, text = node_label(full, node, 60), " ".join(info["text"].split())
            st.subheader((f"{ui.plain(node)}: " if ui.details() else "") + f"{ui.plain(role.capitalize())} · "
                         f"“{ui.plain(label)}”", anchor=False)
            if label != text:
                st.text(ui.visible(text))  # the whole text, when the heading had to shorten it
            if info["role"] in ("reasoning", "answer") and node in trace.steps.vectors:
                values = step_values(trace, node)
                window = ui.heatmap_window(trace, values, list(range(info["start"])), param=None)
                fig = token_heatmap(trace, values=values, token_range=window, share_of="of this step's own attribution",
                                    title=f"What “{plotly_text(label)}” draws on (its own attribution, as shares of it)")
                box = st.container(height=520) if fig.layout.height > 520 else st.container()
                box.plotly_chart(fig, key="node_heatmap", config={"displaylogo": False})
                incoming = full.incoming(node)
                ui.table([{"from": named(full, src, 60),
                               "role": ROLE_NAMES.get(full.graph.nodes[src]["role"]), "share": share}
                              for src, share in sorted(incoming.items(), key=lambda kv: -kv[1])],
                             hide_index=True, column_config={"share": st.column_config.ProgressColumn(
                                 format="%.3f", min_value=0.0, max_value=1.0)})
            else:
                st.html(tokens_html(trace, token_range=(info["start"], info["end"]), max_height_px=240))
                used_by = [{"step": named(full, dst, 60), "share": share} for dst, share in full.outgoing(node).items()]
                depth = full.hop_depths().get(node)
                st.caption(f"Influence on the answer: {full.influence()[node]:.1%} · fewest hops from the answer: "
                           + (f"{depth:d}" if depth is not None else "not reached"))
                ui.table(used_by, hide_index=True)
    ui.nav_links(ref, "graph")
