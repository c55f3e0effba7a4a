"""Story: one trace told in five captioned panels (question and answer, what the answer reads directly, how
the reasoning passes it on, the evidence, a faithfulness check; an honest failure adds where it went wrong
and the edit that fixes it before the check), stepped with Back/Next or the keyboard
(arrow keys, space, Page Up/Down) and kept in the URL (``?trace=gallery:needle&step=3``). ``&present=1`` is
the presenter view: full width, no sidebar, large type (Escape leaves it)."""

import streamlit as st

from flashtrace.app import screen, state as app_state, ui
from flashtrace.app.export import export_buttons, story_download
from flashtrace.app.glossary import help_link
from flashtrace.app.rerun import edit_panel, pair_links
from flashtrace.analysis.story import TITLES, Panel, stored_check, story_panels
from flashtrace.viz.story import (LINE_CHARS, answer_html, condensed, evidence_html, panel_blocks,
                                  panel_figures, prompt_html, question_html, reasoning_html, reasoning_lines, screen_lines,
                                  sentences_html, story_document)

TERMS = {"question": ("attribution",), "direct": ("hop", "attribution"), "hops": ("hop", "rho"),
         "evidence": ("attribution", "segment"), "failure": ("segment", "log-probability"),
         "check": ("deletion", "log-probability")}


def go_to(target: int) -> None:
    st.query_params["step"] = str(target)


def presenting(on: bool) -> None:
    if on:
        st.query_params["present"] = "1"
    elif "present" in st.query_params:
        del st.query_params["present"]


def current_step(n: int) -> int:
    """The step in the URL, kept within 1..`n` (the trace's number of panels)."""
    try:
        return min(max(int(st.query_params.get("step", "1")), 1), n)
    except ValueError:
        return 1


def step_buttons(step: int, back, where, forward, N: int) -> None:
    back.button("Back", key="story_back", icon=":material/arrow_back:", disabled=step == 1, on_click=go_to,
                args=(step - 1,), width="stretch", help="Previous step (← or Page Up)")
    forward.button("Next", key="story_next", icon=":material/arrow_forward:", disabled=step == N, on_click=go_to,
                   args=(step + 1,), width="stretch", help="Next step (→, space or Page Down)")
    where.progress(step / N, text=f"Step {step:d} of {N:d}")


def question_body(data: dict, large: bool) -> None:
    """Step 1: the question large (its asking sentence, for a long prompt), the whole prompt on request, the
    reasoning and the answer, all as plain text."""
    st.html(question_html(data, large))
    if data["ask"]:
        with st.expander("The whole prompt"):
            st.html(prompt_html(data))
    if data["reasoning"]:
        left, right = st.columns([3, 2])
        left.html(reasoning_html(data, large))
        if condensed(data["reasoning"], reasoning_lines(data, large), LINE_CHARS[large])[1]:
            with left.expander(f"The whole reasoning ({screen_lines(data['reasoning'], LINE_CHARS[large]):,} lines)"):
                st.html(reasoning_html(data, large, whole=True))
    else:
        right = st.container()
    right.html(answer_html(data, large))


def show_caption(panel: Panel) -> None:
    with st.container(key="story_caption"):
        st.markdown(ui.plain(panel.caption))


def check_run(ref, trace, live_key: str) -> None:
    """The check panel's source, or a button that runs the check live (a trace without a stored one)."""
    if stored_check(trace) is None and live_key not in st.session_state and ui.read_only():
        st.caption("The check runs the trace's model: switched off in this read-only demo.")
    elif stored_check(trace) is None and live_key not in st.session_state:
        if st.button(f"Run the check now with {ui.plain(trace.model.name)} (loads the model)", key="story_run_check"):
            with st.spinner("Loading the model and scoring the deletions…"), ui.shown_errors("Check failed: "):
                st.session_state[live_key] = app_state.live_faithfulness(ref)
                st.rerun()
    elif live_key in st.session_state:
        st.caption("Computed live just now with the trace's model.")
    else:
        st.caption("Precomputed when the gallery was built, with the trace's model.")


def show_panel(ref, trace, panel: Panel, large: bool) -> None:
    """Draw one panel: its main figure first, under its title (step 1: the caption, then the texts)."""
    if panel.key == "question":
        show_caption(panel)
        question_body(panel.data, large)
    for i, fig in enumerate(panel_figures(trace, panel, large)):
        st.plotly_chart(fig, key=f"story_fig_{panel.key}_{i}", config={"displaylogo": False})
    if panel.key != "question":
        show_caption(panel)
    if panel.key == "evidence":
        top = sentences_html(trace, panel.data["sentences"])
        if top:  # empty for a trace without sentence segments (st.html refuses an empty body)
            st.html(top)
        else:
            st.caption("This trace has no sentence segments: the whole prompt is shown below.")
        with st.expander("The whole prompt, highlighted"):
            st.html(evidence_html(trace))
        with st.container(border=True, key="story_rerun"):
            edit_panel(ref, trace)
    if panel.key == "check":
        check_run(ref, trace, f"story_check_{ref}")


def exports(ref, trace, panels: list[Panel], step: int) -> None:
    """The whole Story as one offline file, and this step as HTML, PNG and SVG."""
    name = trace.title or ref.name
    story_download(f"{ref.name}-story", lambda: story_document(trace, panels, f"{name}: the story"))
    panel = panels[step - 1]
    blocks = panel_blocks(trace, panel)
    figures = [b for b in blocks if not isinstance(b, str)]
    export_buttons(f"{ref.name}-story-{step}", f"{name}: {panel.title}", blocks, figures[0] if figures else None,
                   intro=panel.caption, key="story_export")


present = st.query_params.get("present") == "1"
ui.page_setup("Story", sidebar=not present)
if present:
    screen.presenter_view()
    picked = ui.url_trace()
    with st.container(key="story_bar"):
        title, back, where, forward, leave = st.columns([7, 1.2, 1.6, 1.2, 1.2], vertical_alignment="center")
    leave.button("Exit", key="story_exit", icon=":material/close_fullscreen:", on_click=presenting, args=(False,),
                 width="stretch", help="Leave the presenter view (Escape)")
else:
    st.title("The story of a trace")
    pick_col, back, where, forward, show = st.columns([4, 1, 1.6, 1, 1.2], vertical_alignment="bottom")
    with pick_col:
        picked = ui.trace_picker()
    show.button("Present", key="story_present", icon=":material/slideshow:", on_click=presenting, args=(True,),
                width="stretch", help="Full-width presenter view: no sidebar, large type (Escape leaves it)")
if picked:
    ref, trace = picked
    with ui.shown_errors():
        panels = story_panels(trace, st.session_state.get(f"story_check_{ref}"))
        step = current_step(len(panels))
        step_buttons(step, back, where, forward, len(panels))
        screen.story_keys()
        panel = panels[step - 1]
        (title if present else st).subheader(TITLES[panel.key], anchor=False)  # md-ok: constant titles
        show_panel(ref, trace, panel, present)
        if not present:  # under the panel (the panel fits the screen above it), not in the presenter view
            pair_links(ref, trace)
            exports(ref, trace, panels, step)
    if not present:
        st.caption("Words used here: " + " · ".join(help_link(k) for k in TERMS[panel.key])  # md-ok: constants
                   + " · Keys: → or space next, ← back")
        ui.nav_links(ref, "story")
