"""Widget helpers shared by the app's pages: page setup, errors shown in the page, widgets kept in sync
with the URL query string, the trace picker and the trace header."""

from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import streamlit as st

from . import screen
from .state import TraceRef, load_trace, read_only, trace_choices
from .glossary import help_link
from ..analysis.schema import Trace
from ..analysis.text import counted
from ..viz.tokens import show_controls

if TYPE_CHECKING:
    from collections.abc import Iterator

    from streamlit.delta_generator import DeltaGenerator
    from streamlit.elements.arrow import DataframeState

PAGES = {"home": "app.py", "trace": "pages/1_Trace.py", "explore": "pages/2_Explore.py", "graph": "pages/3_Hop_graph.py",
         "compare": "pages/4_Compare.py", "library": "pages/5_Library.py", "evaluation": "pages/6_Evaluation.py",
         "story": "pages/7_Story.py", "glossary": "pages/8_Glossary.py"}
FAVICON = Path(__file__).parent.parent / "assets" / "favicon.png"
NAV = [(PAGES["home"], "Home", ":material/home:"), (PAGES["trace"], "Trace", ":material/play_arrow:"), (PAGES["explore"], "Explore", ":material/search:"),
       (PAGES["graph"], "Hop graph", ":material/hub:"), (PAGES["compare"], "Compare", ":material/compare:"),
       (PAGES["library"], "Library", ":material/folder_open:"), (PAGES["evaluation"], "Evaluation", ":material/fact_check:"),
       (PAGES["story"], "Story", ":material/auto_stories:"), (PAGES["glossary"], "Glossary", ":material/menu_book:")]


def page_setup(title: str, sidebar: bool = True) -> None:
    """Page title and layout (compact, to fit a 1280×720 screen), and the sidebar's page list (it replaces
    Streamlit's own listing of pages/, which would name the home page after its file); `sidebar` False
    draws no sidebar (the Story's presenter view). The page icon is a file served by the app: a
    ``:material/...:`` or emoji icon would make the browser fetch it from a font or emoji host.

    The sidebar also holds the Details toggle (kept in the URL as ``?details=1``); a read-only demo lists no
    Trace page and says what it is.

    Args:
        title: The page's name, in the browser tab's title (``<title> · FlashTrace Studio``).
        sidebar: Whether the sidebar is drawn; False for none (the Story's presenter view).
    """
    st.set_page_config(page_title=f"{title} · FlashTrace Studio", page_icon=str(FAVICON), layout="wide")
    st.set_option("client.showSidebarNavigation", False)
    screen.compact_page()
    if not sidebar:
        return
    with st.sidebar:
        for path, label, icon in NAV:
            if not (read_only() and path == PAGES["trace"]):  # a read-only demo runs no model
                st.page_link(path, label=label, icon=icon)  # md-ok: the constant NAV
        if read_only():
            st.caption("Read-only demo: browse and export; nothing runs a model or changes the library.")
        on = st.toggle("Details", value=st.query_params.get("details") == "1", key="details",
                       help=help_link("rho", "Show the technical details too: sentence ids (P3, S2), token positions "
                                      "and ρ, the hop mass. Off, every view speaks in words."))
        if on != (st.query_params.get("details") == "1"):
            if on:
                st.query_params["details"] = "1"
            else:
                del st.query_params["details"]


def details() -> bool:
    """Whether the reader asked for technical details (ids, positions, ρ): the sidebar's Details toggle.

    Returns:
        The toggle's value, or before it is drawn whether the URL holds ``?details=1``.
    """
    return bool(st.session_state.get("details", st.query_params.get("details") == "1"))


_MD_PUNCT = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation character (CommonMark escapes any)
_BARE_LINK = re.compile(r"(?=://)|(?=@)|(?<=www)(?=\.)", re.I)  # where GFM would start a bare URL or e-mail link
WORD_JOINER = "\u2060"  # invisible, zero width: splits a bare link without changing what is shown


MISSING = "—"  # what a table shows for a value it does not have (Streamlit would print "None")


