"""Exports of what a page shows: a standalone offline HTML page of one or more figures (plus escaped HTML
blocks), and PNG/SVG images of a figure.

Standalone HTML carries only the plotly.js parts the app's figures use: the official *cartesian* partial
bundle (heatmap, bar, scatter, ...; plotly.js 4.1.1, the version plotly.py 7.1 draws for, MIT licence,
vendored gzipped in ``vendor/``). It is embedded as base64 and unpacked by the browser's built-in
``DecompressionStream``, so a page of a 150-token trace stays well under 1.5 MB and needs no network.

PNG and SVG are drawn by kaleido 1.x, which drives a Chrome/Chromium it finds on the machine (Debian's
``/usr/bin/chromium`` works; ``BROWSER_PATH`` names another). Without one, `image_export_problem` says so and
the app offers the chart's own camera button (plotly's client-side PNG) instead.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import shutil
import warnings
from importlib import resources
from typing import TYPE_CHECKING, Sequence

import plotly.graph_objects as go
import plotly.io as pio

from ..base.errors import InputError, MissingDependencyError
from .tokens import safe_html

if TYPE_CHECKING:
    from collections.abc import Iterator

PLOTLY_JS_VERSION = "4.1.1"
BUNDLE = f"plotly-cartesian-{PLOTLY_JS_VERSION}.min.js.gz"
# trace types in the bundle (its README); a figure using anything else cannot be exported standalone
BUNDLE_TRACE_TYPES = frozenset({"bar", "box", "contour", "heatmap", "histogram", "histogram2d", "histogram2dcontour",
                                "image", "pie", "scatter", "scatterternary", "violin"})
CONFIG = {"displaylogo": False, "responsive": True}
CSP = ("default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; "
       "img-src data: blob:; font-src data:")


@functools.lru_cache(maxsize=1)
def bundle_base64() -> str:
    """The vendored gzipped plotly.js bundle as base64 (read once).

    Returns:
        The bundle's bytes, base64-encoded as ASCII text.
    """
    data = resources.files("flashtrace.viz").joinpath("vendor", BUNDLE).read_bytes()
    return base64.b64encode(data).decode("ascii")


def _script_json(value) -> str:
    """JSON safe inside a ``<script>`` element: ``<`` ``>`` ``&`` written as ``\\u`` escapes (they can only
    occur inside strings), and ``{{`` split so no template engine sees a placeholder."""
    text = value if isinstance(value, str) else json.dumps(value)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(ch, esc)
    return text.replace("{{", "{\\u007b")


def _no_template_braces(text: str) -> str:
    """HTML text with ``{{`` written as ``{&#123;`` (reads the same, never triggers a template engine)."""
    return text.replace("{{", "{&#123;")


def check_bundle_covers(fig: go.Figure) -> None:
    """Raise ValueError when `fig` uses a trace type the vendored bundle does not hold.

    Args:
        fig: The figure to be exported.

    Raises:
        InputError: When `fig` uses a trace type the vendored bundle does not hold (a ValueError).
    """
    missing = sorted({tr.type or "scatter" for tr in fig.data} - BUNDLE_TRACE_TYPES)
    if missing:
        raise InputError(f"the standalone export cannot draw {', '.join(missing)} traces")


_LOADER = """(async () => {
  const status = document.getElementById("ft-status");
  try {
    const packed = Uint8Array.from(atob(document.getElementById("ft-plotly").textContent.trim()), c => c.charCodeAt(0));
    const stream = new Blob([packed]).stream().pipeThrough(new DecompressionStream("gzip"));
    const code = await new Response(stream).text();
    const script = document.createElement("script");
    script.textContent = code;
    document.head.appendChild(script);
    for (const el of document.querySelectorAll("script[data-ft-figure]")) {
      const spec = JSON.parse(el.textContent);
      await Plotly.newPlot(document.getElementById(el.dataset.ftFigure), spec.data, spec.layout, spec.config);
    }
    status.remove();
    document.body.dataset.ftReady = "1";
  } catch (err) {
    status.textContent = "The charts could not be drawn in this browser (" + err + "). The text below still reads.";
  }
})();"""


def standalone_html(title: str, blocks: Sequence[go.Figure | str], intro: str = "") -> str:
    """A complete offline HTML document: `title` (escaped), optional `intro` (escaped), then each block in
    order: a figure (drawn by the embedded plotly.js) or a string of HTML the caller has already escaped.
    No network requests (a Content-Security-Policy forbids them); figures are interactive (hover, zoom,
    the camera button saves a PNG).

    Args:
        title: The page's title and heading (escaped).
        blocks: The page's content in order: figures, and strings of HTML the caller has already escaped.
        intro: A paragraph under the heading (escaped); empty for none.

    Returns:
        The whole HTML document, with the plotly.js bundle embedded when there is a figure.

    Raises:
        InputError: When a figure uses a trace type the vendored bundle does not hold (`check_bundle_covers`).
    """
    body, n_fig = [], 0
    for block in blocks:
        if isinstance(block, go.Figure):
            check_bundle_covers(block)
            spec = json.loads(pio.to_json(block, validate=False))
            spec["config"] = CONFIG
            div = f"ft-figure-{n_fig}"
            n_fig += 1
            body.append(f'<div id="{div}" class="ft-figure"></div>'
                        f'<script type="application/json" data-ft-figure="{div}">{_script_json(spec)}</script>')
        else:
            body.append(_no_template_braces(block))
    head_title = _no_template_braces(safe_html(title))
    loader = ""
    if n_fig:
        loader = (f'<script type="application/octet-stream" id="ft-plotly">{bundle_base64()}</script>'
                  f"<script>{_LOADER}</script>")
    status = '<p id="ft-status"><small>Drawing the charts…</small></p>' if n_fig else ""
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{head_title}</title>
<style>body{{font-family:system-ui,sans-serif;margin:24px;max-width:1200px;color:#1f2937}}
dt{{font-weight:600;float:left;width:140px}}dd{{margin:0 0 4px 150px}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 8px;text-align:left;font-family:ui-monospace,monospace}}
.ft-caption{{font-size:1.05rem;line-height:1.5}}</style></head><body>
<h1>{head_title}</h1>
{f'<p class="ft-caption">{_no_template_braces(safe_html(intro))}</p>' if intro else ''}{status}
{''.join(body)}
<p><small>Made with FlashTrace Studio. This file needs no network connection; hover the charts for values.</small></p>
{loader}
</body></html>"""
    return page


def image_export_problem() -> str | None:
    """Why PNG/SVG images cannot be drawn here (kaleido or a Chromium missing), or None when they can.

    Returns:
        A message saying what is missing and how to install it, or None when images can be drawn.
    """
    try:
        import kaleido  # noqa: F401
    except ImportError:
        return "PNG/SVG need the kaleido package (pip install kaleido)"
    import os

    path = os.environ.get("BROWSER_PATH")
    if path and os.path.exists(path):
        return None
    if any(shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome", "chrome")):
        return None
    return "PNG/SVG need a Chrome or Chromium browser on this machine (apt-get install chromium, or set BROWSER_PATH)"


def figure_image(fig: go.Figure, fmt: str, width: int | None = None, height: int | None = None,
                 scale: float = 2.0) -> bytes:
    """`fig` as PNG or SVG bytes through kaleido (a headless Chromium). Raises RuntimeError with a
    message when it cannot.

    Args:
        fig: The figure drawn.
        fmt: The image format: ``"png"`` or ``"svg"``.
        width: The image width in pixels; None for the figure's own, else 1200.
        height: The image height in pixels; None for the figure's own, else 500.
        scale: The pixel scale of a PNG (an SVG is always drawn at 1).

    Returns:
        The image file's bytes.

    Raises:
        InputError: When `fmt` is neither png nor svg.
        MissingDependencyError: When kaleido or a Chromium is missing, or drawing fails (a RuntimeError).
    """
    if fmt not in ("png", "svg"):
        raise InputError(f"image format must be png or svg, got {fmt!r}")
    problem = image_export_problem()
    if problem:
        raise MissingDependencyError(problem)
    width = width or fig.layout.width or 1200
    height = height or fig.layout.height or 500
    try:
        with warnings.catch_warnings():  # plotly says so on every image drawn inside `image_session`: harmless
            warnings.filterwarnings("ignore", message="The kopts argument is ignored", category=UserWarning)
            return fig.to_image(format=fmt, width=width, height=height, scale=scale if fmt == "png" else 1)
    except Exception as exc:  # noqa: BLE001 - kaleido raises many kinds; the user gets one message
        raise MissingDependencyError(f"could not draw the {fmt.upper()} ({type(exc).__name__}: {exc})") from None


@contextlib.contextmanager
def image_session() -> Iterator[None]:
    """Draw every `figure_image` inside the block with one headless browser instead of one started per image
    (a few seconds each). Does nothing where images cannot be drawn, or where a session is already open (the
    outer one keeps it); the browser is closed when the block ends, also on an error.

    Yields:
        None; the block runs while the browser is open.
    """
    if image_export_problem():
        yield
        return
    import kaleido

    server = kaleido._global_server  # noqa: SLF001 - kaleido 1.x offers no public "is it running?"
    if server.is_running():
        yield
        return
    kaleido.start_sync_server(silence_warnings=True)
    try:
        yield
    finally:
        kaleido.stop_sync_server(silence_warnings=True)


__all__ = ["standalone_html", "figure_image", "image_export_problem", "image_session", "bundle_base64",
           "PLOTLY_JS_VERSION"]
