"""FlashTrace Studio: the entry point. Registers the pages (one file per view in pages/) and holds the
home page: what the tool does, the gallery of precomputed traces, recent library traces, a start link."""

import streamlit as st

from flashtrace.app import ui
from flashtrace.app.state import library
from flashtrace.store.gallery import list_gallery


def gallery_cards(items) -> None:
    """Cards in three columns: title, what the trace is, what the hops do (from the analysis), links."""
    cols = st.columns(3)
    for i, item in enumerate(items):
        with cols[i % 3].container(border=True):
            st.subheader(ui.plain(item.title), anchor=False)
            span = "hop 0 over the reasoning and the answer" if item.hop0 == "generation" else "hop 0 over the answer"
            st.caption(f"{ui.plain(item.task)} · {ui.plain(item.model)} · {item.n_tokens:,} tokens · "
                       f"{item.hops:d} hops · {ui.plain(span)}")
            st.markdown(ui.plain(item.description))
            if item.note:
                st.markdown(ui.plain(item.note))
            query = {"trace": f"gallery:{item.name}"}
            st.page_link(ui.PAGES["story"], label="Tell its story", icon=":material/auto_stories:", query_params=query)
            a, b = st.columns(2)
            a.page_link(ui.PAGES["explore"], label="Explore", icon=":material/search:", query_params=query)
            b.page_link(ui.PAGES["graph"], label="Hop graph", icon=":material/hub:", query_params=query)


def home() -> None:
    st.title("FlashTrace Studio")
    st.markdown("**Why did the model say that?** FlashTrace attributes a model's whole answer to the prompt tokens "
                "that caused it in one sweep over a single forward pass, and hops back through the reasoning chain "
                "so the credit lands on the input rather than on the reasoning.")
    st.page_link(ui.PAGES["story"], label="See the story of a gallery trace, step by step (for demos)",
                 icon=":material/auto_stories:", query_params={"trace": "gallery:needle"})
    if not ui.read_only():
        st.page_link(ui.PAGES["trace"], label="Start a new trace", icon=":material/play_arrow:")
    st.page_link(ui.PAGES["evaluation"], label="Is it faithful? Deletion tests against the baselines",
                 icon=":material/fact_check:")

    st.header("Gallery")
    items = list_gallery()
    if not items:
        st.info("The gallery is empty. Rebuild it with `flashtrace gallery`.")
    changing = [it for it in items if it.changes_evidence]
    steady = [it for it in items if not it.changes_evidence]
    if changing:
        st.subheader("Where the hops change the evidence", anchor=False)
        gallery_cards(changing)
    if steady:
        st.subheader("Where the hops confirm what the answer reads directly", anchor=False)
        st.caption("In these traces the top evidence stays the same at every hop depth (by more than the 2-point "
                   "margin, or tied from the start): the hops still carry more of the answer's attribution back to "
                   "the prompt, and a stable ranking is evidence that it does not hinge on one reading.")
        gallery_cards(steady)

    st.header("Recent traces")
    with ui.shown_errors():
        recent = [e for e in library().entries() if e.readable][:5]
        if not recent:
            st.caption("Nothing saved yet. Traces you run are saved to the library.")
        for entry in recent:
            st.page_link(ui.PAGES["explore"], icon=":material/description:",
                         label=f"{ui.plain(entry.name)} · {ui.plain(entry.model)} · {entry.n_tokens:,} tokens",
                         query_params={"trace": f"lib:{entry.name}"})
        st.page_link(ui.PAGES["library"], label="Open the library", icon=":material/folder_open:")


ui.page_setup("Home")
home()
