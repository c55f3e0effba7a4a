"""Words and numbers as every view writes them: one percent format, one way to shorten trace text, and
labels that tell sentences apart. All output is plain text (pages show it literally; figures escape it)."""

from __future__ import annotations

import re
from collections import defaultdict

NBSP = "\u00a0"
_SPECIAL = re.compile(r"<\|[^|<>]{0,40}\|>|</?s>|\[/?INST\]")  # chat-template markers


def pct(share: float, digits: int = 0) -> str:
    """A share as a percentage with a no-break space: ``"78 %"``, ``"78.3 %"`` (`digits`), ``"<1 %"`` for
    a small non-zero share that would round to zero (decided on the rounded text itself, so a share at exactly
    half the last digit, which rounds to even, reads "<1 %" too).

    Args:
        share: The share, 0..1 (0.78 for 78 %).
        digits: How many decimals the percentage shows (``"<0.1 %"`` with 1 for a share that would round to zero).

    Returns:
        The percentage as text, its number and ``%`` joined by `NBSP`.
    """
    shown = f"{100 * share:.{digits}f}"
    if share > 0 and float(shown) == 0:
        return f"<{10 ** -digits:g}{NBSP}%"
    return f"{shown}{NBSP}%"


def points(delta: float) -> str:
    """A difference of two shares in percentage points: ``"3.2 points"``.

    Args:
        delta: The difference of two shares (0..1 scale); its sign is dropped.

    Returns:
        The absolute difference in points, one decimal.
    """
    return f"{100 * abs(delta):.1f} points"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``"1 step"``, ``"3 steps"``: a count with its noun in the right number.

    Args:
        n: The count (written with thousands separators).
        noun: The noun in the singular.
        plural: The plural, when it is not `noun` + "s".

    Returns:
        The count and its noun.
    """
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def ordinal(n: int | None) -> str:
    """1st, 2nd, 3rd, 11th, 22nd ...; "unranked" for None.

    Args:
        n: A rank (1 = first), or None.

    Returns:
        The ordinal, or "unranked" when `n` is None.
    """
    if n is None:
        return "unranked"
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def flat(text: str) -> str:
    """`text` on one line: chat-template markers dropped, whitespace collapsed.

    Args:
        text: The trace text.

    Returns:
        The text on one line, single spaces between words, trimmed.
    """
    return " ".join(_SPECIAL.sub(" ", text).split())


def short_text(text: str, limit: int = 70) -> str:
    """`text` on one line, shortened in the middle when longer than `limit` (a sentence's end often holds
    what tells it apart, such as the number a needle sentence states). The cuts fall between words ("… hidden in
    the following text.", never "… dden in the following text.") unless a word is too long to keep whole.

    Args:
        text: The trace text.
        limit: The length in characters above which the text is shortened.

    Returns:
        The text on one line (`flat`; "(whitespace)" when nothing is left), with " … " in place of its middle
            when it was longer than `limit`.
    """
    text = flat(text) or "(whitespace)"
    if len(text) <= limit:
        return text
    head = (limit - 3) * 2 // 5
    start = len(text) - (limit - 3 - head)
    if not text[head].isspace():  # the head would end inside a word: end it at the word before
        space = text.rfind(" ", head // 2, head)
        head = space if space > 0 else head
    if not text[start - 1].isspace():  # the tail would start inside a word: start it at the next word
        space = text.find(" ", start, start + (len(text) - start) // 2)
        start = space + 1 if space >= 0 else start
    return text[:head].rstrip() + " … " + text[start:].lstrip()


def quote(text: str, limit: int = 70) -> str:
    """Trace text for a sentence: `short_text` in curly quotes.

    Args:
        text: The trace text.
        limit: The length above which the text is shortened (`short_text`).

    Returns:
        The shortened text between “ and ”.
    """
    return "“" + short_text(text, limit) + "”"


def _differing_part(text: str, others: list[str], limit: int) -> str:
    """`text` cut to `limit` characters around where it first differs from `others` (which share its
    shortened form), with an ellipsis on each cut side."""
    prefix = min((_common_prefix(text, o) for o in others), default=0)
    suffix = min((_common_prefix(text[::-1], o[::-1]) for o in others), default=0)
    lo = max(0, min(prefix, len(text) - suffix) - 8)
    lo = text.rfind(" ", 0, lo) + 1 if lo > 0 else 0
    window = text[lo: lo + limit - 2 * (lo > 0)]
    cut_end = lo + len(window) < len(text)
    return ("… " if lo > 0 else "") + window.strip() + (" …" if cut_end else "")


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def distinct_labels(texts: list[str], limit: int = 48) -> list[str]:
    """A short label for each text (`short_text`), where labels that would be identical show instead the
    part where their texts differ (``"… number for key X is: 2201 …"``); texts identical in full get
    ``(1)``, ``(2)`` after their label. No two labels in the result are equal.

    Args:
        texts: The texts to label (sentences, steps).
        limit: The length of a label in characters (before any ``(1)``, ``(2)``).

    Returns:
        One label per text, in the same order.
    """
    labels = [short_text(t, limit) for t in texts]
    groups: dict[str, list[int]] = defaultdict(list)
    for i, label in enumerate(labels):
        groups[label].append(i)
    for members in (m for m in groups.values() if len(m) > 1):
        full = [flat(texts[i]) for i in members]
        for j, i in enumerate(members):
            labels[i] = _differing_part(full[j], full[:j] + full[j + 1:], limit)
    seen: dict[str, int] = defaultdict(int)
    counts = defaultdict(int)
    for label in labels:
        counts[label] += 1
    out = []
    for label in labels:
        if counts[label] > 1:
            seen[label] += 1
            label = f"{label} ({seen[label]})"
        out.append(label)
    return out


__all__ = ["pct", "points", "counted", "flat", "short_text", "quote", "distinct_labels", "NBSP"]
