"""Fitting a 1280×720 projector: the compact page style every page uses (less empty space above the
title, a smaller title), the Story's presenter view (full width, no sidebar, large type) and its keyboard
keys. Styles are constant CSS; the keys are a small script that presses the page's own Back/Next buttons,
so a key does exactly what a click does (the step stays in the URL)."""

from __future__ import annotations

import streamlit as st
import streamlit.components.v2 as components

# Streamlit leaves 6rem above a page's first line (under a 3.75rem top bar) and draws the title at 2.75rem:
# at 720 px that pushes the main figure below the fold. The top bar (its menu, the running indicator) gets
# lower, the gap and the title smaller, and the sidebar's own top gap shrinks to match.
COMPACT_CSS = """<style>
[data-testid="stHeader"] { height: 2.75rem; min-height: 2.75rem; }
[data-testid="stMainBlockContainer"] { padding-top: 3rem; padding-bottom: 3rem; }
[data-testid="stMainBlockContainer"] h1 { font-size: 2.1rem; padding: 0 0 0.4rem 0; }
[data-testid="stSidebarHeader"] { margin-bottom: 0.5rem; }
</style>"""

# The presenter view: the page uses the whole width (no sidebar is drawn), the top bar's menu is hidden
# (it would sit over the step buttons), captions and panel text are large.
PRESENT_CSS = """<style>
[data-testid="stMainBlockContainer"] { padding: 0.8rem 2rem 2rem 2rem; max-width: none; }
[data-testid="stToolbar"], [data-testid="stDecoration"], [data-testid="stSidebar"],
[data-testid="stSidebarCollapsedControl"] { display: none; }
[data-testid="stHeader"] { background: transparent; height: 0; min-height: 0; }
.st-key-story_caption [data-testid="stMarkdownContainer"] p { font-size: 1.3rem; line-height: 1.5; }
.st-key-story_bar h3 { font-size: 1.9rem; padding: 0.2rem 0; }
</style>"""

# ArrowRight, Space and PageDown (what a presentation clicker sends) go forward; ArrowLeft, Shift+Space and
# PageUp go back; Escape leaves the presenter view. Keys typed into a field, or with a modifier, are left
# alone. One listener per page: a rerun replaces the previous one.
_KEYS_JS = """
export default function () {
  const previous = window.__ftStoryKeys;
  if (previous) document.removeEventListener("keydown", previous);
  const handler = (event) => {
    if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) return;
    const target = event.target;
    const typing = target && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
    if (typing) return;
    const space = event.key === " ";
    if (space && target && ["BUTTON", "SUMMARY", "A"].includes(target.tagName)) return;
    const action = space ? (event.shiftKey ? "back" : "next")
      : {ArrowRight: "next", PageDown: "next", ArrowLeft: "back", PageUp: "back", Escape: "exit"}[event.key];
    const button = action && document.querySelector(`.st-key-story_${action} button`);
    if (!button) return;
    event.preventDefault();
    if (!button.disabled) button.click();
  };
  window.__ftStoryKeys = handler;
  document.addEventListener("keydown", handler);
  return () => {
    document.removeEventListener("keydown", handler);
    if (window.__ftStoryKeys === handler) window.__ftStoryKeys = null;
  };
}
"""

_keys = components.component("flashtrace_story_keys", js=_KEYS_JS)


def compact_page() -> None:
    """The compact page style (every page calls it through `ui.page_setup`)."""
    st.html(COMPACT_CSS)


def presenter_view() -> None:
    """The presenter view's style (the page must not draw a sidebar)."""
    st.html(PRESENT_CSS)


def story_keys() -> None:
    """Keyboard keys for the Story's Back/Next (and Exit of the presenter view). The component draws
    nothing; its (empty) element is taken out of the layout so it leaves no gap."""
    st.html("<style>.st-key-story_keys { display: none; }</style>")
    _keys(key="story_keys", height=0)


__all__ = ["compact_page", "presenter_view", "story_keys", "COMPACT_CSS", "PRESENT_CSS"]
