"""Story: one trace told in five captioned panels (question and answer, what the answer reads directly, how
the reasoning passes it on, the evidence, a faithfulness check), stepped with Back/Next and kept in the URL
(``?trace=gallery:needle&step=3``)."""

import streamlit as st

from flashtrace.app import state as app_state, ui
from flashtrace.app.export import export_buttons
from flashtrace.app.glossary import help_link
from flashtrace.analysis.story import STEPS, TITLES, stored_check, story_panels
from flashtrace.viz.story import evidence_html, panel_figures, sentences_html


def go_to(target: int) -> None:
    st.query_params["step"] = str(target)


ui.page_setup("Story")
st.title("The story of a trace")
pick_col, back, where, forward = st.columns([4, 1, 2, 1], vertical_alignment="bottom")
with pick_col:
    picked = ui.trace_picker()
if picked:
    ref, trace = picked
    n = len(STEPS)
    try:
        step = min(max(int(st.query_params.get("step", "1")), 1), n)
    except ValueError:
        step = 1
    back.button("Back", key="story_back", icon=":material/arrow_back:", disabled=step == 1, on_click=go_to,
                args=(step - 1,), width="stretch")
    forward.button("Next", key="story_next", icon=":material/arrow_forward:", disabled=step == n, on_click=go_to,
                   args=(step + 1,), width="stretch")
    where.progress(step / n, text=f"Step {step:d} of {n:d}")
    live_key = f"story_check_{ref}"
    with ui.shown_errors():
        panel = story_panels(trace, st.session_state.get(live_key))[step - 1]
        st.subheader(TITLES[panel.key], anchor=False)  # md-ok: constant titles
        st.markdown(ui.plain(panel.caption))
        figures = panel_figures(trace, panel)
        blocks = []
        if panel.key == "question":
            st.text_area("Question (the prompt)", panel.data["question"], height=140, disabled=True, key="story_q")
            if panel.data["reasoning"]:
                st.text_area("The model's reasoning", panel.data["reasoning"], height=100, disabled=True,
                             key="story_r")
            st.text_area("Answer (the text being explained)", panel.data["answer"], height=68, disabled=True,
                         key="story_a")
        if panel.key == "evidence":
            top = sentences_html(trace, panel.data["sentences"])
            st.html(top)
            with st.expander("The whole prompt, highlighted"):
                st.html(evidence_html(trace))
            blocks += [top, "<h3>The whole prompt</h3>", evidence_html(trace, max_height_px=None)]
        for i, fig in enumerate(figures):
            st.plotly_chart(fig, key=f"story_fig_{panel.key}_{i}", config={"displaylogo": False})
        if panel.key == "check":
            if stored_check(trace) is None and live_key not in st.session_state:
                if st.button(f"Run the check now with {ui.plain(trace.model.name)} (loads the model)",
                             key="story_run_check"):
                    with st.spinner("Loading the model and scoring the deletions…"), \
                            ui.shown_errors("Check failed: "):
                        st.session_state[live_key] = app_state.live_faithfulness(ref)
                        st.rerun()
            elif live_key in st.session_state:
                st.caption("Computed live just now with the trace's model.")
            else:
                st.caption("Precomputed when the gallery was built, with the trace's model.")
        export_buttons(f"{ref.name}-story-{step}", f"{trace.title or ref.name}: {TITLES[panel.key]}",
                       blocks + figures, figures[0] if figures else None, intro=panel.caption, key="story_export")
    terms = {"question": ("attribution",), "direct": ("hop", "attribution"), "hops": ("hop", "rho"),
             "evidence": ("attribution", "segment"), "check": ("deletion", "log-probability")}[panel.key]
    st.caption("Words used here: " + " · ".join(help_link(k) for k in terms))  # md-ok: constant glossary links
    ui.nav_links(ref, "story")
