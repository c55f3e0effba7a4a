"""A trace in one line (its ``repr``): model, tokens, hops, target and the top prompt sentence, with the
share `facts.analyse` computed. Short by construction (at most `MAX_CHARS`), so a notebook that saves a
trace's plain-text form next to its HTML stays small."""

from __future__ import annotations

from .schema import Trace
from .text import counted, pct, quote, short_text

MAX_CHARS = 200


def trace_line(trace: Trace) -> str:
    """``<Trace smollm2-135m · 56 tokens · 1 hop · target “Paris” · top sentence “…” 62 %>``, at most
    `MAX_CHARS` characters; the top sentence is left out when the analysis cannot be made.

    Args:
        trace: The recording to describe.

    Returns:
        The one-line description (never raises for a failed analysis).
    """
    lo, hi = trace.settings.target
    target = "".join(t.text for t in trace.tokens[lo:hi])
    head = (f"<Trace {short_text(trace.model.name, 40)} · {counted(trace.n_tokens, 'token')} · "
            f"{counted(trace.settings.hops, 'hop')} · target {quote(target, 30)}")
    try:
        from .facts import analyse

        facts = analyse(trace)
        best = facts.evidence(1)
    except Exception:  # noqa: BLE001 - a repr never raises; the line without its top piece
        return head[:MAX_CHARS - 1] + ">"
    if not best:
        return head + " · no prompt attribution>"
    piece, share = best[0]
    tail = f" {pct(share)}>"
    room = MAX_CHARS - len(head) - len(tail) - len(f" · top {facts.piece_kind} ") - 2
    return head + f" · top {facts.piece_kind} " + quote(piece.text, max(room, 12)) + tail


__all__ = ["trace_line", "MAX_CHARS"]
