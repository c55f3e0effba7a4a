"""`TraceViews`: the notebook methods of a `Trace` (its rich display, Plotly figures, a pandas table).
They forward to `flashtrace.viz.notebook`, imported on first use, so loading a trace never imports Plotly
or pandas."""

from __future__ import annotations


class TraceViews:
    def _repr_html_(self) -> str:
        from ..viz.notebook import trace_html

        return trace_html(self)

    def heatmap(self, hop: int | None = None, **kwargs):
        """Plotly token heatmap: the combined prompt attribution, or hop `hop`'s own vector."""
        from ..viz.notebook import heatmap

        return heatmap(self, hop, **kwargs)

    def hop_graph(self, keep: float = 0.8, fold: bool = True):
        """Plotly hop graph (prompt sentences → steps → answer); needs a trace made with ``steps=True``."""
        from ..viz.notebook import hop_graph

        return hop_graph(self, keep, fold)

    def compare_depths(self, view: str = "added", shared: bool = True):
        """Plotly strips of what each hop adds (``view="cumulative"``: the picture after hops 0..K)."""
        from ..viz.notebook import compare_depths

        return compare_depths(self, view, shared)

    def to_pandas(self):
        """A pandas table, one row per token: text, role, offsets, final and prompt scores, per-hop contributions."""
        from ..viz.notebook import to_pandas

        return to_pandas(self)
