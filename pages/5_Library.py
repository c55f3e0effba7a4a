"""The library: saved traces, searchable; open, rename, delete (with confirmation), import and export — and
export of the gallery's traces without importing them."""

import pandas as pd
import streamlit as st

from flashtrace.app import ui
from flashtrace.app.rerun import pair_links
from flashtrace.app.state import TraceRef, library, load_trace
from flashtrace.store.gallery import gallery_path, list_gallery
from flashtrace.analysis.schema import Trace

ss = st.session_state
PAGE, ALL, MAIN = 50, "all", "(library)"  # rows per page; filter and collection choices meaning 'no filter'
WIDTHS = {"name": 150, "title": 160, "model": 110, "tokens": 64, "hops": 48, "method": 84, "created": 124,
          "size kB": 66}  # pixels, 806 in all: every column shows in the 818-px page of a 1280-px window
COLUMNS = {c: (st.column_config.NumberColumn if c in ("tokens", "hops", "size kB") else st.column_config.TextColumn)(
    c, width=w) for c, w in WIDTHS.items()}


def export_buttons(key: str, stem: str, load) -> None:
    """JSON and HTML downloads of the trace `load()` returns, built only when clicked."""
    from flashtrace.viz.report import trace_report_html

    c_json, c_html = st.columns(2)
    c_json.download_button("Export JSON", lambda: load().to_json(indent=1).encode("utf-8"), file_name=f"{stem}.json",
                           mime="application/json", key=f"{key}_json", on_click="ignore")
    c_html.download_button("Export HTML", lambda: trace_report_html(load()), file_name=f"{stem}.html",
                           mime="text/html", key=f"{key}_html", on_click="ignore")


def select(name: str | None) -> None:
    """Make `name` the selected trace on the next run (a fresh selectbox, so it never shows a stale name)."""
    ss["library_pick"] = name
    ss["library_v"] = ss.get("library_v", 0) + 1


ui.page_setup("Library")
st.title("Library")
lib = library()
st.caption(f"Saved traces in {ui.code_text(str(lib.root))} (set `FLASHTRACE_LIBRARY` to use another folder).")
if ss.get("library_notice"):
    st.success(ss.pop("library_notice"))  # md-ok: built from code_text

if not lib.read_only:  # a read-only demo (ui.read_only): no import, rename or delete
    with st.expander("Import a trace (JSON)"):
        upload = st.file_uploader("Trace JSON file", type=["json"], key="import_file")
        if upload is not None and st.button("Import", key="import"):
            with ui.shown_errors("Not imported: "):
                name = lib.import_json(upload.getvalue(), name=upload.name.removesuffix(".json"))
                st.success(f"Imported as **{ui.plain(name)}**.")

with st.expander("Export a gallery trace"):
    items = {item.name: item for item in list_gallery()}
    if items:
        pick = st.selectbox("Gallery trace", list(items), key="gallery_pick", format_func=lambda n: items[n].title)
        export_buttons("gallery", pick, lambda: Trace.load(gallery_path(pick)))
    else:
        st.caption("The gallery is empty.")

root, prefix = lib, ""
collections = root.collections()
if collections:  # sub-folders of traces, e.g. `flashtrace batch --collection NAME` outputs
    picked = st.selectbox("Collection", [MAIN] + collections, key="collection",
                          help="the library's own traces, or a folder of traces inside it (a batch output)")
    if picked != MAIN:
        lib, prefix = root.collection(picked), f"{picked}/"
query = st.text_input("Search", key="search", placeholder="words in the name, title, model, method, task or prompt")
facets = lib.facets()
c_model, c_task, c_page = st.columns(3)
model = c_model.selectbox("Model", [ALL] + facets["model"], key="filter_model", format_func=ui.visible)
task = c_task.selectbox("Task", [ALL] + facets["task"], key="filter_task", disabled=not facets["task"],
                        format_func=ui.visible)
filters = dict(search=query, model=None if model == ALL else model, task=None if task == ALL else task)
total = lib.query(**filters, limit=0)[1]
pages = max(1, -(-total // PAGE))
if ss.get("library_page", 1) > pages:
    ss["library_page"] = 1
page = c_page.number_input(f"Page (of {pages:d}; {total:,} traces)", 1, pages, key="library_page")
entries = lib.query(**filters, limit=PAGE, offset=(page - 1) * PAGE)[0]
if not entries:
    st.info("No traces match." if query.strip() or filters["model"] or filters["task"] else
            "The library is empty: run a trace on the Trace page, or import a JSON file.")
    st.stop()

table = pd.DataFrame([{"name": ui.visible(e.name), "title": ui.visible(e.title) if e.readable else "⚠ unreadable",
                       "model": ui.visible(e.model), "tokens": e.n_tokens or None, "hops": e.hops if e.readable else None,
                       "method": ui.visible(e.method),
                       "created": e.created[:16].replace("T", " "), "size kB": round(e.size / 1e3, 1)}
                      for e in entries])
ui.table(table, hide_index=True, width="stretch", column_config=COLUMNS)
for e in entries:
    if not e.readable:
        st.warning(f"**{ui.plain(e.name)}** is unreadable and skipped: {ui.plain(e.error)}")

names = [e.name for e in entries]
wanted = ss.get("library_pick")
chosen = st.selectbox("Selected trace", names, index=names.index(wanted) if wanted in names else 0,
                      key=f"chosen_{ss.get('library_v', 0)}", format_func=ui.visible)
ss["library_pick"], ss["library_v"] = chosen, ss.get("library_v", 0)
entry = next(e for e in entries if e.name == chosen)
if entry.readable:
    st.page_link(ui.PAGES["explore"], label="Open in Explore", icon=":material/search:",
                 query_params={"trace": f"lib:{prefix}{chosen}"})
    export_buttons("export", chosen, lambda: lib.open(chosen))
    if not prefix:  # linked pairs (edit and re-run) live in the library itself
        with ui.shown_errors():
            pair_links(TraceRef("lib", chosen), load_trace(TraceRef("lib", chosen)))

if lib.read_only:
    st.stop()
with st.form(f"rename_{chosen}"):
    new_name = st.text_input("Rename to", value=ui.visible(chosen), key=f"rename_to_{chosen}", max_chars=200,
                             help="letters, digits, '.', '_' and '-'; anything else becomes '-'")
    if st.form_submit_button("Rename", key="rename"):
        with ui.shown_errors("Not renamed: "):
            final = lib.rename(chosen, new_name)
            adjusted = "" if final == new_name.strip() else (
                f" (names keep only letters, digits, '.', '_' and '-', so {ui.code_text(new_name.strip())} "
                f"became {ui.code_text(final)})")
            ss["library_notice"] = (f"{ui.code_text(chosen)} already has that name: nothing changed{adjusted}."
                                    if final == chosen else
                                    f"Renamed {ui.code_text(chosen)} to {ui.code_text(final)}{adjusted}.")
            select(final)
            st.rerun()

confirm = st.checkbox(f"Yes, delete '{ui.plain(chosen)}' for good", key=f"confirm_delete_{chosen}_{ss['library_v']}")
if st.button("Delete", type="primary", disabled=not confirm, key="delete"):
    with ui.shown_errors("Not deleted: "):
        lib.delete(chosen)
        after = names[names.index(chosen) + 1:] + names[:names.index(chosen)]
        ss["library_notice"] = f"Deleted {ui.code_text(chosen)}."
        select(after[0] if after else None)
        st.rerun()