def table(data: Any, **options: Any) -> DeltaGenerator | DataframeState:
    """`st.dataframe` with missing values shown as `MISSING` and every text cell and column name through `visible`
    (bidirectional controls written out); every table of the app is drawn through it.

    Args:
        data: The table: a pandas DataFrame, a list of row dicts or a dict of columns (anything else is passed
            to `st.dataframe` as it is).
        **options: Passed on to `st.dataframe` (``hide_index``, ``key``, ``column_config``, ...).

    Returns:
        What `st.dataframe` returns: the element, or its selection state when it takes selections.
    """
    return st.dataframe(_visible_cells(data), placeholder=MISSING, **options)  # md-ok: a constant dash


def _visible_cells(data):
    """`data` (a DataFrame, a list of row dicts or a dict of columns) with its text cells and names `visible`."""
    import pandas as pd

    def cell(value):
        return visible(value) if isinstance(value, str) else value

    if isinstance(data, pd.DataFrame):
        shown = data.map(cell)
        shown.columns = [cell(c) for c in data.columns]
        return shown
    if isinstance(data, list):
        return [{cell(k): cell(v) for k, v in row.items()} if isinstance(row, dict) else row for row in data]
    if isinstance(data, dict):
        return {cell(k): [cell(v) for v in values] if isinstance(values, list) else values
                for k, values in data.items()}
    return data


def plain(value: object) -> str:
    """`value` as literal text for a Streamlit element that renders Markdown (st.caption, st.error, st.warning,
    st.success, st.subheader, st.toast, link and widget labels). Every ASCII punctuation character is
    backslash-escaped, so links, images, HTML, `:color[...]` directives, emoji and icon codes, maths and
    emphasis show as typed; an invisible word joiner keeps bare URLs and e-mail addresses from becoming
    links; line breaks stay line breaks and leading spaces stay spaces (never a code block).
    Bidirectional controls (U+202E...) are written out (``⟨U+202E⟩``), never applied to what follows.
    Use it for every string that comes from a user, a trace file, a file name or the URL.

    Args:
        value: What to show; not a string is shown as its ``str()``.

    Returns:
        The Markdown source that renders as `value`'s text, literally.
    """
    text = _BARE_LINK.sub(WORD_JOINER, visible(value)).replace("\r\n", "\n").replace("\r", "\n").replace("\t", "    ")
    lines = []
    for line in _MD_PUNCT.sub(r"\\\1", text).split("\n"):
        body = line.lstrip(" ")
        lines.append("\u00a0" * (len(line) - len(body)) + body)
    return "  \n".join(lines)


def visible(value: object) -> str:
    """`value` as text for elements that show text as it is (table cells, select options, ``st.text``):
    bidirectional controls written out, so a file named ``report-<U+202E>evil`` never shows as "report-live".

    Args:
        value: What to show; not a string is shown as its ``str()``.

    Returns:
        The text, with every bidirectional control written out (``⟨U+202E⟩``).
    """
    return show_controls(str(value))


def error_message(exc: BaseException) -> str:
    """An exception as one line for the user: its message, prefixed with its type unless it is a
    ValueError, OSError or RuntimeError.

    Args:
        exc: The exception.

    Returns:
        Its message (its type's name when the message is empty), prefixed with ``<type>: `` unless it is a
            ValueError, OSError or RuntimeError.
    """
    text = str(exc).strip() or type(exc).__name__
    return text if isinstance(exc, (ValueError, OSError, RuntimeError)) else f"{type(exc).__name__}: {text}"


@contextmanager
def shown_errors(prefix: str = "") -> Iterator[None]:
    """Show any exception raised inside as an error box on the page (never a traceback).

    Args:
        prefix: Markdown before the error's message in the box (the caller's constant, not escaped).

    Yields:
        None, once: the block whose errors are shown (and not raised further).
    """
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - the page must survive anything the library raises
        st.error(prefix + plain(error_message(exc)))  # md-ok: prefix is the caller's constant


