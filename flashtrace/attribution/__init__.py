"""Floor 1: pure attribution math over a recording (proximity, span aggregation, hops, baselines)."""

from .hops import Hop, recursive_hops
from .kernels import proximity
from .registry import METHODS, get_method, register
from .span import SpanAttribution, span_aggregate
from .tokenwise import tokenwise_aggregate, tokenwise_rows

__all__ = ["Hop", "recursive_hops", "proximity", "METHODS", "get_method", "register", "SpanAttribution",
           "span_aggregate", "tokenwise_aggregate", "tokenwise_rows"]
