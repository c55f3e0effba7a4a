"""The story of one trace, for a non-specialist: five captioned panels built from a `Trace` alone (no
model), each a plain-text caption plus the data its figure draws.

1. ``question``: the question and the answer the model gave;
2. ``direct``: what the answer reads directly (hop 0): its split between the prompt and the model's own
   reasoning, and the prompt words and sentences it reads most;
3. ``hops``: how the reasoning passes it on: the share of the answer's attribution that has reached the
   input after hops 0..K (``1 − ρ_K``), what each hop added, and the top sentence at each depth;
4. ``evidence``: the prompt sentences (and tokens) with the most final attribution;
5. ``check``: the faithfulness check (`flashtrace.evaluate.faithfulness`): precomputed in
   ``trace.extra["faithfulness"]`` for gallery traces, computed live with a model otherwise.

Captions are plain text (the page shows them literally); quoted trace text is shortened, never marked up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .schema import Trace

FAITHFULNESS_KEY = "faithfulness"  # the same key as flashtrace.evaluate.faithfulness (kept torch-free here)
STEPS = ("question", "direct", "hops", "evidence", "check")
TITLES = {"question": "The question and the answer", "direct": "What the answer reads directly",
          "hops": "How the reasoning passes it on", "evidence": "The evidence in the prompt",
          "check": "Is it faithful? Delete the evidence and watch the answer"}


@dataclass(frozen=True)
class Piece:
    """A ranked prompt piece (sentence/line or token): its id (segment id or position), text and share."""

    key: str
    text: str
    share: float


@dataclass(frozen=True)
class Panel:
    key: str  # one of STEPS
    title: str
    caption: str  # plain text, shown literally
    data: dict[str, Any] = field(default_factory=dict)


def pct(x: float) -> str:
    """A share as a whole percentage, ``"78 %"`` with a no-break space (``"<1 %"`` for small non-zero shares)."""
    return "<1\u00a0%" if 0 < x < 0.005 else f"{100 * x:.0f}\u00a0%"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``"1 step"``, ``"3 steps"``: a count with its noun in the right number."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def quote(text: str, limit: int = 90) -> str:
    """Trace text for a caption: whitespace collapsed, shortened with an ellipsis, in quotes."""
    flat = " ".join(text.split())
    if not flat:
        return "(whitespace)"
    return "“" + (flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…") + "”"


def role_shares(trace: Trace, vector: list[float]) -> dict[str, float]:
    """Share of `vector`'s total on the prompt, the chat template and the generated text (reasoning +
    answer)."""
    sums = {"prompt": 0.0, "template": 0.0, "generated": 0.0}
    for tok, v in zip(trace.tokens, vector):
        sums["generated" if tok.role in ("reasoning", "answer") else tok.role] += v
    total = sum(sums.values())
    return {k: (v / total if total > 0 else 0.0) for k, v in sums.items()}


def prompt_pieces(trace: Trace, vector: list[float], k: int = 3) -> list[Piece]:
    """The `k` prompt sentences (segments; tokens when the trace has none) holding most of `vector`'s
    prompt total, as shares of that total."""
    positions = trace.positions("prompt")
    total = sum(vector[i] for i in positions)
    if total <= 0:
        return []
    if trace.segments:
        rows = [(seg.id, seg.text, sum(vector[seg.start:seg.end])) for seg in trace.segments if seg.role == "prompt"]
    else:
        rows = [(str(i), trace.tokens[i].text, vector[i]) for i in positions]
    rows.sort(key=lambda r: -r[2])
    return [Piece(key, text, v / total) for key, text, v in rows[:k] if v > 0]


def prompt_tokens(trace: Trace, vector: list[float], k: int = 5) -> list[Piece]:
    """The `k` prompt tokens with the most of `vector`, as shares of its prompt total (ties: earlier first)."""
    positions = trace.positions("prompt")
    total = sum(vector[i] for i in positions)
    ranked = sorted(positions, key=lambda i: -vector[i])[:k]
    return [Piece(str(i), trace.tokens[i].text, vector[i] / total) for i in ranked if total > 0 and vector[i] > 0]


def _words(pieces: list[Piece]) -> str:
    return ", ".join(quote(p.text, 30) for p in pieces)


def _text_of(trace: Trace, roles: tuple[str, ...], lo: int = 0, hi: int | None = None) -> str:
    return "".join(t.text for t in trace.tokens[lo:hi] if t.role in roles).strip()


def question_panel(trace: Trace) -> Panel:
    lo, hi = trace.settings.target
    answer = "".join(t.text for t in trace.tokens[lo:hi]).strip()
    reasoning = _text_of(trace, ("reasoning",))
    steps = sum(1 for s in trace.segments or [] if s.role == "reasoning")
    is_answer = trace.spans.answer is not None and tuple(trace.spans.answer) == (lo, hi)
    said = (f"answered {quote(answer, 120)}" if is_answer else
            f"wrote a response; the part explained here (the target) is {quote(answer, 120)}")
    caption = (f"The model ({trace.model.name}) was asked the question below and {said}. "
               + (f"Before answering it reasoned in {counted(steps, 'step')}. " if reasoning and steps else
                  "Before answering it reasoned. " if reasoning else "It answered without reasoning first. ")
               + "The next panels show which parts of the question that answer rests on.")
    return Panel("question", TITLES["question"], caption,
                 {"question": trace.prompt, "reasoning": reasoning, "answer": answer})


def direct_panel(trace: Trace) -> Panel:
    raw = trace.hops[0].raw if trace.hops else trace.scores.final
    shares = role_shares(trace, raw)
    sentences, tokens = prompt_pieces(trace, raw), prompt_tokens(trace, raw)
    caption = (f"Read directly (hop 0), the answer draws {pct(shares['prompt'])} of its attribution from the prompt, "
               f"{pct(shares['generated'])} from the model's own reasoning and answer text, and "
               f"{pct(shares['template'])} from the chat template around them.")
    if tokens:
        caption += f" The prompt words it reads most: {_words(tokens)}."
    if getattr(trace.settings, "hop0", "answer") == "generation":
        caption += (" (In this trace hop 0 was taken over the whole generated text, reasoning and answer, not the "
                    "answer alone.)")
    if sentences:
        caption += (f" The prompt sentence it reads most: {quote(sentences[0].text)} ({pct(sentences[0].share)} of "
                    "the prompt's part).")
    return Panel("direct", TITLES["direct"], caption, {"shares": shares, "sentences": sentences, "tokens": tokens})


def reached(trace: Trace) -> list[float]:
    """``[depth]``: share of the answer's attribution on the input (prompt + chat template) after hops
    0..K, ``1 − ρ_K``; ``ρ_K`` is the share still on the generated text."""
    return [1.0 - h.rho for h in trace.hops]


def depth_top_sentences(trace: Trace) -> list[Piece | None]:
    """``[depth]``: the top prompt sentence of the attribution after hops 0..K (summed contributions)."""
    total = [0.0] * trace.n_tokens
    out = []
    for hop in trace.hops:
        total = [a + b for a, b in zip(total, hop.contribution)]
        top = prompt_pieces(trace, total, 1)
        out.append(top[0] if top else None)
    return out


def hops_panel(trace: Trace) -> Panel:
    reach = reached(trace)
    added = [reach[0]] + [b - a for a, b in zip(reach, reach[1:])]
    tops = depth_top_sentences(trace)
    data = {"reached": reach, "added": added, "top": tops}
    if len(trace.hops) <= 1:
        rest = trace.hops[0].rho if trace.hops else 0.0
        caption = (f"This trace was made without hops: the {pct(rest)} of the answer's attribution that sits on the "
                   f"reasoning was not followed back to the prompt. Trace it again with hops to see where it goes.")
        return Panel("hops", TITLES["hops"], caption, data)
    last = len(reach) - 1
    caption = (f"Read directly, {pct(reach[0])} of the answer's attribution is on the input (the prompt and the chat "
               "template around it); the rest sits on the reasoning. Each hop follows that share back through the "
               "reasoning to the words it read: ")
    caption += ", ".join(f"after {k} hop{'s' if k > 1 else ''} {pct(reach[k])}" for k in range(1, last + 1))
    caption += " of it has reached the input."
    if trace.settings.hops > last:
        caption += f" (The hops stopped after {last}: nothing was left on the reasoning.)"
    first, final = tops[0], tops[-1]
    if first and final and first.key != final.key:
        caption += f" The top prompt sentence changed from {quote(first.text, 60)} to {quote(final.text, 60)}."
    elif final:
        caption += f" The top prompt sentence stays {quote(final.text, 60)}."
    return Panel("hops", TITLES["hops"], caption, data)


def evidence_panel(trace: Trace) -> Panel:
    scores = trace.scores.prompt
    sentences, tokens = prompt_pieces(trace, scores, 3), prompt_tokens(trace, scores, 8)
    if not sentences:
        return Panel("evidence", TITLES["evidence"], "No prompt token received any attribution in this trace.",
                     {"sentences": [], "tokens": [], "scores": scores})
    covered = sum(p.share for p in sentences)
    held = (f"one prompt sentence, {quote(sentences[0].text)}, which holds {pct(covered)} of the prompt's attribution"
            if len(sentences) == 1 else
            f"the {len(sentences)} prompt sentences below, {pct(covered)} of the prompt's attribution between them; "
            f"the first is {quote(sentences[0].text)}")
    caption = (f"After all hops, the answer rests most on {held}. "
               f"Strongest words: {_words(tokens)}. The darker a word's background, the more the answer rests on it.")
    return Panel("evidence", TITLES["evidence"], caption, {"sentences": sentences, "tokens": tokens, "scores": scores})


def stored_check(trace: Trace) -> dict[str, Any] | None:
    """The precomputed faithfulness check in ``trace.extra``, or None when absent or malformed (a trace
    file may hold anything there)."""
    found = trace.extra.get(FAITHFULNESS_KEY)
    return found if valid_check(found) else None


def valid_check(result: Any) -> bool:
    """Whether `result` looks like a `faithfulness_check` result (finite numbers where numbers belong)."""
    if not isinstance(result, dict):
        return False
    numbers = [result.get(k) for k in ("fraction", "before", "top", "random_mean")]
    if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in numbers):
        return False
    randoms = result.get("random")
    return (isinstance(randoms, list) and len(randoms) >= 1
            and all(isinstance(v, (int, float)) and math.isfinite(v) for v in randoms)
            and isinstance(result.get("n_deleted"), int) and isinstance(result.get("n_prompt"), int))


def check_panel(trace: Trace, result: dict[str, Any] | None = None) -> Panel:
    """The faithfulness panel from `result` (a live check) or the trace's stored one."""
    result = result if result is not None else stored_check(trace)
    if result is None:
        caption = ("The faithfulness check is not precomputed for this trace. It deletes the top 10 % of prompt "
                   "tokens and, separately, 10 % chosen at random, and compares how much the answer's "
                   "log-probability falls; it needs the model that made the trace.")
        return Panel("check", TITLES["check"], caption, {"result": None})
    n, frac = result["n_deleted"], result["fraction"]
    drop_top, drop_random = result["before"] - result["top"], result["before"] - result["random_mean"]
    caption = (f"Deleting the {n} prompt tokens the attribution ranks highest (the top {pct(frac)}) moves the answer's "
               f"log-probability from {result['before']:.2f} to {result['top']:.2f}; deleting {n} prompt tokens at "
               f"random moves it to {result['random_mean']:.2f} on average ({len(result['random'])} draws). ")
    if drop_top <= 0:
        caption += (f"Removing the top tokens did not lower the answer's log-probability here (it changed by "
                    f"{-drop_top:+.2f}): treat the highlighted evidence with caution for this trace.")
    elif drop_top > drop_random + 0.1:
        caption += (f"The evidence matters: removing it lowers the answer's log-probability by {drop_top:.2f}, "
                    f"against {drop_random:.2f} for as many random tokens.")
    elif drop_top > drop_random:
        caption += "Removing the evidence hurts only slightly more than removing random tokens here."
    else:
        caption += ("Here removing the top tokens hurts no more than removing random ones: treat the highlighted "
                    "evidence with caution for this trace.")
    return Panel("check", TITLES["check"], caption, {"result": result})


def story_panels(trace: Trace, check: dict[str, Any] | None = None) -> list[Panel]:
    """All five panels, in order (`check`: a live faithfulness result overriding the stored one)."""
    return [question_panel(trace), direct_panel(trace), hops_panel(trace), evidence_panel(trace),
            check_panel(trace, check)]


__all__ = ["STEPS", "TITLES", "Piece", "Panel", "story_panels", "question_panel", "direct_panel", "hops_panel",
           "evidence_panel", "check_panel", "stored_check", "valid_check", "reached", "role_shares", "pct", "quote"]
