"""The story of one trace, for a non-specialist: five captioned panels, in words, over the trace's facts
(`flashtrace.analysis.facts`; no model, no number computed here).

1. ``question``: the question and the answer the model gave;
2. ``direct``: what the answer reads directly (hop 0): its split between the prompt and the model's own
   text, and the prompt words and sentences it reads most;
3. ``hops``: how the reasoning passes it on: how much of the answer's attribution has reached the input
   after hops 0..K, whether the top sentence changed (only beyond the margin; otherwise a tie, both
   named), which sentences climbed, and where the known evidence (gold) ranks;
4. ``evidence``: the prompt sentences (and words) with the most final attribution, and the gold;
5. ``check``: the deletion check, against the spread of the random draws.

Captions are plain text (pages show them literally); quoted trace text is shortened, never marked up.
The sentences the Compare page and the gallery cards say about a trace are written here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..engine.inputs.sequence import scaffold_range
from .failure import failure_of, failure_words, piece_shares
from .facts import MARGIN, OF_PROMPT, TOP_SET, Check, Piece, TraceFacts, analyse, with_check
from .schema import Trace
from .segments import steps_before_target
from .text import counted, ordinal, pct, points, quote
from .views import span_text

STEPS = ("question", "direct", "hops", "evidence", "check")
TITLES = {"question": "The question and the answer", "direct": "What the answer reads directly",
          "hops": "How the reasoning passes it on", "evidence": "The evidence in the prompt",
          "check": "Is it faithful? Delete the evidence and watch the answer",
          "failure": "Where it went wrong, and the edit that tests it"}


@dataclass(frozen=True)
class Ranked:
    """A prompt piece (sentence, or token in a trace without sentences) with its share at some depth."""

    piece: Piece
    share: float  # OF_PROMPT at the depth it was ranked at

    @property
    def key(self) -> str:
        """The piece's id (a segment id or a token position)."""
        return self.piece.key

    @property
    def text(self) -> str:
        """The piece's text."""
        return self.piece.text

    @property
    def label(self) -> str:
        """The piece's short label."""
        return self.piece.label


@dataclass(frozen=True)
class Panel:
    """One panel of the story view: its key (one of STEPS), title, caption (plain text) and the data
    its figure draws."""
    key: str  # one of STEPS
    title: str
    caption: str  # plain text, shown literally
    data: dict[str, Any] = field(default_factory=dict)


def ranked(facts: TraceFacts, depth: int, k: int = 3) -> list[Ranked]:
    """The `k` strongest pieces at `depth` (those with attribution), strongest first.

    Args:
        facts: The trace's facts (`analyse`).
        depth: The depth (index into ``facts.depths``; -1 the deepest).
        k: How many pieces at most.

    Returns:
        Up to `k` pieces with a positive share at `depth`, each with that share, strongest first.
    """
    d = facts.depths[depth]
    return [Ranked(facts.pieces[i], float(d.shares[i])) for i in d.order[:k] if d.shares[i] > 0]


def gold_at(facts: TraceFacts, depth: int) -> dict[str, Any] | None:
    """The best-ranked piece holding known evidence (gold) at `depth`, for a figure that must show the gold
    even when it ranks low.

    Args:
        facts: The trace's facts (`analyse`).
        depth: The depth (index into ``facts.depths``; -1 the deepest).

    Returns:
        ``{"piece": Ranked, "rank": 37, "ranked": "37th"}``; None without gold.
    """
    if facts.gold is None or not facts.gold.pieces:
        return None
    d = facts.depths[depth]
    best = min(facts.gold.pieces, key=d.rank)
    return {"piece": Ranked(facts.pieces[best], float(d.shares[best])), "rank": d.rank(best),
            "ranked": ordinal(d.rank(best))}


def top_words(trace: Trace, facts: TraceFacts, depth: int, k: int = 5) -> list[Ranked]:
    """The `k` strongest prompt words at `depth`: whole words (subword tokens joined), each once
    (`TraceFacts.top_words`), with their shares.

    Args:
        trace: The recording the facts are of (not read: the words come from `facts`).
        facts: The trace's facts (`analyse`).
        depth: The depth (index into ``facts.depths``; -1 the deepest).
        k: How many words at most.

    Returns:
        Up to `k` words with a positive share, strongest first, each as a `Ranked` whose piece spans the word's
            tokens.
    """
    return [Ranked(Piece(str(w.positions[0]), w.text, w.text, w.positions[0], w.positions[-1] + 1), w.share)
            for w in facts.top_words(depth, k)]


