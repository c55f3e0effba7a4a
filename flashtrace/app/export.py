"""The export row under a view: standalone HTML of what the page shows, and PNG/SVG of its main chart.

Files are made only when a button is clicked (Streamlit's deferred download data), so a page that offers
them pays nothing until then. PNG/SVG go through kaleido and a local Chromium (`viz.export.figure_image`);
where that is missing the buttons are disabled and say why, and every chart's own camera button (plotly,
in the browser) still saves a PNG.
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

import plotly.graph_objects as go
import streamlit as st

from ..viz.export import figure_image, image_export_problem, standalone_html

_MIME = {"html": "text/html", "png": "image/png", "svg": "image/svg+xml"}


def file_stem(name: str) -> str:
    """A safe file name stem from a trace or view name.

    Args:
        name: The trace or view name.

    Returns:
        `name` with every run of characters other than letters, digits, ``.``, ``_`` and ``-`` replaced by one
            ``-``, stripped of leading and trailing ``-`` and ``.``, at most 80 characters; "flashtrace" when
            nothing is left.
    """
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:80] or "flashtrace"


def export_buttons(name: str, title: str, blocks: Sequence[go.Figure | str], figure: go.Figure | None = None,
                   intro: str = "", key: str = "export") -> None:
    """Three download buttons: the view as one standalone offline HTML file, and `figure` as PNG and SVG.

    The files are made only on click. Where PNG/SVG cannot be drawn here (no kaleido or Chromium, or no
    chart) their buttons are disabled and say why.

    Args:
        name: The trace or view name the files are named after (through `file_stem`).
        title: The HTML page's title (escaped).
        blocks: The HTML page's content: figures and escaped HTML, in order.
        figure: The view's main chart, exported as PNG and SVG; None when the view has no chart.
        intro: Text under the title in the HTML page (escaped).
        key: The prefix of the buttons' widget keys (``{key}_html``, ``{key}_png``, ``{key}_svg``).
    """
    stem = file_stem(name)
    blocks = list(blocks)
    html_col, png_col, svg_col = st.columns(3)
    html_col.download_button(
        "HTML (offline page)", data=lambda: standalone_html(title, blocks, intro), file_name=f"{stem}.html",
        mime=_MIME["html"], key=f"{key}_html", on_click="ignore", icon=":material/download:",
        help="One HTML file with this view's text and interactive charts (hover for values); it opens offline "
             "and can be e-mailed.")
    problem = "this view has no chart" if figure is None else image_export_problem()
    tip = "; use the camera button on a chart to save a PNG from the browser" if figure is not None else ""
    for col, fmt in ((png_col, "png"), (svg_col, "svg")):
        label, name = f"{fmt.upper()} (main chart)", fmt.upper()
        tooltip = (f"Not available here: {problem}{tip}." if problem else
                   f"The main chart as {name}, drawn by a headless Chromium (takes a few seconds).")
        col.download_button(
            label, data=(lambda f=fmt: figure_image(figure, f)) if figure is not None else b"",  # md-ok: constants
            file_name=f"{stem}.{fmt}", mime=_MIME[fmt], key=f"{key}_{fmt}", on_click="ignore",
            icon=":material/image:", disabled=problem is not None, help=tooltip)  # md-ok: constant messages

def story_download(name: str, build: Callable[[], str], key: str = "story_whole") -> None:
    """One download button: the whole Story as one offline HTML file.

    Args:
        name: The trace name the file is named after (through `file_stem`).
        build: Makes the HTML file's text; called on click only.
        key: The button's widget key.
    """
    st.download_button(
        "Whole story (offline HTML)", data=build, file_name=f"{file_stem(name)}.html", mime=_MIME["html"], key=key,
        on_click="ignore", icon=":material/download:",
        help="Every step in one HTML file (under 1.5 MB, interactive charts, no network needed): to send "
             "after a meeting.")


__all__ = ["export_buttons", "file_stem", "story_download"]
