"""Run a trace: model, prompt, response (teacher-forced or generated), spans, target, hops, method;
every check before the run (what is missing, context, target, memory, the cost as a range), progress during
the run, and the result saved to the library."""

import time

import streamlit as st

from flashtrace.app import live, state as app_state, ui
from flashtrace.engine.attribution import METHODS
from flashtrace.evaluate.gallery import PRESETS, preset_text
from flashtrace.app.glossary import help_link
from flashtrace.engine.inputs import REASONING_INSTRUCTION, answer_guess, detect_spans
from flashtrace.analysis.limits import (APP_HOP0, DEFAULT_HOPS, DEFAULT_STOP_TOKENS, HOP0_SPANS, MAX_HOPS, MAX_INPUT_CHARS,
                                       MAX_TITLE, STOP_PRESETS)
from flashtrace.run.tracing import attribute

OTHER = "Other: Hugging Face id or local folder"
ss = st.session_state
ui.page_setup("Run a trace")
st.title("Run a trace")
if ui.read_only():  # the whole page runs models and saves: a read-only demo shows none of it
    st.info("This is a read-only demo: running a model is switched off. Browse the gallery and the library, "
            "and export what you see.")
    st.stop()
for field in ("prompt", "response"):  # values produced by the previous run (generation), applied before widgets
    if f"pending_{field}" in ss:
        ss[field] = ss.pop(f"pending_{field}")


def load_preset() -> None:
    with ui.shown_errors():
        ss["prompt"], ss["response"] = preset_text(ss["preset"], int(ss["preset_seed"]))
        ss["mode"] = "Teacher-force a response"


def needs(what: str, missing: list[str]) -> None:
    """Say why a button is greyed out."""
    if missing:
        listed = ", ".join(missing[:-1]) + " and " + missing[-1] if len(missing) > 1 else missing[0]
        st.caption(f"{what} needs {listed}.")  # md-ok: constant phrases


options = {o.name: o for o in app_state.model_options()}
c_model, c_preset = st.columns(2)
with c_model:
    choice = st.selectbox("Model", [*options, OTHER], key="model_choice",
                          format_func=lambda name: options[name].label if name in options else name,
                          help="Built-in models work offline: the Qwen2.5-Coder ones reason step by step (prepare "
                               "each once with `flashtrace prepare --model NAME`), smollm2-135m is small and fast. "
                               "tiny-* and random-* have random weights, for tests.")
    model_name = (st.text_input("Hugging Face id or folder", key="model_other", max_chars=500).strip()
                  if choice == OTHER else choice)
    picked = options.get(choice)
    if picked and picked.ready:
        st.caption(ui.plain(picked.facts))
    elif picked:
        st.warning(f"{ui.plain(choice)} is not prepared yet. Prepare it once in a terminal, then pick it again: "
                   + ui.code_text(picked.command))
        model_name = ""
    chat_template = st.checkbox("Use the model's chat template", True, key="chat_template",
                                help="for generation and for the trace")
with c_preset:
    p1, p2, p3 = st.columns([3, 2, 2], vertical_alignment="bottom")
    p1.selectbox("Preset", PRESETS, key="preset", help="an example of each evaluation task family, or free-form")
    p2.number_input("Seed", 0, 10_000, 0, key="preset_seed")
    p3.button("Load preset", on_click=load_preset, key="load_preset")

mode = st.radio("Response", ["Teacher-force a response", "Generate with the model"], horizontal=True, key="mode")
prompt = st.text_area("Prompt", key="prompt", height=160, max_chars=MAX_INPUT_CHARS)  # per model: checked below
if mode == "Generate with the model":
    max_new = st.slider("Max new tokens", 16, 1024, 256, step=16, key="max_new")
    ask = st.checkbox("Ask for reasoning", value=True, key="ask_reasoning",
                      help="Append: “" + ui.plain(REASONING_INSTRUCTION) + "” to the prompt (models without a thinking mode; "
                           "not when the prompt already asks). The tool wrote it, so it is marked as template text "
                           "and never counts as evidence.")
    gen_missing = [what for what, ok in (("a model", model_name), ("a prompt", prompt.strip())) if not ok]
    if not gen_missing and model_name in options:  # built-in models: loaded once, then cached
        with ui.shown_errors("Cannot generate: "):
            st.caption(ui.plain(app_state.generation_estimate(app_state.cached_model(model_name), prompt, max_new,
                                                              chat_template, ask)))
    if st.button("Generate response", key="generate", disabled=bool(gen_missing)):
        with ui.shown_errors("Generation failed: "), app_state.using_model():
            generated = live.streamed_generation(app_state.cached_model(model_name), prompt, max_new, chat_template,
                                                 ask)
            ss["pending_response"], ss["pending_prompt"] = generated.response, generated.prompt
            ss["cut_response"] = generated.response if generated.reached_limit else None  # stopped at max new tokens
            st.rerun()
    elif ss.get("generation_cancelled"):
        st.info("Generation cancelled: the text so far is the response below, to keep, edit or generate again.")
    needs("Generating", gen_missing)
