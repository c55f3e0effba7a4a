"""One colour language for every view: blue for attribution on the prompt, orange for attribution on
generated text (reasoning and answer), grey for chat-template tokens; one fixed colour per evaluation
method name.

Scales start from a light tint (never white or transparent) so cells and token backgrounds stay legible
with dark text in the light theme and with light text in the dark theme.
"""

from __future__ import annotations

import colorsys
import zlib

from plotly.colors import hex_to_rgb, sample_colorscale  # hex_to_rgb: "#rrggbb" -> (r, g, b), re-exported

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
TARGET_OUTLINE = "#16a34a"  # target tokens (what is explained): outlined, never coloured by the scale
TARGET_FILL = "#e5e7eb"
SUSPECT = "#b91c1c"  # the prompt sentence an honest failure's edit removes: ringed in red in the Story
GOLD = "#b8860b"  # known evidence (gold spans): underlined in text, outlined in heatmaps, ringed in the hop graph

# The text view colours token backgrounds with one translucent hue per class, from nearly clear to 85 %
# opaque: over the light theme's white and the dark theme's near-black alike the text keeps the theme's
# own colour and stays readable (no light chips on a dark page). Opacity rises fastest near zero, like
# the heatmap scales.
CHIP_BASE = {"prompt": "#3f74e4", "generated": "#e8691f", "template": "#9ca3af"}
CHIP_ALPHA = [[0.0, 0.05], [0.04, 0.22], [0.2, 0.45], [0.5, 0.66], [1.0, 0.85]]


def scale_color(scale: list[list], t: float) -> str:
    """The colour at position `t` in [0, 1] of a Plotly-style scale (linear between stops) as ``#rrggbb``
    (`plotly.colors.sample_colorscale`).

    Args:
        scale: A Plotly-style colour scale: ``[position, colour]`` stops, positions rising from 0 to 1.
        t: The position in [0, 1]; values outside are clamped to it.

    Returns:
        The colour at `t`, as ``#rrggbb``.
    """
    (rgb,) = sample_colorscale(scale, [min(max(float(t), 0.0), 1.0)], colortype="tuple")
    return "#{:02x}{:02x}{:02x}".format(*(round(255 * c) for c in rgb))


def _ramp(stops: list[list[float]], t: float) -> float:
    t = min(max(float(t), 0.0), 1.0)
    for (t0, a0), (t1, a1) in zip(stops, stops[1:]):
        if t <= t1:
            return a0 if t1 == t0 else a0 + (t - t0) / (t1 - t0) * (a1 - a0)
    return stops[-1][1]


def chip_color(cls: str, t: float) -> str:
    """Background of a token at position `t` in [0, 1] of its class's scale in the text view, as
    ``rgba(...)`` (translucent, so it works on light and dark pages).

    Args:
        cls: The token's class: ``"prompt"``, ``"generated"`` or ``"template"``.
        t: The position in [0, 1] of the class's scale; values outside are clamped to it.

    Returns:
        The background colour, as ``rgba(r,g,b,alpha)``.
    """
    r, g, b = hex_to_rgb(CHIP_BASE[cls])
    return f"rgba({r},{g},{b},{_ramp(CHIP_ALPHA, t):.3f})"


def chip_solid(cls: str, t: float) -> str:
    """`chip_color` made opaque over white, as ``rgb(r,g,b)`` (for a terminal, which has no alpha).

    Args:
        cls: The token's class: ``"prompt"``, ``"generated"`` or ``"template"``.
        t: The position in [0, 1] of the class's scale; values outside are clamped to it.

    Returns:
        The opaque background colour, as ``rgb(r,g,b)``.
    """
    alpha = _ramp(CHIP_ALPHA, t)
    r, g, b = (round(255 + alpha * (c - 255)) for c in hex_to_rgb(CHIP_BASE[cls]))
    return f"rgb({r},{g},{b})"


