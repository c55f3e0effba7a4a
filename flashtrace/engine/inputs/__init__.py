"""Text inputs: the token sequence with roles and offsets, and response span detection."""

from .sequence import (DEFAULT_STOP_TOKENS, REASONING_INSTRUCTION, ROLES, STOP_PRESETS, StopTokens, Token, TokenSequence,
                       build_sequence, is_punctuation_token, is_stop_token, parse_stop_tokens, scaffold_range, stop_rule)
from .spans import ResponseSpans, answer_guess, answer_value, asked_text, detect_spans, is_question

__all__ = ["ROLES", "TokenSequence", "Token", "build_sequence", "is_stop_token", "is_punctuation_token", "stop_rule",
           "parse_stop_tokens", "StopTokens", "STOP_PRESETS", "DEFAULT_STOP_TOKENS", "ResponseSpans", "detect_spans",
           "answer_guess", "answer_value", "asked_text", "is_question",
           "REASONING_INSTRUCTION", "scaffold_range"]