def synced(widget: Callable[..., Any], label: str, param: str, options: Sequence[str], default: str,
           **kwargs: Any) -> str:
    """A choice widget (selectbox, radio, select_slider, segmented_control) whose value lives in the URL
    query parameter `param`: a shared link reopens the same choice.

    Args:
        widget: The Streamlit widget function (`st.selectbox`, `st.radio`, ...).
        label: The widget's label (Markdown).
        param: The URL query parameter holding the value; the widget's key is ``qp_<param>``.
        options: The choices.
        default: The choice when the URL names none, or one not among `options`, or the widget gives None.
        **kwargs: Passed on to `widget`; a ``format_func`` is applied before `visible`.

    Returns:
        The chosen option (written to the URL when it changed).
    """
    key = f"qp_{param}"
    last = f"{key}__synced"
    url_value = st.query_params.get(param, default)
    if url_value not in options:
        url_value = default
    if key not in st.session_state or st.session_state.get(last) != url_value:
        st.session_state[key] = url_value  # first run, or the URL changed (a link was opened)
    shown = kwargs.pop("format_func", str)
    value = widget(label, options=list(options), key=key, format_func=lambda option: visible(shown(option)), **kwargs)
    if value is None:
        value = default
    if st.query_params.get(param, default) != value:  # only real changes: a URL write makes the page rerun
        st.query_params[param] = value
    st.session_state[last] = value
    return value


def trace_picker(label: str = "Trace") -> tuple[TraceRef, Trace] | None:
    """Choose a trace (gallery or library), kept in ``?trace=``; returns it loaded, or None.

    A trace the URL names that the listing does not show is offered too.

    Args:
        label: The picker's label.

    Returns:
        ``(reference, trace)``; None, with a message on the page, when there is no trace or the chosen one
            cannot be read.
    """
    choices = trace_choices()
    current = st.query_params.get("trace")
    if current and current not in choices:
        choices[current] = current  # a link to a trace the listing does not show (yet): try it anyway
    if not choices:
        st.info("No traces yet: the gallery is empty and the library has nothing readable. "
                "Run one on the Trace page or rebuild the gallery with `flashtrace gallery`.")
        return None
    options = list(choices)
    ref = synced(st.selectbox, label, "trace", options, current if current in choices else options[0],
                 format_func=lambda r: choices.get(r, r))
    return _opened(ref)


def url_trace() -> tuple[TraceRef, Trace] | None:
    """The trace ``?trace=`` names (or the first one listed), loaded, with no picker shown (the Story's
    presenter view); None, with a message, when there is none or it cannot be read.

    Returns:
        ``(reference, trace)``, or None.
    """
    ref = st.query_params.get("trace") or next(iter(trace_choices()), None)
    if ref is None:
        st.info("No traces yet: the gallery is empty and the library has nothing readable.")
        return None
    return _opened(ref)


def _opened(ref: str) -> tuple[TraceRef, Trace] | None:
    try:
        parsed = TraceRef.parse(ref)
        return parsed, load_trace(parsed)
    except Exception as exc:  # noqa: BLE001
        st.error(f"Cannot open {plain(ref)}: {plain(error_message(exc))}")
        return None


def trace_page(title: str, heading: str | None = None) -> tuple[TraceRef, Trace] | None:
    """Set up a page about one trace: title, the trace picker (kept in the URL) and the trace's header.

    Args:
        title: The page's title (`page_setup`), also its heading unless `heading` is given.
        heading: The heading shown on the page; None for `title`.

    Returns:
        The picked ``(reference, trace)`` or None.
    """
    page_setup(title)
    head, pick = st.columns([2, 3], vertical_alignment="bottom")  # one row: the figure starts higher
    head.title(heading or title)
    with pick:
        picked = trace_picker()
    if picked:
        trace_header(picked[1])
    return picked