def _words(items: list[Ranked]) -> str:
    return ", ".join(quote(i.text, 30) for i in items)


def _after(k: int) -> str:
    return "directly (hop 0)" if k == 0 else f"after {counted(k, 'hop')}"


def _text_of(trace: Trace, roles: tuple[str, ...]) -> str:
    return "".join(t.text for t in trace.tokens if t.role in roles).strip()


SHORT_PROMPT = 300  # characters: a prompt this short is shown whole as the question


def asked(trace: Trace, question: str | None = None) -> str:
    """The sentence of a long question (the prompt, or its first `question` characters when the tool added an
    instruction after it) that asks it, for showing it large: the last prompt sentence in it with a question
    mark, else its last sentence (or line). Empty when the question is short enough to show whole
    (`SHORT_PROMPT`).

    Args:
        trace: The recording whose prompt sentences to search.
        question: The question's text, when the tool added an instruction after it (None: the whole prompt).

    Returns:
        The asking sentence, or an empty string for a question of at most `SHORT_PROMPT` characters.
    """
    question = trace.prompt if question is None else question
    if len(question.strip()) <= SHORT_PROMPT:
        return ""
    parts = [s.text.strip() for s in trace.segments or [] if s.role == "prompt" and s.text.strip()
             and (s.char_start is None or s.char_start < len(question.rstrip()))]
    parts = parts or [line.strip() for line in question.splitlines() if line.strip()]
    return next((p for p in reversed(parts) if "?" in p), parts[-1] if parts else "")


def question_panel(trace: Trace, facts: TraceFacts) -> Panel:
    """The first panel: the question, what the model answered, and whether it reasoned first.

    Args:
        trace: The recording to tell about.
        facts: The trace's facts (`analyse`).

    Returns:
        The ``question`` panel; its data holds the question, the asking sentence (`asked`), the reasoning and the
            answer.
    """
    answer = span_text(trace, trace.settings.target)
    reasoning = _text_of(trace, ("reasoning",))
    steps = len(steps_before_target(trace))
    said = (f"wrote a response; the part explained here (the target) is {quote(answer, 120)}"
            if facts.target_label != "answer" else f"answered {quote(answer, 120)}")
    if trace.spans.value is not None and tuple(trace.settings.target) == tuple(trace.spans.value):
        line = span_text(trace, trace.spans.answer)
        said = f"answered {quote(line, 120)}; explained here is the value in that answer, {quote(answer, 60)}"
    caption = (f"The model ({trace.model.name}) was asked the question below and {said}. "
               + (f"Before answering it reasoned in {counted(steps, 'step')}. " if reasoning and steps else
                  "Before answering it reasoned. " if reasoning else "It answered without reasoning first. ")
               + "The next panels show which parts of the question that answer rests on.")
    scaffold = scaffold_range(trace.prompt)  # an instruction the tool added is not part of the question
    question = trace.prompt[:scaffold[0]] if scaffold else trace.prompt
    if scaffold:
        caption += " (The tool asked for step-by-step reasoning; that instruction is not counted as evidence.)"
    return Panel("question", TITLES["question"], caption,
                 {"question": question, "ask": asked(trace, question), "reasoning": reasoning, "answer": answer})


def _top_claim(facts: TraceFacts, depth: int, what: str) -> str:
    """The top piece at `depth`, or a tie with the runner-up when the lead is within the margin."""
    d = facts.depths[depth]
    if d.top is None:
        return ""
    first = facts.pieces[d.top]
    if len(d.order) > 1 and d.lead() <= MARGIN and d.shares[d.order[1]] > 0:
        second = facts.pieces[d.order[1]]
        return (f" Two prompt {what}s are tied at the top (within {points(MARGIN)}): {quote(first.text)} "
                f"({pct(d.shares[d.top], 1)}) and {quote(second.text)} ({pct(d.shares[d.order[1]], 1)} {OF_PROMPT}).")
    return f" The prompt {what} it reads most: {quote(first.text)} ({pct(d.shares[d.top])} {OF_PROMPT})."