def chip_gradient(cls: str) -> str:
    """A CSS linear gradient through the text view's colours of `cls`, from 0 to the top of the scale.

    Args:
        cls: The token class: ``"prompt"``, ``"generated"`` or ``"template"``.

    Returns:
        The CSS value ``linear-gradient(to right, ...)``, one stop per opacity stop of the text view.
    """
    return "linear-gradient(to right, " + ", ".join(f"{chip_color(cls, t)} {t * 100:.0f}%" for t, _a in CHIP_ALPHA) + ")"


def text_color_for(background: str) -> str:
    """Black or white, whichever reads better on `background` (WCAG relative luminance).

    Args:
        background: The background colour, as ``#rrggbb``.

    Returns:
        ``"#111827"`` (near black) on a light background, else ``"#ffffff"``.
    """
    def channel(c: int) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in hex_to_rgb(background))
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "#111827" if luminance > 0.18 else "#ffffff"


# Evaluation methods. FlashTrace variants take cool hues (the hue names the variant's stop-token rule or
# hop-0 span, the shade its hop count K, light to dark), the baselines warm or neutral ones. A name always
# gets the same colour, whichever run, chart or selection of methods it is drawn in. Every colour keeps a
# contrast of at least 2:1 on a white and on the dark theme's background, and no two are close.
FLASHTRACE_SHADES = {"": ("#60a5fa", "#2563eb", "#1e40af"),          # blue: the paper stop tokens (the authors' set)
                     "-punct": ("#06b6d4", "#0891b2", "#155e75"),    # cyan: punctuation stop tokens
                     "-nostop": ("#a78bfa", "#7c3aed", "#5b21b6"),   # violet: no stop tokens
                     "-gen": ("#14b8a6", "#0d9488", "#115e59")}      # teal: hop 0 over the whole generation
BASELINE_COLORS = {"ifr": "#ea580c", "ifr-rowwise": "#9a3412", "attention": "#db2777", "rollout": "#ca8a04",
                   "ig": "#16a34a", "perturbation": "#78716c"}
METHOD_PALETTE = {**{f"flashtrace-k{k}{variant}": color for variant, shades in FLASHTRACE_SHADES.items()
                     for k, color in enumerate(shades)}, **BASELINE_COLORS}
# Other names (more hops, a new method) start at a slot chosen by a hash of the name and take the next free one.
OTHER_METHOD_COLORS = ("#166534", "#d946ef", "#e11d48", "#4d7c0f", "#94a3b8", "#f472b6", "#854d0e", "#0369a1",
                       "#86198f", "#fb923c")


def _other_method_color(name: str, used: set[str]) -> str:
    start = zlib.crc32(name.encode("utf-8"))
    for i in range(len(OTHER_METHOD_COLORS)):
        color = OTHER_METHOD_COLORS[(start + i) % len(OTHER_METHOD_COLORS)]
        if color not in used:
            return color
    hue = start / 2 ** 32
    while True:  # palette used up: golden-angle steps round the hue circle
        color = "#{:02x}{:02x}{:02x}".format(*(round(255 * c) for c in colorsys.hls_to_rgb(hue, 0.45, 0.65)))
        if color not in used:
            return color
        hue = (hue + 0.381966) % 1.0


def method_colors(methods: list[str]) -> dict[str, str]:
    """A distinct ``#rrggbb`` colour for each of `methods`: the fixed `METHOD_PALETTE` colour where the
    name has one, else a free colour picked from the name (names taken in sorted order, so the same set of
    methods gets the same colours in any order).

    Args:
        methods: The evaluation method names, e.g. ``"flashtrace-k1"``, ``"ifr"``.

    Returns:
        ``{method: "#rrggbb"}``, in the order of `methods`.
    """
    colors = {m: METHOD_PALETTE[m] for m in methods if m in METHOD_PALETTE}
    used = set(colors.values())
    for m in sorted(set(methods) - set(colors)):
        colors[m] = _other_method_color(m, used)
        used.add(colors[m])
    return {m: colors[m] for m in methods}