def trace_header(trace: Trace) -> None:
    """One line of facts about a trace and the text it explains.

    Args:
        trace: The trace (its model, size, method and hops, ρ per hop with details on, and its target's text).
    """
    lo, hi = trace.settings.target
    target = "".join(t.text for t in trace.tokens[lo:hi])
    s = trace.settings
    line = (f"**{plain(trace.model.name)}** ({plain(trace.model.family)}) · {trace.n_tokens:,} tokens · "
            f"method {plain(s.method)} · {plain(counted(s.hops, 'hop'))} · "
            + ("hop 0 over the reasoning and the answer" if s.hop0 == "generation" else "hop 0 over the answer"))
    if details():
        line += " · ρ " + ", ".join(f"{h.rho:.3f}" for h in trace.hops) + " · " + help_link("rho")
    st.caption(line)  # md-ok: numbers, settings from a fixed set and escaped names
    st.markdown("Target: " + code_text(target[:300] + ("…" if len(target) > 300 else "")))


def code_text(text: str) -> str:
    """`text` as inline code, safe in Markdown (backticks and newlines neutralised).

    Args:
        text: The text.

    Returns:
        `text` between backticks, its own backticks replaced by ``ˋ`` and its newlines by ``↵``.
    """
    return "`" + text.replace("`", "ˋ").replace("\n", "↵ ") + "`"


def nav_links(ref: TraceRef | str, here: str) -> None:
    """Links to the other views of the same trace.

    Args:
        ref: The trace's reference, or its text (the links' ``?trace=``; the Library's link takes none).
        here: The current page's key in `PAGES` (``story``, ``explore``, ...), which gets no link.
    """
    cols = st.columns(5)
    for col, (page, label) in zip(cols, (("story", "Story"), ("explore", "Explore"), ("graph", "Hop graph"),
                                         ("compare", "Compare"), ("library", "Library"))):
        if page != here:
            col.page_link(PAGES[page], label=label, icon=":material/arrow_forward:",  # md-ok: constant labels
                          query_params={"trace": str(ref)} if page != "library" else None)


def hop_options(trace: Trace) -> list[str]:
    """The hop choices of a trace's views: "combined" and each hop's number.

    Args:
        trace: The trace.

    Returns:
        ``["combined", "0", "1", ...]``, one number per hop of the trace.
    """
    return ["combined"] + [str(h.k) for h in trace.hops]


def heatmap_window(trace: Trace, values: list[float], positions: list[int], param: str | None = "at",
                   gold: set[int] | None = None) -> tuple[int, int] | None:
    """For a long trace, a slider choosing which window of tokens the heatmap draws (kept in the URL as
    `param`, or per widget when None); it starts on the window holding the top value among `positions`, or,
    for a trace that knows its evidence (`gold` positions), the window of the best-scored gold token, so the
    known evidence is drawn (a caption then names the top token's window). None when the whole trace fits in
    one heatmap.

    Args:
        trace: The trace the heatmap draws.
        values: The heatmap's scores, one per token position.
        positions: The positions among which the top value is looked for.
        param: The URL query parameter keeping the window; None to keep it per widget instead.
        gold: The positions of the trace's known evidence; None when it knows none.

    Returns:
        The chosen window's token range ``(start, end)``, end excluded, or None.
    """
    from ..viz.heatmap import heatmap_windows, window_of  # plotly: only on pages that draw

    windows = heatmap_windows(trace.n_tokens)
    if len(windows) == 1:
        return None
    labels = [f"{lo}–{hi - 1}" for lo, hi in windows]
    top = window_of(windows, values, positions)
    first = window_of(windows, values, sorted(gold)) if gold else top
    if first != top:
        st.caption(plain(f"The heatmap opens on the known evidence (gold, tokens {labels[first]}); the "
                         f"highest-scored token is in tokens {labels[top]}."))
    default = labels[first]
    label = "Tokens shown (long trace: one window at a time; the text and segment views show everything)"
    if param:
        chosen = synced(st.select_slider, label, param, labels, default)  # md-ok: constant label
    else:
        chosen = st.select_slider(label, labels, default, key=f"window_{default}_{len(values)}")  # md-ok: constant
    return windows[labels.index(chosen)]