def direct_panel(trace: Trace, facts: TraceFacts) -> Panel:
    """Hop 0: how the target's attribution splits between the prompt, the model's own text and the
    template, with the prompt words and sentences it reads most.

    Args:
        trace: The recording to tell about.
        facts: The trace's facts (`analyse`).

    Returns:
        The ``direct`` panel; its data holds the shares, the top sentences and words and the gold at hop 0.
    """
    shares = facts.direct
    sentences, words = ranked(facts, 0), top_words(trace, facts, 0)
    caption = (f"Read directly (hop 0), the {facts.target_label} draws {pct(shares['prompt'])} of its attribution "
               f"from the prompt, {pct(shares['generated'])} from the model's own reasoning and answer text, and "
               f"{pct(shares['template'])} from the chat template around them.")
    if words:
        caption += f" The prompt words it reads most: {_words(words)}."
    if facts.hop0 == "generation":
        caption += (" (In this trace hop 0 was taken over the whole generated text, reasoning and answer, not the "
                    "answer alone.)")
    caption += _top_claim(facts, 0, facts.piece_kind)
    return Panel("direct", TITLES["direct"], caption, {"shares": shares, "sentences": sentences, "tokens": words,
                                                       "gold": gold_at(facts, 0)})


def reach_words(facts: TraceFacts) -> str:
    """How much of the answer's attribution has reached the input at each depth, in one sentence.

    Args:
        facts: The trace's facts (`analyse`).

    Returns:
        The sentence, with how much of the deepest depth's part is on the prompt and on the chat template.
    """
    reached = [d.reached for d in facts.depths]
    who = f"the {facts.target_label}'s attribution"
    last = facts.depths[-1]
    split = (f" Of that, {pct(last.reached_prompt)} is on the prompt and {pct(last.reached - last.reached_prompt)} on "
             "the chat template around it.")
    if len(reached) == 1:
        return (f"Read directly (hop 0), {pct(reached[0])} of {who} is on the input (the prompt and chat template)."
                + split)
    steps = ", ".join(f"{_after(d.k)} {pct(d.reached)}" for d in facts.depths[1:])
    return (f"Read directly, {pct(reached[0])} of {who} is on the input (the prompt and the chat template); "
            f"{steps} has reached it." + split)


def change_words(facts: TraceFacts) -> str:
    """Whether the hops changed the top prompt piece, with the margin: a change, a tie, or no change.

    Args:
        facts: The trace's facts (`analyse`).

    Returns:
        The sentence, or an empty string for a trace without hops or without prompt attribution.
    """
    c, what, last = facts.change, facts.ranked_kind, len(facts.depths) - 1
    if c.kind == "none" or last == 0:
        return ""
    first_p, last_p = facts.pieces[c.first], facts.pieces[c.last]
    d0, dk = facts.depths[0], facts.depths[-1]
    if c.kind == "changed":
        return (f"The hops changed the top {what} from {quote(first_p.text)} ({pct(d0.shares[c.first], 1)} at "
                f"hop 0, against {pct(d0.shares[c.last], 1)}) to {quote(last_p.text)} ({pct(dk.shares[c.last], 1)} "
                f"{_after(last)}, against {pct(dk.shares[c.first], 1)}): a lead of more than {points(MARGIN)} at "
                f"both depths.")
    if c.kind == "tie":
        return (f"The hops did not clearly change the top {what}: {quote(first_p.text)} and "
                f"{quote(last_p.text)} are within {points(MARGIN)} of each other "
                + ("at hop 0" if c.lead_first <= MARGIN else _after(last))
                + f" ({pct(d0.shares[c.first], 1)} and {pct(d0.shares[c.last], 1)} at hop 0; "
                f"{pct(dk.shares[c.first], 1)} and {pct(dk.shares[c.last], 1)} {_after(last)}).")
    close = c.lead_first <= MARGIN or c.lead_last <= MARGIN
    return (f"The top {what} is {quote(first_p.text)} at every depth"
            + (f", but the next one is within {points(MARGIN)} of it at some depth." if close else
               f" (leading the next by {points(c.lead_first)} at hop 0 and {points(c.lead_last)} {_after(last)})."))