response = st.text_area("Response (reasoning, then the answer)", key="response", height=160,
                        max_chars=MAX_INPUT_CHARS)

# --- spans and target --------------------------------------------------------------------------------
TARGETS = {"value": "the answer's value", "answer": "the whole answer", "response": "response",
           "reasoning": "reasoning", "character range": "character range"}
spans, target, target_chars = None, "value", None
if response.strip():
    c_spans, c_target = st.columns(2)
    with c_spans:
        span_mode = st.radio("Answer span", ["detected", "set the answer text"], horizontal=True, key="span_mode",
                             help=help_link("span", "Which part of the response is the answer."))
        with ui.shown_errors():
            if span_mode == "detected":
                spans = detect_spans(response)
            else:
                spans = app_state.spans_with_answer(response, st.text_input("Answer text (its last occurrence)",
                                                                            key="answer_text", max_chars=2000))
            st.caption(f"Rule: {ui.plain(spans.rule)}")
            guess = answer_guess(spans, response, reached_limit=ss.get("cut_response") == response)
            if guess and span_mode == "detected":
                st.warning(ui.plain(guess[0].upper() + guess[1:] + "."))
            for name, rng in (("Reasoning", spans.reasoning), ("Answer", spans.answer)):
                text = response[rng[0]:rng[1]] if rng else "(none)"
                shown = ui.code_text(text[:200] + ("…" if len(text) > 200 else ""))
                st.markdown(f"{name}: {shown}")  # md-ok: a constant name and inline code
    with c_target:
        target = st.radio("Target", list(TARGETS), horizontal=True, key="target_kind", format_func=TARGETS.get,
                          help="What the trace explains. The answer's value: the number or short phrase of an answer "
                               "line that restates the question (“15” in “Tom has 15 marbles now.”), else the whole "
                               "answer, which is one click away.")
        if target == "value" and spans is not None and spans.answer:
            named, why = app_state.explained_value(response, spans, prompt)
            st.markdown("Explaining: " + ui.code_text(named[:200]) + (f" ({why})" if why else ""))  # md-ok: inline code
        if target == "character range":
            old = ss.get("target_chars")
            if old and old[1] > len(response):  # the response got shorter since the range was picked
                ss["target_chars"] = (min(old[0], len(response)), len(response))
            target_chars = st.slider("Characters of the response", 0, len(response), (0, len(response)),
                                     key="target_chars")
            st.markdown("Selected: " + ui.code_text(response[target_chars[0]:target_chars[1]][:200]))

c_hops, c_method, c_steps = st.columns(3)
hops = c_hops.slider("Hops", 0, MAX_HOPS, DEFAULT_HOPS, key="hops", help=help_link("hop", "Recursive hops through the reasoning "
                                                                 "(reference: 1)."))
method = c_method.selectbox("Method", sorted(METHODS), index=sorted(METHODS).index("flashtrace"), key="method",
                            help="; ".join(f"{m}: {METHODS[m].description}" for m in sorted(METHODS)))  # md-ok
steps = c_steps.checkbox("Step-level data for the hop graph", True, key="steps")
spec = METHODS[method]
if not (spec.hops and spec.steps):  # the registry says what a method can do: baselines that run the model
    hops, steps = (hops if spec.hops else 0), steps and spec.steps
    st.caption(f"{method} runs without recursive hops or step-level data (hops 0).")  # md-ok: registry name
c_stops, c_hop0 = st.columns(2)
stop_choice = c_stops.selectbox("Stop tokens (weight 0)", [*STOP_PRESETS, "list"], key="stop_tokens",
                                index=STOP_PRESETS.index(DEFAULT_STOP_TOKENS),
                                help=f"paper: ',' '.' and whitespace, the authors' set; punctuation: every "
                                     f"punctuation-only token; none; or your own list (whitespace is included). "
                                     f"Default {ui.code_text(DEFAULT_STOP_TOKENS)}, chosen from the evaluation "
                                     f"(docs/evaluation.md)")
