"""Glossary: every term and symbol the app shows, in one place; help tooltips link here (``/Glossary#rho``)."""

import streamlit as st

from flashtrace.app import ui
from flashtrace.app.glossary import TERMS

ui.page_setup("Glossary")
st.title("Glossary")
st.caption("Every term and symbol the app shows. The (?) help of a control links to its entry here.")
for term in TERMS:
    st.subheader(term.name, anchor=term.key)  # md-ok: constant terms
    st.markdown(term.text)  # md-ok: constant text