def moves_words(facts: TraceFacts, n: int = 3) -> str:
    """Which pieces the hops moved up the ranking (known evidence first).

    Args:
        facts: The trace's facts (`analyse`).
        n: How many pieces to name at most.

    Returns:
        The sentence, or an empty string when no piece climbed or the trace has no hops.
    """
    gold = [m for m in facts.climbers(within=len(facts.pieces)) if facts.pieces[m.piece].gold]  # at any rank
    climbers = gold + [m for m in facts.climbers() if m not in gold]
    if len(facts.depths) < 2 or not climbers:
        return ""
    chosen = sorted(climbers, key=lambda m: (not facts.pieces[m.piece].gold, m.rank_last - m.rank_first))[:n]
    parts = [f"{quote(facts.pieces[m.piece].text, 50)}{' (known evidence)' if facts.pieces[m.piece].gold else ''} "
             f"from {ordinal(m.rank_first)} to {ordinal(m.rank_last)} ({pct(m.share_first, 1)} → {pct(m.share_last, 1)})"
             for m in chosen]
    return f"What the hops moved: {'; '.join(parts)}."


def gold_words(facts: TraceFacts) -> str:
    """Where the known evidence ranks at hop 0 and at the deepest depth (said even when unflattering).

    Args:
        facts: The trace's facts (`analyse`).

    Returns:
        The sentence, or an empty string for a trace without known evidence.
    """
    g = facts.gold
    if g is None:
        return ""
    last = len(facts.depths) - 1
    rank = (f"its best {facts.piece_kind} ranks {ordinal(g.piece_rank[0])} at hop 0"
            + (f" and {ordinal(g.piece_rank[-1])} {_after(last)}" if last else "")) if g.piece_rank[0] else ""
    share = (f"The known evidence (gold, {counted(len(g.positions), 'token')}) holds {pct(g.share[0], 1)} {OF_PROMPT} "
             f"at hop 0" + (f" and {pct(g.share[-1], 1)} {_after(last)}" if last else ""))
    if rank and any(p.asked for p in facts.pieces) and g.context_rank != g.piece_rank:
        rank += (f" ({ordinal(g.context_rank[0])}" + (f" and {ordinal(g.context_rank[-1])}" if last else "")
                 + f" among the context {facts.piece_kind}s, the question apart)")
    tokens = f"; its best token ranks {ordinal(g.token_rank[-1])} among the prompt's tokens"
    return share + (f"; {rank}" if rank else "") + tokens + "."


def hops_panel(trace: Trace, facts: TraceFacts) -> Panel:
    """The hops: how much of the attribution each depth carries back to the prompt, and what each adds.

    Args:
        trace: The recording to tell about.
        facts: The trace's facts (`analyse`).

    Returns:
        The ``hops`` panel; its data holds the reached share per depth, what each hop added and the top piece per
            depth.
    """
    data = {"reached": [d.reached for d in facts.depths], "added": list(facts.input_share),
            "top": [ranked(facts, d.k, 1)[0] if d.top is not None else None for d in facts.depths]}
    if len(facts.depths) <= 1:
        rest = facts.depths[0].rho
        caption = (f"This trace was made without hops: the {pct(rest)} of the {facts.target_label}'s attribution that "
                   "sits on the reasoning was not followed back to the prompt. Trace it again with hops to see where "
                   "it goes.")
        return Panel("hops", TITLES["hops"], caption, data)
    caption = reach_words(facts) + " Each hop follows the share left on the reasoning back to the words it read."
    if trace.settings.recursive == "reasoning":
        caption += " (In this trace the hops follow the reasoning only; the answer's attribution on its own text stays.)"
    ran = sum(d.ran for d in facts.depths) - 1
    if ran < len(facts.depths) - 1:
        caption += f" (The hops stopped after {ran}: nothing was left on the reasoning.)"
    caption += " ".join(["", change_words(facts), swap_words(facts), moves_words(facts), gold_words(facts)]).rstrip()
    return Panel("hops", TITLES["hops"], caption, data)


