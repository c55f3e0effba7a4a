"""The library: saved traces, searchable; open, rename, delete (with confirmation), import and export."""

import pandas as pd
import streamlit as st

from flashtrace import ui
from flashtrace.app_state import library
from flashtrace.viz.report import trace_report_html

ui.page_setup("Library")
st.title("Library")
lib = library()
st.caption(f"Saved traces in {ui.code_text(str(lib.root))} (set `FLASHTRACE_LIBRARY` to use another folder).")

with st.expander("Import a trace (JSON)"):
    upload = st.file_uploader("Trace JSON file", type=["json"], key="import_file")
    if upload is not None and st.button("Import", key="import"):
        with ui.shown_errors("Not imported: "):
            name = lib.import_json(upload.getvalue(), name=upload.name.removesuffix(".json"))
            st.success(f"Imported as **{ui.plain(name)}**.")

query = st.text_input("Search", key="search", placeholder="words in the name, title, model, method or prompt")
entries = lib.search(query)
if not entries:
    st.info("No traces match." if query.strip() else "The library is empty: run a trace on the Trace page, "
            "or import a JSON file.")
    st.stop()

table = pd.DataFrame([{"name": e.name, "title": e.title if e.readable else "⚠ unreadable", "model": e.model,
                       "tokens": e.n_tokens or None, "hops": e.hops if e.readable else None, "method": e.method,
                       "created": e.created, "size kB": round(e.size / 1e3, 1)} for e in entries])
st.dataframe(table, hide_index=True, width="stretch")
for e in entries:
    if not e.readable:
        st.warning(f"**{ui.plain(e.name)}** is unreadable and skipped: {ui.plain(e.error)}")

names = [e.name for e in entries]
if st.session_state.get("chosen_after") in names:
    st.session_state["chosen"] = st.session_state.pop("chosen_after")
chosen = st.selectbox("Selected trace", names, key="chosen")
entry = next(e for e in entries if e.name == chosen)
c_open, c_json, c_html = st.columns(3)
if entry.readable:
    c_open.page_link(ui.PAGES["explore"], label="Open in Explore", icon=":material/search:", query_params={"trace": f"lib:{chosen}"})
    with ui.shown_errors():
        c_json.download_button("Export JSON", lib.export_json(chosen), file_name=f"{chosen}.json",
                               mime="application/json", key="export_json")
        c_html.download_button("Export HTML", trace_report_html(lib.open(chosen)), file_name=f"{chosen}.html",
                               mime="text/html", key="export_html")

with st.form("rename"):
    new_name = st.text_input("Rename to", value=chosen, key=f"rename_to_{chosen}")
    if st.form_submit_button("Rename", key="rename"):
        with ui.shown_errors("Not renamed: "):
            final = lib.rename(chosen, new_name)
            st.session_state["chosen_after"] = final
            st.rerun()

confirm = st.checkbox(f"Yes, delete '{ui.plain(chosen)}' for good", key="confirm_delete")
if st.button("Delete", type="primary", disabled=not confirm, key="delete"):
    with ui.shown_errors("Not deleted: "):
        lib.delete(chosen)
        st.session_state.pop("chosen", None)
        st.session_state.pop("confirm_delete", None)
        st.toast(f"Deleted {ui.plain(chosen)}")
        st.rerun()
