"""Presentation figures: pure functions from a `Trace` (or analysis data) to a Plotly figure or escaped
HTML, one per view, shared by the app, the HTML export and the tests."""

from .colors import PROMPT, REASONING, ROLE_COLORS
from .heatmap import heatmap_values, token_heatmap, top_tokens
from .mass import mass_per_hop
from .tokens import step_values, token_grid, tokens_html, view_values, visible_label

__all__ = ["PROMPT", "REASONING", "ROLE_COLORS", "heatmap_values", "token_heatmap", "top_tokens", "mass_per_hop",
           "step_values", "token_grid", "tokens_html", "view_values", "visible_label"]
