"""Explore a trace: token heatmap per hop, text view, segments, top-k table and mass per hop. Rows (heatmap)
and sentences (text) without salient tokens start folded, so the reasoning and the answer show without an
inner scroll box; hop views share one colour scale by default so hops compare by colour."""

import streamlit as st

from flashtrace.app import ui
from flashtrace.app.export import export_buttons
from flashtrace.analysis.facts import analyse
from flashtrace.app.glossary import help_link
from flashtrace.app.rerun import edit_panel, pair_links
from flashtrace.viz import mass_per_hop, token_heatmap, tokens_html, top_tokens, view_values
from flashtrace.viz.heatmap import top_tokens_html
from flashtrace.viz.segments import segment_bars
from flashtrace.viz.tokens import salient_positions, scale_maxima

SCALES = {"shared": "shared across hops", "own": "this hop only"}

picked = ui.trace_page("Explore", "Explore a trace")
if picked:
    ref, trace = picked
    pair_links(ref, trace)
    c1, c2 = st.columns([3, 2])
    with c1:
        hop_label = ui.synced(st.segmented_control, "Hop", "hop", ui.hop_options(trace), "combined",
                              help=help_link("hop", "combined: the final prompt attribution (all hops); k: hop k's "
                                                    "own attribution."))
    with c2:
        view = ui.synced(st.segmented_control, "View", "view", ["heatmap", "text", "segments"], "heatmap")
    hop = None if hop_label == "combined" else int(hop_label)
    chart, options = st.container(), st.columns([3, 2], vertical_alignment="bottom")
    with options[0]:
        scale = ui.synced(st.radio, "Colour scale of hop views", "scale", list(SCALES), "shared",
                          format_func=SCALES.get, horizontal=True, disabled=hop is None,
                          help="shared: one scale for hops 0..K, so the same colour is the same share of a hop's "
                               "mass in every hop; this hop only: the scale tops at this hop's largest value. "
                               "The combined view always has its own scale. Target tokens are never on it.")
    with options[1]:
        every = ui.synced(st.segmented_control, "Tokens", "tokens", ["salient", "all"], "salient",
                          help="salient: heatmap rows, text sentences and segment bars without a salient token are folded "
                               "(the text view opens them on click); all: every token")
    values = view_values(trace, hop)
    positions = trace.positions("prompt") if hop is None else trace.positions("prompt", "reasoning", "answer")
    top = scale_maxima(trace, hop, shared=scale == "shared")
    facts = analyse(trace)
    gold = set(facts.gold.positions) if facts.gold else set()
    keep = salient_positions(trace, values, positions) | gold if every == "salient" else None  # gold never folds
    note = ("combined view: own scale" if hop is None else
            f"hop {hop}, scale {'shared by hops 0–' + str(len(trace.hops) - 1) if scale == 'shared' else 'of this hop only'}")
    fig = text_html = None
    with chart, ui.shown_errors():
        if view == "heatmap":
            window = ui.heatmap_window(trace, values, positions, gold=gold & set(positions))
            fig = token_heatmap(trace, hop=hop, token_range=window, top=top, keep=keep, details=ui.details())
            if scale == "shared" and hop is not None:
                fig.update_layout(title_text=fig.layout.title.text + " · scale shared across hops")
            st.plotly_chart(fig, key="heatmap", config={"displaylogo": False})
            if fig.layout.meta["gold"]:
                st.caption("Dotted gold outlines: the known evidence (gold) for this task.")
            if fig.layout.meta["folded"]:
                hidden = sum(b - a for a, b in fig.layout.meta["folded"])
                st.caption(f"{hidden:,} tokens on rows without a salient token are folded (dotted lines, ⋯); "
                           "choose Tokens: all to show them. Target tokens are outlined and left out of the scale.")
        elif view == "text":
            text_html = tokens_html(trace, hop=hop, max_height_px=None, top=top, keep=keep, legend=note)
            st.html(text_html)
        else:
            fig = segment_bars(trace, hop=hop, keep=keep)
            st.plotly_chart(fig, key="segments", config={"displaylogo": False})
    with ui.shown_errors():
        export_buttons(f"{ref.name}-{view}", trace.title or ref.name, [b for b in (fig, text_html) if b is not None],
                       fig, key="explore_export")
    left, right = st.columns([2, 3])
    with left, ui.shown_errors():
        k = st.slider("Top-k", 5, 50, 10, key="topk")
        # a plain table: a data grid would load ~1.6 MB of scripts for ten rows (issue 28: first load)
        st.html(top_tokens_html(top_tokens(trace, hop=hop, k=k, details=ui.details())))
        st.caption("Share of " + ("the prompt's attribution" if hop is None else f"hop {hop:d}'s own attribution")
                   + "; tokens made only of punctuation (such as - = : ,) are left out.")
    with right, ui.shown_errors():  # filled when opened: a second chart costs the page's first load ~0.3 s
        mass = st.expander("Attribution mass per hop (chart)", key="explore_mass", on_change="rerun")
        if mass.open:
            mass.plotly_chart(mass_per_hop(facts), key="mass", config={"displaylogo": False})
    with st.container(border=True, key="explore_rerun"):
        edit_panel(ref, trace)
    ui.nav_links(ref, "explore")
