"""Floor 1: pure attribution math over a recording (proximity, span aggregation, hops, baselines).

The names below load on first use (`flashtrace.base.lazy`): the method registry (`METHODS`) imports without
torch, so the command line's help can list the methods and their options at once.
"""

from ...base.lazy import lazy_exports

_WHERE = {
    "Hop": ".hops", "recursive_hops": ".hops", "proximity": "..kernels.proximity", "METHODS": ".registry",
    "get_method": ".registry", "register": ".registry", "SpanAttribution": ".span", "span_aggregate": ".span",
    "tokenwise_aggregate": ".tokenwise", "tokenwise_rows": ".tokenwise",
}
__all__ = list(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