stop_tokens = (c_stops.text_input("Stop-token list, separated by spaces", ", .", key="stop_list").split()
               if stop_choice == "list" else stop_choice)
hop0 = c_hop0.selectbox("Hop 0 covers", HOP0_SPANS, index=HOP0_SPANS.index(APP_HOP0), key="hop0",
                        format_func={"answer": "the answer (the paper's formulation)",
                                     "generation": "reasoning + answer (as the gallery's traces)"}.get,
                        help="answer (the default, as in the API): hop 0 reads the target span only, the paper's "
                             "formulation; on the Qwen models' own reasoning it recovers the known evidence best on "
                             "average (far better on arithmetic and the needle). generation: hop 0 reads the "
                             "reasoning and the answer, as the code behind the paper's tables did and the gallery's "
                             "traces were made; better on variable tracking (docs/evaluation.md).")
title = st.text_input("Save as (library name)", key="title", placeholder="defaults to the prompt's first line",
                      max_chars=MAX_TITLE)

# --- what is missing, then the checks and the cost estimate -------------------------------------------
missing = [what for what, ok in (("a model", model_name), ("a prompt", prompt.strip()),
                                 ("a response", response.strip())) if not ok]
if response.strip() and (spans is None or not spans.answer):
    missing.append("an answer span (set the answer text)")
if target_chars is not None and target_chars[0] >= target_chars[1]:
    missing.append("a non-empty character range")
fits = True
if not missing and model_name in options:  # built-in models: loaded once, then cached; others are checked on Run
    try:
        n_tokens, estimate = app_state.run_estimate(app_state.cached_model(model_name), prompt, response, spans,
                                                    target, hops, chat_template, target_chars, steps)
        st.info(f"Estimated cost: {app_state.describe_estimate(n_tokens, estimate)}.")  # md-ok: numbers only
    except Exception as exc:  # noqa: BLE001 - shown, and the run is refused
        fits = False
        st.error(f"Cannot run: {ui.plain(ui.error_message(exc))}")
elif not missing:
    st.caption(f"About {len(prompt + response) // 4:,} tokens; the cost is estimated once the model has loaded.")

# --- run -------------------------------------------------------------------------------------------------
if st.button("Run trace", type="primary", disabled=bool(missing) or not fits, key="run"):
    ss.pop("last_saved", None)
    ss["trace_cancelled"], cancel = False, st.empty()
    cancel.button("Cancel", key="cancel_trace", help="stops within a layer of the forward pass or attribution",
                  on_click=lambda: ss.update(trace_cancelled=True))
    with ui.shown_errors("Trace failed: "), app_state.using_model(), st.status("Tracing…", expanded=True) as status:
        try:
            started = time.perf_counter()  # the whole run's wall time, as the estimate counts it
            st.write(f"Loading {ui.plain(model_name)}…")
            loaded = app_state.cached_model(model_name)
            n_tokens, estimate = app_state.run_estimate(loaded, prompt, response, spans, target, hops, chat_template,
                                                        target_chars, steps)  # every check before the forward pass
            st.write(f"Recording the forward pass ({app_state.describe_estimate(n_tokens, estimate)})…")  # md-ok
            with live.forward_progress(loaded, "Forward pass:"):
                prepared = app_state.cached_prepared(model_name, prompt, response, chat_template, spans.reasoning,
                                                     spans.answer, spans.rule)
            trace = attribute(prepared, target="answer" if target == "character range" else target,
                              target_chars=target_chars, hops=hops, method=method, steps=steps, title=title.strip(),
                              stop_tokens=stop_tokens, hop0=hop0,
                              progress=app_state.Progress("Attributing", estimate.attribution_s + estimate.steps_s
                                                          if estimate else None))
            ss["last_saved"] = app_state.library().save(trace, title.strip() or None)
            took = time.perf_counter() - started
            status.update(label=f"Done in {took:.1f} s" if took >= 0.05 else "Done in under 0.1 s", state="complete")
        except Exception:
            status.update(label="Trace failed (nothing was saved)", state="error")
            raise
        finally:
            cancel.empty()
elif ss.get("trace_cancelled"):
    st.info("Trace cancelled: nothing was saved.")
needs("Run", missing)
if ss.get("last_saved"):
    st.success(f"Saved to the library as **{ui.plain(ss['last_saved'])}**.")
    st.page_link(ui.PAGES["explore"], label="Explore this trace", icon=":material/search:",
                 query_params={"trace": f"lib:{ss['last_saved']}"})