def evidence_panel(trace: Trace, facts: TraceFacts) -> Panel:
    """After all hops: the prompt sentences (or tokens) the target rests on most, with their shares.

    Args:
        trace: The recording to tell about.
        facts: The trace's facts (`analyse`).

    Returns:
        The ``evidence`` panel; its data holds the top context pieces, the question pieces, the top words, the
            prompt scores and the gold.
    """
    last = len(facts.depths) - 1
    sentences = [Ranked(p, share) for p, share in facts.context_evidence(3)]
    asked = [Ranked(p, float(facts.final.shares[i])) for i, p in enumerate(facts.pieces) if p.asked]
    words = top_words(trace, facts, last, 8)
    data = {"sentences": sentences, "asked": asked, "tokens": words, "scores": trace.scores.prompt,
            "gold": gold_at(facts, last)}
    if not sentences:
        return Panel("evidence", TITLES["evidence"], "No prompt token received any attribution in this trace.", data)
    covered = sum(s.share for s in sentences)
    what = ("context " if asked else "prompt ") + facts.piece_kind
    held = (f"one {what}, {quote(sentences[0].text)}, which holds {pct(covered)} {OF_PROMPT}"
            if len(sentences) == 1 else
            f"the {len(sentences)} {what}s below, {pct(covered)} {OF_PROMPT} between them; the first is "
            f"{quote(sentences[0].text)} ({pct(sentences[0].share)})")
    lead = sentences[0].share - sentences[1].share if len(sentences) > 1 else 1.0
    caption = (f"After all hops, the {facts.target_label} rests most on {held}."
               + (f" It leads the next by {points(lead)} only: within the {100 * MARGIN:.0f}-point margin, "
                  "so call these two a tie." if lead <= MARGIN else "")
               + (f" The question ({quote(asked[0].text) if len(asked) == 1 else f'{len(asked)} sentences'}) holds "
                  f"{pct(facts.asked_share())} {OF_PROMPT}: it says what was asked, not what supplied the answer."
                  if asked else "")
               + f" Strongest words: {_words(words)}. The darker a word's background, the more the answer rests on it.")
    if facts.gold is not None:
        caption += " " + gold_words(facts) + " Gold words are underlined."
    return Panel("evidence", TITLES["evidence"], caption, data)


CHECK_VERDICTS = {
    "no-effect": "No deletion, of the top tokens or at random, moves the answer by more than 0.01 nats: the answer is "
                 "as likely without these prompt tokens, as when the reasoning before it already states it, so this "
                 "check says nothing about the highlighted evidence here.",
    "not-lower": "Removing the top tokens did not lower the answer's log-probability here: treat the highlighted "
                 "evidence with caution for this trace.",
    "below-random": "Removing the top tokens hurt less than every random draw: treat the highlighted evidence with "
                    "caution for this trace.",
    "within-random": "That is within random variation: removing the top tokens hurts no more than some random "
                     "draws do, so this check does not confirm the evidence.",
    "above-draws": "Removing the top tokens hurts more than every random draw, but by less than twice the draws' "
                   "spread: suggestive, not conclusive.",
    "clearly-above": "The evidence matters: removing it hurts clearly more than random, beyond every draw and by more "
                     "than twice the draws' spread.",
}


def check_words(check: Check) -> str:
    """The deletion check in words: the drop from deleting the top tokens against random deletions,
    and the verdict.

    Args:
        check: The summarised deletion check (`summarise_check`).

    Returns:
        The sentences, ending with the verdict's words (`CHECK_VERDICTS`).
    """
    drops = check.drops_random
    return (f"Deleting the {check.n_deleted} prompt tokens the attribution ranks highest (the top {pct(check.fraction)}) "
            f"moves the answer's log-probability from {check.before:.2f} to {check.top:.2f}, a drop of "
            f"{check.drop_top:.2f}. Deleting as many prompt tokens at random, in {counted(len(drops), 'draw')}, gives "
            f"drops from {min(drops):.2f} to {max(drops):.2f} (mean {check.drop_random_mean:.2f}). "
            + CHECK_VERDICTS[check.verdict])


