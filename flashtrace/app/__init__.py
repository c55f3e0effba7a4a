"""Presentation floor, Streamlit side: session state and cached loads, page widgets, exports and method
runs for the pages in ``app.py`` and ``pages/``. Nothing below imports it."""
