"""FlashTrace Studio home page (placeholder until the app lands)."""

import streamlit as st

st.set_page_config(page_title="FlashTrace Studio", layout="wide")
st.title("FlashTrace Studio")
st.write("Why did the model say that? FlashTrace attributes a whole answer to the prompt tokens that caused it, "
         "hopping back through the model's reasoning chain.")