def check_panel(trace: Trace, facts: TraceFacts) -> Panel:
    """The faithfulness panel from the facts' check (stored, or live through `with_check`).

    Args:
        trace: The recording to tell about (not read: the check comes from `facts`).
        facts: The trace's facts (`analyse`, or `with_check` for a live check).

    Returns:
        The ``check`` panel; its data holds the check (None when not precomputed, with a caption saying so).
    """
    check = facts.check
    if check is None:
        caption = ("The faithfulness check is not precomputed for this trace. It deletes the top 10 % of prompt "
                   "tokens and, separately, 10 % chosen at random several times, and compares how much the answer's "
                   "log-probability falls; it needs the model that made the trace.")
        return Panel("check", TITLES["check"], caption, {"check": None})
    return Panel("check", TITLES["check"], check_words(check), {"check": check})


def failure_panel(trace: Trace, facts: TraceFacts) -> Panel | None:
    """For an honest failure (`analysis.failure`): the answer against the right one, the step where they part,
    the sentence that misled it with its pull on that step, and the edit that fixes it; None otherwise.

    Args:
        trace: The recording to tell about.
        facts: The trace's facts (`analyse`).

    Returns:
        The ``failure`` panel; its data holds the failure and, on the parting step's own attribution, the top
            context pieces, the question pieces and the suspected sentence. None when the trace has no failure.
    """
    f = failure_of(trace, facts)
    if f is None:
        return None
    data: dict[str, Any] = {"failure": f, "sentences": [], "asked": [], "suspect": None}
    if f.step is not None and trace.steps is not None and f.step in trace.steps.vectors:
        shares = piece_shares(facts, trace.steps.vectors[f.step])  # the parting step's own, over the prompt
        order = sorted(range(len(shares)), key=lambda i: (-shares[i], i))
        data["sentences"] = [Ranked(facts.pieces[i], float(shares[i])) for i in order
                             if shares[i] > 0 and not facts.pieces[i].asked][:3]  # the context, as the evidence
        data["asked"] = [Ranked(p, float(shares[i])) for i, p in enumerate(facts.pieces) if p.asked]
        if f.misled is not None:
            data["suspect"] = Ranked(facts.pieces[f.misled], float(shares[f.misled]))
    return Panel("failure", TITLES["failure"], failure_words(facts, f), data)


def story_panels(trace: Trace, check: dict[str, Any] | None = None) -> list[Panel]:
    """The panels, in order: the five of `STEPS`, and for an honest failure the failure panel before the check.

    Args:
        trace: The recording to tell about.
        check: A live deletion-check result in place of the stored one (None: the stored one).

    Returns:
        The panels, in order.
    """
    facts = analyse(trace) if check is None else with_check(trace, check)
    failure = failure_panel(trace, facts)
    return [question_panel(trace, facts), direct_panel(trace, facts), hops_panel(trace, facts),
            evidence_panel(trace, facts), *([failure] if failure else []), check_panel(trace, facts)]


def swap_words(facts: TraceFacts) -> str:
    """The pieces the hops brought into the top three, beyond the margin.

    Args:
        facts: The trace's facts (`analyse`).

    Returns:
        The sentence, or an empty string when the hops brought none in.
    """
    parts = [f"{quote(facts.pieces[w.entered].text, 50)} from {ordinal(w.rank_first)} to {ordinal(w.rank_last)}, "
             f"past {quote(facts.pieces[w.left].text, 40)}" for w in facts.swaps]
    return f"The hops brought into the top {TOP_SET}: {'; '.join(parts)}." if parts else ""


def card_note(facts: TraceFacts, k: int = 10) -> str:
    """A sentence or two for a gallery card, from the facts alone, so the card cannot contradict the pages:
    what the hops do to the evidence, and where the known evidence ranks, when there is one.

    Args:
        facts: The trace's facts (`analyse`).
        k: The size of the top-k prompt lists whose overlap is quoted when the hops change little.

    Returns:
        The note, in plain text.
    """
    note = _card_change(facts, k)
    g = facts.gold
    if g is not None and g.piece_rank[0] is not None and len(facts.depths) > 1:
        asked = any(p.asked for p in facts.pieces)
        rank = g.context_rank if asked else g.piece_rank
        note += (f" The known evidence's best {facts.piece_kind} ranks {ordinal(rank[0])} at hop 0 and "
                 f"{ordinal(rank[-1])} after the hops" + (" among the context sentences." if asked else "."))
    return note


