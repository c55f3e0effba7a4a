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
            verdict = ("" if item.correct is None else
                       f" · answered “{item.answer[:40]}”, {'right' if item.correct else 'wrong'}")
            st.caption(ui.plain(f"{item.task} · {item.model} · {item.n_tokens:,} tokens · {item.hops:d} hops · "
                                f"{span}{verdict}"))
            st.markdown(ui.plain(item.description))
            if item.note:
                st.markdown(ui.plain(item.note))
            query = {"trace": f"gallery:{item.name}"}
            st.page_link(ui.PAGES["story"], label="Tell its story", icon=":material/auto_stories:", query_params=query)
            a, b = st.columns(2)
            a.page_link(ui.PAGES["explore"], label="Explore", icon=":material/search:", query_params=query)
            b.page_link(ui.PAGES["graph"], label="Hop graph", icon=":material/hub:", query_params=query)
            for name in item.edited_versions:
                st.page_link(ui.PAGES["story"], label=ui.plain(f"The edited version: {name}"),
                             icon=":material/call_split:", query_params={"trace": f"gallery:{name}"})


_GALLERY_SECTIONS = (
    ("Reasoning the model wrote itself",
     "Tasks written for this project; a built-in Qwen2.5-Coder model wrote its own reasoning and answer (greedy), "
     "and the answer's value was traced with 3 hops."),
    ("Where the model went wrong, and the edit that tests it",
     "Wrong answers, kept: each card names the sentence suspected of misleading the model and what the model "
     "answered once that sentence was removed and it reasoned again (the edited version)."),
    ("Synthetic benchmark traces",
     "SmolLM2-135M reading reasoning that the task generators templated (the model did not write it): the "
     "evaluation's task families, a hand-written prompt and a long trace."),
)


def gallery_sections(items) -> None:
    """The gallery's cards in three sections: reasoning a model wrote itself and got right (or unchecked), its
    honest failures, and the synthetic benchmark traces; an edited version opens from its original's card."""
    cards = [it for it in items if it.edited_from is None]
    groups = ([it for it in cards if it.written and it.correct is not False],
              [it for it in cards if it.written and it.correct is False],
              [it for it in cards if not it.written])
    for (title, caption), group in zip(_GALLERY_SECTIONS, groups):
        if group:
            st.subheader(title, anchor=False)  # md-ok: a constant of _GALLERY_SECTIONS
            st.caption(caption)  # md-ok: a constant of _GALLERY_SECTIONS
            gallery_cards(group)


def recent_traces() -> None:
    """Links to the five newest readable traces in the library, and to the library."""
    with ui.shown_errors():
        recent = [e for e in library().entries() if e.readable][:5]
        if not recent:
            st.caption("Nothing saved yet. Traces you run are saved to the library.")
        for entry in recent:
            st.page_link(ui.PAGES["explore"], icon=":material/description:",
                         label=f"{ui.plain(entry.name)} · {ui.plain(entry.model)} · {entry.n_tokens:,} tokens",
                         query_params={"trace": f"lib:{entry.name}"})
        st.page_link(ui.PAGES["library"], label="Open the library", icon=":material/folder_open:")


def home() -> None:
    st.title("FlashTrace Studio")
    st.markdown("**Why did the model say that?** FlashTrace attributes a model's whole answer to the prompt tokens "
                "that caused it in one sweep over a single forward pass, and hops back through the reasoning chain "
                "so the credit lands on the input rather than on the reasoning.")
    items = list_gallery()
    if items:
        st.page_link(ui.PAGES["story"], label="See the story of a gallery trace, step by step (for demos)",
                     icon=":material/auto_stories:", query_params={"trace": f"gallery:{items[0].name}"})
    if not ui.read_only():
        st.page_link(ui.PAGES["trace"], label="Start a new trace", icon=":material/play_arrow:")
    st.page_link(ui.PAGES["evaluation"], label="Is it faithful? Deletion tests against the baselines",
                 icon=":material/fact_check:")
    st.header("Gallery")
    if not items:
        st.info("The gallery is empty. Rebuild it with `flashtrace gallery`.")
    gallery_sections(items)
    st.header("Recent traces")
    recent_traces()


ui.page_setup("Home")
home()
