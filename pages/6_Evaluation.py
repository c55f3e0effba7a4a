"""Evaluation: browse `flashtrace eval` results — per-task tables, metric bars with intervals, mean deletion
curves, and any single example's attributions beside its gold tokens."""

import os
from pathlib import Path

import streamlit as st

from flashtrace.app import ui
from flashtrace.app.glossary import help_link
from flashtrace.evaluate.report import (featured_first, find_eval_folders, group_of, load_records, load_settings,
                                        settings_line, summarise)
from flashtrace.viz.compare import deletion_curves, method_table
from flashtrace.viz.evaluation import example_strips, mean_deletion_curves, metric_bars, summary_columns, summary_rows

ROOT_ENV = "FLASHTRACE_EVAL_ROOT"
DEFAULT_ROOT = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
CHART = {"displaylogo": False}


@st.cache_data(show_spinner="Reading the evaluation…", max_entries=8)
def evaluation(folder: str, signature: tuple) -> tuple[dict, list[dict]]:
    """Summary and records of an eval folder; `signature` (file count, newest change) refreshes the cache."""
    records = load_records(folder)
    return summarise(records, load_settings(folder)), records


def signature(folder: Path) -> tuple:
    files = list((folder / "examples").glob("*.json"))
    return len(files), max((f.stat().st_mtime_ns for f in files), default=0)


ui.page_setup("Evaluation")
st.title("Evaluation")
root = Path(os.environ.get(ROOT_ENV) or DEFAULT_ROOT)
st.caption(f"Faithfulness results written by `flashtrace eval` (RISE and MAS: lower is better; Recovery@10%: "
           f"higher is better). Folders found under {ui.code_text(str(root))} (set `FLASHTRACE_EVAL_ROOT` to look "
           "elsewhere).")
st.caption("What the metrics mean: " + " · ".join(help_link(k) for k in ("rise", "mas", "recovery")))  # md-ok: links
run_col, other_col = st.columns(2)  # one row: the results table starts inside a 720-px screen
run_box = run_col.popover("Run an evaluation", icon=":material/terminal:", key="eval_howto", on_change="rerun")
if run_box.open:  # drawn when opened: a code block loads the browser's syntax highlighter (~0.3 s a page load)
    run_box.markdown("Evaluations run from the command line (they take minutes to hours); this page reads their "
                     "folders.")
    run_box.code("flashtrace eval --task all --n 30 --out benchmarks/results/my_eval\n"
                 "flashtrace eval --jsonl my_examples.jsonl --methods flashtrace,attention --out benchmarks/results/mine",
                 language="bash")
custom = "" if ui.read_only() else other_col.text_input(  # a read-only demo reads no folder a visitor names
    "Another folder", key="eval_path", placeholder="path to a `flashtrace eval --out` folder",
    label_visibility="collapsed")
if custom.strip():
    folders = [Path(custom.strip()).expanduser()]
    if not any((folders[0] / "examples").glob("*.json")):
        st.error(f"{ui.code_text(str(folders[0]))} has no `examples/*.json` written by `flashtrace eval`.")
        st.stop()
else:
    folders = featured_first(find_eval_folders(root))  # the current default run opens first
if not folders:
    st.info(f"No evaluation results under {ui.code_text(str(root))} yet: run "
            f"{ui.code_text(f'flashtrace eval ... --out {root}/NAME')}.")
    st.stop()

labels = [str(f.relative_to(root)) if f.is_relative_to(root) else str(f) for f in folders]
label = ui.synced(st.selectbox, "Results", "run", labels, labels[0])
folder = folders[labels.index(label)]
with ui.shown_errors("Could not read the results: "):
    summary, records = evaluation(str(folder), signature(folder))
    settings = summary.get("settings") or {}
    if settings:
        st.caption(ui.plain(settings_line(settings)))
        if settings.get("note"):
            st.caption(ui.plain(str(settings["note"])))
    tasks = list(summary["tasks"])
    task = ui.synced(st.segmented_control, "Task", "task", tasks, tasks[0], format_func=ui.plain)
    info = summary["tasks"][task]
    all_methods = list(info["methods"])  # FlashTrace first, then token-wise IFR, then the other baselines
    all_methods.sort(key=lambda m: 0 if m.startswith("flashtrace") else 1 if m == "ifr" else 2)
    variants = ("-nostop", "-punct", "-gen")  # FlashTrace variants are opt-in
    methods = st.multiselect("Methods", all_methods, [m for m in all_methods if not m.endswith(variants)],
                             key=f"eval_methods_{label}_{task}")
    tok, ex_s = info["tokens"], info["example_seconds"]
    st.markdown(f"**{ui.plain(task)}**: {info['n']:d} examples, {tok['mean']:.0f} ± {tok['std']:.0f} tokens "
                f"({info['prompt_tokens']['mean']:.0f} prompt tokens)"
                + (f", {ex_s['mean']:.1f} s per example for all methods"
                   + (" (no deletion curves: Recovery only)" if settings.get("k") == 0 else " and deletion curves")
                   if ex_s["mean"] else ""))
    if not methods:
        st.info("Pick at least one method.")
        st.stop()
    table = summary_rows(summary, task, methods)
    ui.table(table, hide_index=True, key="eval_table",
                 column_config={c: (st.column_config.NumberColumn(format="%.3f", **kw) if c not in ("method", "hops", "examples")
                                    else st.column_config.Column(**kw)) for c, kw in summary_columns(table).items()})
    st.plotly_chart(metric_bars(summary, task, methods), key="eval_bars", config=CHART)
    curves = settings.get("k") != 0  # a Recovery-only run (--k 0) has no deletion curve to draw
    if curves:
        st.plotly_chart(mean_deletion_curves(summary, task, methods), key="eval_curves", config=CHART)

    st.subheader("One example")
    rows = [r for r in records if group_of(r) == task]  # a task, or its right or wrong answers (own protocol)
    ids = [r.get("id", f"{task}-{i:04d}") for i, r in enumerate(rows)]
    chosen = st.selectbox("Example", ids, key=f"eval_example_{label}_{task}")
    record = rows[ids.index(chosen)]
    picked = {**record, "id": chosen, "methods": {m: record["methods"][m] for m in methods if m in record["methods"]}}
    texts = st.expander("Prompt and response", key=f"eval_texts_{label}_{task}", on_change="rerun")
    if texts.open:  # filled when opened (code blocks load the syntax highlighter: see the popover above)
        left, right = texts.columns(2)
        left.markdown("**Prompt**")
        left.code(record["prompt"], language=None, wrap_lines=True)
        right.markdown(f"**Response** (explained: the answer {ui.code_text(str(record.get('answer', '')))})")
        right.code(record["response"], language=None, wrap_lines=True)
    st.plotly_chart(example_strips(picked, methods), key="eval_strips", config=CHART)
    ui.table(method_table(picked), hide_index=True, key="eval_example_table")
    if curves:
        st.plotly_chart(deletion_curves(picked), key="eval_example_curves", config=CHART)