def _card_change(facts: TraceFacts, k: int) -> str:
    c, last = facts.change, len(facts.depths) - 1
    if last == 0 or c.kind == "none":
        return "Traced without hops." if last == 0 else "No prompt attribution to compare."
    first_p, last_p = facts.pieces[c.first], facts.pieces[c.last]
    if c.kind == "changed":
        return (f"Hops change the evidence: the top {facts.ranked_kind} moves from {quote(first_p.text, 40)} to "
                f"{quote(last_p.text, 40)}, beyond the {100 * MARGIN:.0f}-point margin.")
    if facts.swaps:
        w = facts.swaps[0]
        return (f"Hops change the evidence: {quote(facts.pieces[w.entered].text, 40)} climbs from "
                f"{ordinal(w.rank_first)} to {ordinal(w.rank_last)}, past {quote(facts.pieces[w.left].text, 40)}.")
    if c.kind == "tie":
        where = ("at hop 0" if c.lead_first <= MARGIN else f"after {counted(last, 'hop')}")
        return (f"A near tie, not a change: {quote(first_p.text, 40)} and {quote(last_p.text, 40)} are within "
                f"{points(MARGIN)} of each other {where}.")
    climbed = facts.climbers()
    if climbed:
        m = climbed[0]
        return (f"Hops keep the top {facts.ranked_kind} {quote(first_p.text, 40)} and move "
                f"{quote(facts.pieces[m.piece].text, 40)} from {ordinal(m.rank_first)} to {ordinal(m.rank_last)}.")
    return (f"Hops change little here: the top {facts.ranked_kind} stays {quote(first_p.text, 40)} and the top-{k} "
            f"prompt words at hop 0 and after {counted(last, 'hop')} overlap {pct(facts.overlap(k))}.")


DEPTH_COLUMNS = ("depth", "reached the input", "top prompt sentence", "its share")


def depth_table(facts: TraceFacts, compact: bool = False) -> list[dict[str, str]]:
    """One row per depth, in plain text, for every view that lists depths (notebook, HTML export, command
    line, Compare): how much of the answer's attribution has reached the input, and the top prompt piece with
    its share of the prompt's attribution. Each cell names its denominator.

    Args:
        facts: The trace's facts (`analyse`).
        compact: Leave the denominators to the view's caption (a narrow table).

    Returns:
        One ``{column: cell}`` row per depth, keyed by `DEPTH_COLUMNS`.
    """
    rows = []
    for d in facts.depths:
        top = facts.pieces[d.top] if d.top is not None else None
        reached, share = pct(d.reached, 1), pct(d.shares[d.top], 1) if top else ""
        if not compact:
            reached, share = f"{reached} {facts.of_answer}", f"{share} {OF_PROMPT}" if top else ""
        rows.append({DEPTH_COLUMNS[0]: _after(d.k), DEPTH_COLUMNS[1]: reached,
                     DEPTH_COLUMNS[2]: top.label if top else "(none)", DEPTH_COLUMNS[3]: share})
    return rows


def stored_check(trace: Trace) -> Check | None:
    """The precomputed deletion check of `trace` (None when absent or malformed).

    Args:
        trace: The recording, with its check in ``extra["faithfulness"]``.

    Returns:
        The summarised check, or None when absent or malformed.
    """
    return analyse(trace).check


__all__ = ["STEPS", "TITLES", "Ranked", "Panel", "story_panels", "question_panel", "direct_panel", "hops_panel",
           "evidence_panel", "check_panel", "stored_check", "ranked", "top_words", "reach_words", "change_words",
           "moves_words", "gold_words", "check_words", "CHECK_VERDICTS", "card_note", "depth_table", "DEPTH_COLUMNS",
           "swap_words"]
__all__ += ["asked", "gold_at"]  # Story step 1, gold on the Story's bars
