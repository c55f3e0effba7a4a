"""Run a trace: model, prompt, response (teacher-forced or generated), spans, target, hops, method;
a cost estimate first, progress during the run, and the result saved to the library."""

import streamlit as st

from flashtrace import app_state, ui
from flashtrace.attribution import METHODS
from flashtrace.gallery import PRESETS, preset_text
from flashtrace.inputs import build_sequence, detect_spans
from flashtrace.models import MODEL_ALIASES
from flashtrace.models.generation import generate_response, prompt_for_generation
from flashtrace.tracing import attribute

OTHER = "Other: Hugging Face id or local folder"
ss = st.session_state
ui.page_setup("Run a trace")
st.title("Run a trace")
for field in ("prompt", "response"):  # values produced by the previous run (generation), applied before widgets
    if f"pending_{field}" in ss:
        ss[field] = ss.pop(f"pending_{field}")


def load_preset() -> None:
    with ui.shown_errors():
        ss["prompt"], ss["response"] = preset_text(ss["preset"], int(ss["preset_seed"]))
        ss["mode"] = "Teacher-force a response"


c_model, c_preset = st.columns(2)
with c_model:
    choice = st.selectbox("Model", [*MODEL_ALIASES, OTHER], key="model_choice",
                          help="smollm2-135m is built in and works offline; tiny-* are random-weight test models")
    model_name = st.text_input("Hugging Face id or folder", key="model_other").strip() if choice == OTHER else choice
with c_preset:
    p1, p2, p3 = st.columns([3, 2, 2], vertical_alignment="bottom")
    p1.selectbox("Preset", PRESETS, key="preset", help="an example of each evaluation task family, or free-form")
    p2.number_input("Seed", 0, 10_000, 0, key="preset_seed")
    p3.button("Load preset", on_click=load_preset, key="load_preset")

mode = st.radio("Response", ["Teacher-force a response", "Generate with the model"], horizontal=True, key="mode")
prompt = st.text_area("Prompt", key="prompt", height=160)
if mode == "Generate with the model":
    max_new = st.slider("Max new tokens", 16, 1024, 256, step=16, key="max_new")
    if st.button("Generate response", key="generate", disabled=not (prompt.strip() and model_name)):
        with ui.shown_errors("Generation failed: "), app_state.using_model():
            with st.spinner("Generating…"):
                loaded = app_state.cached_model(model_name)
                full_prompt = prompt_for_generation(loaded.tokenizer, prompt)
                ids = build_sequence(loaded.tokenizer, full_prompt, "").ids
                ss["pending_response"] = generate_response(loaded, ids, max_new_tokens=max_new)
                ss["pending_prompt"] = full_prompt
                st.rerun()
response = st.text_area("Response (reasoning, then the answer)", key="response", height=160)

# --- spans and target --------------------------------------------------------------------------------
spans = None
if response.strip():
    c_spans, c_target = st.columns(2)
    with c_spans:
        span_mode = st.radio("Answer span", ["detected", "set the answer text"], horizontal=True, key="span_mode")
        with ui.shown_errors():
            if span_mode == "detected":
                spans = detect_spans(response)
            else:
                spans = app_state.spans_with_answer(response, st.text_input("Answer text (its last occurrence)",
                                                                            key="answer_text"))
            st.caption(f"Rule: {ui.plain(spans.rule)}")
            for name, rng in (("Reasoning", spans.reasoning), ("Answer", spans.answer)):
                text = response[rng[0]:rng[1]] if rng else "(none)"
                shown = ui.code_text(text[:200] + ("…" if len(text) > 200 else ""))
                st.markdown(f"{name}: {shown}")  # md-ok: a constant name and inline code
    with c_target:
        target = st.radio("Target", ["answer", "response", "reasoning", "character range"], horizontal=True,
                          key="target_kind")
        target_chars = None
        if target == "character range":
            old = ss.get("target_chars")
            if old and old[1] > len(response):  # the response got shorter since the range was picked
                ss["target_chars"] = (min(old[0], len(response)), len(response))
            target_chars = st.slider("Characters of the response", 0, len(response), (0, len(response)),
                                     key="target_chars")
            st.markdown("Selected: " + ui.code_text(response[target_chars[0]:target_chars[1]][:200]))

c_hops, c_method, c_steps = st.columns(3)
hops = c_hops.slider("Hops", 0, 8, 1, key="hops", help="recursive hops through the reasoning (reference: 1)")
method = c_method.selectbox("Method", sorted(METHODS), key="method", format_func=lambda m: f"{m}",
                            help="; ".join(f"{m}: {METHODS[m].description}" for m in sorted(METHODS)))  # md-ok
steps = c_steps.checkbox("Step-level data for the hop graph", True, key="steps")
chat_template = c_steps.checkbox("Use the model's chat template", True, key="chat_template")
title = st.text_input("Save as (library name)", key="title", placeholder="defaults to the prompt's first line")

# --- cost estimate -------------------------------------------------------------------------------------
ready = bool(prompt.strip() and response.strip() and model_name and spans is not None and spans.answer)
fits = True
if ready and model_name in MODEL_ALIASES:  # built-in models load in a second; others are estimated on Run
    try:
        n_tokens, estimate = app_state.run_estimate(app_state.cached_model(model_name), prompt, response, spans,
                                                    target, hops, chat_template)
        st.info(f"Estimated cost: {ui.plain(estimate.describe())}." if estimate else
                f"{n_tokens:,} tokens. Cost estimate unavailable in this version.")
    except Exception as exc:  # noqa: BLE001 - shown, and the run is refused
        fits = False
        st.error(f"Cannot run: {ui.plain(ui.error_message(exc))}")
elif ready:
    st.caption(f"About {len(prompt + response) // 4:,} tokens; the cost is estimated once the model has loaded.")

# --- run -------------------------------------------------------------------------------------------------
if st.button("Run trace", type="primary", disabled=not (ready and fits), key="run"):
    ss.pop("last_saved", None)
    with ui.shown_errors("Trace failed: "):
        with app_state.using_model(), st.status("Tracing…", expanded=True) as status:
            st.write(f"Loading {ui.plain(model_name)}…")
            loaded = app_state.cached_model(model_name)
            n_tokens, estimate = app_state.run_estimate(loaded, prompt, response, spans, target, hops, chat_template)
            st.write(f"Recording the forward pass over {n_tokens:,} tokens"
                     + (f" (estimated {ui.plain(estimate.describe())})…" if estimate else "…"))
            prepared = app_state.cached_prepared(model_name, prompt, response, chat_template, spans.reasoning,
                                                 spans.answer, spans.rule)
            trace = attribute(prepared, target="response" if target == "response" else
                              ("answer" if target == "character range" else target), target_chars=target_chars,
                              hops=hops, method=method, steps=steps, title=title.strip(),
                              progress=app_state.Progress("Attributing"))
            status.update(label=f"Done in {sum(trace.timings.values()):.1f} s", state="complete")
        ss["last_saved"] = app_state.library().save(trace, title.strip() or None)
if ss.get("last_saved"):
    st.success(f"Saved to the library as **{ui.plain(ss['last_saved'])}**.")
    st.page_link(ui.PAGES["explore"], label="Explore this trace", icon=":material/search:",
                 query_params={"trace": f"lib:{ss['last_saved']}"})
