"""One colour language for every view: blue for attribution on the prompt, orange for attribution on
generated text (reasoning and answer), grey for chat-template tokens.

Scales start from a light tint (never white or transparent) so cells and token backgrounds stay legible
with dark text in the light theme and with light text in the dark theme.
"""

from __future__ import annotations

PROMPT = "#2563eb"
REASONING = "#ea580c"
ANSWER = "#b45309"
TEMPLATE = "#9ca3af"
ROLE_COLORS = {"prompt": PROMPT, "reasoning": REASONING, "answer": ANSWER, "template": TEMPLATE}

# Stops are denser near zero: attribution is heavy-tailed, so a linear ramp would leave most tokens white.
PROMPT_SCALE = [[0.0, "#eef2fb"], [0.04, "#c7d7f8"], [0.2, "#7fa3ef"], [0.5, "#3f74e4"], [1.0, "#1e3a8a"]]
REASONING_SCALE = [[0.0, "#fdf1e8"], [0.04, "#fbd2b4"], [0.2, "#f59e63"], [0.5, "#e8691f"], [1.0, "#7c2d12"]]
TEMPLATE_SCALE = [[0.0, "#f1f2f4"], [0.2, "#d1d5db"], [1.0, "#6b7280"]]
ROLE_SCALES = {"prompt": PROMPT_SCALE, "generated": REASONING_SCALE, "template": TEMPLATE_SCALE}


def hex_to_rgb(color: str) -> tuple[int, int, int]:
    color = color.lstrip("#")
    return int(color[0:2], 16), int(color[2:4], 16), int(color[4:6], 16)


def scale_color(scale: list[list], t: float) -> str:
    """The colour at position `t` in [0, 1] of a Plotly-style scale (linear between stops) as ``#rrggbb``."""
    t = min(max(float(t), 0.0), 1.0)
    for (t0, c0), (t1, c1) in zip(scale, scale[1:]):
        if t <= t1:
            f = 0.0 if t1 == t0 else (t - t0) / (t1 - t0)
            rgb = [round(a + f * (b - a)) for a, b in zip(hex_to_rgb(c0), hex_to_rgb(c1))]
            return "#{:02x}{:02x}{:02x}".format(*rgb)
    return scale[-1][1]


def text_color_for(background: str) -> str:
    """Black or white, whichever reads better on `background` (WCAG relative luminance)."""
    def channel(c: int) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in hex_to_rgb(background))
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "#111827" if luminance > 0.18 else "#ffffff"
