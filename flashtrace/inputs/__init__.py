"""Text inputs: the token sequence with roles and offsets, and response span detection."""

from .sequence import ROLES, Sequence, Token, build_sequence, is_stop_token
from .spans import ResponseSpans, detect_spans

__all__ = ["ROLES", "Sequence", "Token", "build_sequence", "is_stop_token", "ResponseSpans", "detect_spans"]
