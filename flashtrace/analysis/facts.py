"""The analysis of one trace: every number a view shows about it, computed once (`analyse`), torch-free.

Home and gallery cards, Library, Explore, Hop graph, Compare, Story, the HTML export, the notebook view
and the command line's summary all read a `TraceFacts`; none computes its own shares. Each number has one
of three denominators, and every label names it:

- `OF_ANSWER`, "of the answer's attribution": where the target's attribution sits. ``reached[K]`` is the
  share on the input (prompt + chat template) after hops 0..K, ``ρ_K`` the share still on generated text,
  ``split`` where one hop's own attribution lands. (The word is "target" when the target is not the answer.)
- `OF_PROMPT`, "of the prompt's attribution": sentence and token shares of the prompt attribution after
  hops 0..K, ``Σ_{k<=K} contribution_k`` over the user's prompt tokens; at the deepest depth these are the
  trace's final scores, so the evidence ranking is the trace's own.
- `OF_FINAL`, "of the final prompt attribution": what hop K added (its contribution ``ρ_{K-1}·a_K``);
  the hops' additions sum to the final shares.

What was asked is not what supplied the answer: a prompt sentence that ends in "?" (`Piece.asked`, when the
prompt also has other sentences) is the question; `context_evidence` ranks the rest and `asked_share` says what
the question holds, both `OF_PROMPT`. The depth facts (tops, changes, swaps) still rank every sentence.

A claim of change needs a margin: the top sentence "changed" between depth 0 and the deepest depth only
when each leads the other by more than `MARGIN` at its own depth; otherwise the two are tied.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..base.live_cache import LiveCache
from ..engine.inputs.spans import is_question
from .check import FAITHFULNESS_KEY, Check, summarise_check
from .compare import (HopAdditions, HopDepthComparison, compare_depths, hop_additions, prompt_shares, role_shares,
                      row_shares, top_k_overlap)
from .gold import gold_positions
from .schema import Trace
from .text import distinct_labels
from .views import word_runs

MARGIN = 0.02  # a lead of more than 2 points of the prompt's attribution makes a top sentence a claim
OF_ANSWER = "of the answer's attribution"
OF_PROMPT = "of the prompt's attribution"
OF_FINAL = "of the final prompt attribution"
LABEL_CHARS = 48


@dataclass(frozen=True)
class Piece:
    """A unit of prompt evidence: a prompt sentence/line (segment), or a prompt token when the trace has no
    segments. `label` is short and distinct from every other piece's."""

    key: str  # segment id, or the token's position
    text: str
    label: str
    start: int  # tokens [start, end)
    end: int
    gold: bool = False  # holds a gold token (known evidence)
    asked: bool = False  # a question sentence of a prompt that also has context: what was asked, not evidence


@dataclass(frozen=True)
class Word:
    """A prompt word: tokens joined where no space separates them ("mar" + "bles" is "marbles"), listed once
    however often it occurs (case aside): at its strongest occurrence, whose `share` (`OF_PROMPT` at the depth
    it was ranked at) and token positions it carries. Edge punctuation is not part of it ("one." is "one")."""

    text: str  # as written at that occurrence, without its leading space
    share: float
    positions: tuple[int, ...]  # the tokens of that occurrence


@dataclass(frozen=True)
class Depth:
    """The picture after hops ``0..k`` (`ran` False: the hops stopped before k; it repeats depth k-1)."""

    k: int
    ran: bool
    reached: float  # OF_ANSWER on the input after hops 0..k
    rho: float  # OF_ANSWER still on generated text
    split: dict[str, float] | None  # where hop k's own attribution lands (of hop k's attribution), per role
    shares: np.ndarray  # [pieces] OF_PROMPT after hops 0..k
    order: tuple[int, ...]  # piece indices, largest share first (ties: text order)
    token_shares: np.ndarray  # [prompt tokens] OF_PROMPT after hops 0..k, in `TraceFacts.prompt_positions` order
    top_tokens: tuple[int, ...]  # prompt positions with attribution, strongest first (punctuation-only tokens skipped)
    added: np.ndarray  # [pieces] what hop k added, OF_FINAL
    reached_prompt: float = 0.0  # the part of `reached` on the user's prompt (the rest: the chat template)

    @property
    def top(self) -> int | None:
        """Index of the top piece (None when no prompt piece has any attribution)."""
        return self.order[0] if self.order and self.shares[self.order[0]] > 0 else None

    def rank(self, piece: int) -> int:
        """1-based rank of `piece` at this depth.

        Args:
            piece: The index of a piece (into `TraceFacts.pieces`).

        Returns:
            Its rank in `order` at this depth, 1 for the top piece.
        """
        return self.order.index(piece) + 1

    def lead(self) -> float:
        """How far the top piece leads the runner-up (OF_PROMPT).

        Returns:
            The top piece's share minus the runner-up's; the top piece's own share when there is a single piece,
                0.0 when there is none.
        """
        if len(self.order) < 2:
            return float(self.shares[self.order[0]]) if self.order else 0.0
        return float(self.shares[self.order[0]] - self.shares[self.order[1]])


@dataclass(frozen=True)
class Change:
    """The top piece of the context (question sentences apart) at depth 0 against the deepest depth. `kind`:
    ``none`` (no prompt attribution), ``same`` (one top piece at both), ``changed`` (another top piece, each leading the other by more than
    `margin` at its own depth) or ``tie`` (another top piece, but within `margin` at one of the depths)."""

    kind: str
    first: int | None
    last: int | None
    lead_first: float  # at depth 0: first's share minus last's (same: minus the runner-up's)
    lead_last: float  # at the deepest depth: last's share minus first's (same: minus the runner-up's)
    margin: float = MARGIN


@dataclass(frozen=True)
class Swap:
    """The hops brought piece `entered` into the top `TOP_SET` in place of piece `left`, beyond the margin:
    `left` led `entered` by more than `MARGIN` at hop 0, and `entered` leads `left` by more than it at the
    deepest depth."""

    entered: int
    left: int
    rank_first: int  # rank of `entered` at hop 0
    rank_last: int  # and at the deepest depth
    lead_first: float  # share of `left` minus share of `entered` at hop 0
    lead_last: float  # share of `entered` minus share of `left` at the deepest depth


TOP_SET = 3


@dataclass(frozen=True)
class Move:
    """A piece's rank at depth 0 and at the deepest depth (1 = top)."""

    piece: int
    rank_first: int
    rank_last: int
    share_first: float
    share_last: float


@dataclass(frozen=True)
class Gold:
    """Known evidence (gold character ranges in the prompt) and how the attribution treats it per depth."""

    positions: tuple[int, ...]  # gold prompt tokens
    pieces: tuple[int, ...]  # pieces holding a gold token
    share: tuple[float, ...]  # [depth] OF_PROMPT on the gold tokens
    token_rank: tuple[int | None, ...]  # [depth] best rank of a gold token among the prompt tokens
    piece_rank: tuple[int | None, ...]  # [depth] best rank of a gold piece
    context_rank: tuple[int | None, ...] = ()  # [depth] best rank of a gold piece among the context (not asked)


@dataclass(frozen=True)
class GraphFacts:
    """The hop graph's view of the evidence, against the trace's. The graph attributes every reasoning step
    on its own and follows the answer's attribution along every path, so its prompt influences are a
    different quantity from the hop recursion's scores; `difference` says by how much they differ."""

    influence: dict[str, float]  # node id -> influence on the answer (OF_ANSWER through the graph)
    shares: np.ndarray  # [pieces] prompt influence, as a share of all prompt influence
    top: int | None
    difference: float  # max over pieces of |graph share - final share| (both shares of the prompt's part)
    same_top: bool

    @property
    def agrees(self) -> bool:
        """Whether the hop graph's influence matches the trace's final scores (within 1e-6)."""
        return self.difference <= 1e-6


@dataclass
class TraceFacts:
    """Every number the views show about one trace (see the module docstring)."""

    target_label: str  # "answer", or "target" when the target is neither the answer span nor its value
    hop0: str  # "answer" or "generation"
    piece_kind: str  # "sentence" or "token"
    pieces: tuple[Piece, ...]
    prompt_positions: tuple[int, ...]
    depths: tuple[Depth, ...]
    input_share: tuple[float, ...]  # [hop] OF_ANSWER that hop k moved onto the input
    direct: dict[str, float]  # hop 0, OF_ANSWER: prompt, template, generated
    change: Change
    moves: tuple[Move, ...]  # every piece, largest climb first
    swaps: tuple[Swap, ...]  # pieces the hops brought into the top TOP_SET, beyond the margin
    gold: Gold | None
    graph: GraphFacts | None
    check: Check | None
    additions: HopAdditions
    _comparisons: dict[int, HopDepthComparison] = field(default_factory=dict, repr=False)
    _trace: Any = field(default=None, repr=False)
    _index: dict[int, int] | None = field(default=None, repr=False)

    @property
    def final(self) -> Depth:
        """The deepest depth: the trace's final attribution."""
        return self.depths[-1]

    @property
    def ranked_kind(self) -> str:
        """What the evidence ranking ranks: "context sentence" (the question apart), "prompt sentence" or
        "prompt token"."""
        return "context sentence" if any(p.asked for p in self.pieces) else f"prompt {self.piece_kind}"

    @property
    def hops_change_evidence(self) -> bool:
        """Whether the hops change the evidence beyond the margin: another top piece, or another piece in the
        top `TOP_SET`."""
        return self.change.kind == "changed" or bool(self.swaps)

    @property
    def of_answer(self) -> str:
        """"of the answer's attribution", with the target's own label (answer or response)."""
        return OF_ANSWER.replace("answer", self.target_label)

    def evidence(self, n: int | None = None) -> list[tuple[Piece, float]]:
        """The evidence ranking (the trace's final scores): pieces with attribution, strongest first.

        Args:
            n: How many pieces to keep (None: every piece with attribution).

        Returns:
            ``(piece, share)`` pairs, the share `OF_PROMPT` at the deepest depth, strongest first.
        """
        ranked = [(self.pieces[i], float(self.final.shares[i])) for i in self.final.order if self.final.shares[i] > 0]
        return ranked if n is None else ranked[:n]

    def context_evidence(self, n: int | None = None, depth: int = -1) -> list[tuple[Piece, float]]:
        """The evidence ranking at `depth` (default the final one) over the context: the pieces that are not a
        question (`Piece.asked`), strongest first, with their shares `OF_PROMPT`. What was asked is not what
        supplied the answer; `asked_share` says how much the question holds. Without a question, or without
        context beside it, every piece.

        Args:
            n: How many pieces to keep (None: every context piece with attribution).
            depth: The index into `depths` to rank at (default -1, the final one).

        Returns:
            ``(piece, share)`` pairs of the context pieces with attribution, strongest first.
        """
        d = self.depths[depth]
        ranked = [(self.pieces[i], float(d.shares[i])) for i in d.order if d.shares[i] > 0 and not self.pieces[i].asked]
        return ranked if n is None else ranked[:n]

    def asked_share(self, depth: int = -1) -> float:
        """The share `OF_PROMPT` on the question sentences (`Piece.asked`) at `depth` (default the final one).

        Args:
            depth: The index into `depths` to read (default -1, the final one).

        Returns:
            The summed share of the question pieces, 0.0 when no piece is a question.
        """
        d = self.depths[depth]
        return float(sum(d.shares[i] for i, p in enumerate(self.pieces) if p.asked))

    def comparison(self, k: int = 10) -> HopDepthComparison:
        """Rank correlation and top-k overlap between depths (computed once per k).

        Args:
            k: The size of the top lists compared between depths.

        Returns:
            The trace's `HopDepthComparison` for `k` (`compare.compare_depths`), cached on these facts.
        """
        if k not in self._comparisons:
            self._comparisons[k] = compare_depths(self._trace(), k=k)
        return self._comparisons[k]

    def overlap(self, k: int = 10) -> float:
        """Top-k overlap of the prompt tokens between hop 0 and the deepest depth (1.0: the same k tokens).

        Args:
            k: The size of each top list (capped at the number of prompt tokens).

        Returns:
            The share of the top-k prompt tokens the two depths have in common, 0..1.
        """
        first, last = self.depths[0].token_shares, self.depths[-1].token_shares
        return top_k_overlap(first, last, list(range(len(first))), k)

    def top_words(self, depth: int = -1, k: int = 8) -> list[Word]:
        """The `k` prompt words with the most attribution at `depth` (default the final one), whole words rather
        than subword tokens (`views.word_runs`), each word once at its strongest occurrence (`Word`).

        Args:
            depth: The index into `depths` to rank at (default -1, the final one).
            k: How many words to keep.

        Returns:
            Up to `k` words with attribution, strongest first (ties: earlier in the prompt first).
        """
        best: dict[str, Word] = {}
        for text, run in word_runs(self._trace(), self.prompt_positions):
            word = Word(text, sum(self.token_share(depth, p) for p in run), run)
            if text.casefold() not in best or word.share > best[text.casefold()].share:
                best[text.casefold()] = word
        ranked = sorted(best.values(), key=lambda w: (-w.share, w.positions[0]))
        return [w for w in ranked if w.share > 0][:k]

    def _position_index(self) -> dict[int, int]:
        if self._index is None:
            self._index = {p: j for j, p in enumerate(self.prompt_positions)}
        return self._index

    def token_share(self, depth: int, position: int) -> float:
        """The share of the prompt's attribution on prompt token `position` after hops 0..`depth`.

        Args:
            depth: The index into `depths` to read (-1: the final one).
            position: The token's position in the trace; it must be one of `prompt_positions`.

        Returns:
            The token's share `OF_PROMPT` at that depth.
        """
        return float(self.depths[depth].token_shares[self._position_index()[position]])

    def climbers(self, min_places: int = 3, within: int = 10) -> list[Move]:
        """Pieces that climbed at least `min_places` ranks from depth 0 to the deepest depth and end in the top
        `within` (a climb among the long tail says nothing), largest climb first.

        Args:
            min_places: The fewest ranks a piece must climb.
            within: The lowest final rank a climber may end at.

        Returns:
            The climbers' `Move`s, largest climb first.
        """
        return [m for m in self.moves if m.rank_first - m.rank_last >= min_places and m.rank_last <= within]


def _pieces(trace: Trace, gold: set[int]) -> tuple[str, list[Piece]]:
    segments = [s for s in trace.segments or [] if s.role == "prompt"]
    if segments:
        rows = [(s.id, s.text, s.start, s.end) for s in segments]
        kind = "sentence"
    else:
        rows = [(str(i), trace.tokens[i].text, i, i + 1) for i in trace.positions("prompt")]
        kind = "token"
    labels = distinct_labels([r[1] for r in rows], LABEL_CHARS)
    asked = [kind == "sentence" and is_question(text) for _, text, _, _ in rows]
    if all(asked[i] or not rows[i][1].strip() for i in range(len(rows))):
        asked = [False] * len(rows)  # the prompt is only a question: it is its own context
    return kind, [Piece(key, text, label, lo, hi, any(p in gold for p in range(lo, hi)), question)
                  for (key, text, lo, hi), label, question in zip(rows, labels, asked)]


def _order(shares: np.ndarray) -> tuple[int, ...]:
    return tuple(sorted(range(len(shares)), key=lambda i: (-shares[i], i)))


def _splits(trace: Trace, depths: int) -> list[dict[str, float] | None]:
    """Each hop's `role_shares` (None for a depth past where the hops stopped)."""
    roles = [t.role for t in trace.tokens]
    return [role_shares(trace.hops[k].raw, roles) if k < len(trace.hops) else None for k in range(depths)]


def _punctuation_only(text: str) -> bool:
    return not any(c.isalnum() for c in text)


def _depths(trace: Trace, additions: HopAdditions, pieces: list[Piece]) -> list[Depth]:
    added = np.asarray(additions.added, dtype=float)  # [depths, N]
    positions = np.asarray(additions.prompt_positions, dtype=np.int64)
    piece_rows = np.stack([added[:, p.start:p.end].sum(axis=1) for p in pieces], axis=1) if pieces else \
        np.zeros((len(added), 0))  # [depths, pieces]
    shares = row_shares(np.cumsum(piece_rows, axis=0))
    unit = additions.unit
    added_shares = piece_rows / unit if unit > 0 else np.zeros_like(piece_rows)
    token_shares = prompt_shares(added, additions.prompt_positions)  # [depths, P]: as the depth comparison ranks them
    words = [i for i in range(len(positions)) if not _punctuation_only(trace.tokens[positions[i]].text)]
    splits = _splits(trace, len(added))
    out = []
    for k in range(len(added)):
        ranked = sorted(words, key=lambda j: (-token_shares[k][j], j))
        top_tokens = tuple(int(positions[j]) for j in ranked if token_shares[k][j] > 0)
        out.append(Depth(k=k, ran=k < len(trace.hops), reached=additions.reached[k],
                         reached_prompt=additions.reached_prompt[k], rho=additions.rho[k],
                         split=splits[k], shares=shares[k], order=_order(shares[k]), token_shares=token_shares[k],
                         top_tokens=top_tokens, added=added_shares[k]))
    return out


def _change(depths: list[Depth], pieces: list[Piece]) -> Change:
    """The top piece of the context (the question sentences apart, as the evidence is ranked) at hop 0 against
    the deepest depth."""
    context = {i for i, p in enumerate(pieces) if not p.asked}
    first, last = depths[0], depths[-1]

    def ranked(d: Depth) -> list[int]:
        return [i for i in d.order if i in context]

    def top(d: Depth) -> int | None:
        order = ranked(d)
        return order[0] if order and d.shares[order[0]] > 0 else None

    def lead(d: Depth) -> float:
        order = ranked(d)
        return float(d.shares[order[0]] - (d.shares[order[1]] if len(order) > 1 else 0.0))

    a, b = top(first), top(last)
    if a is None or b is None:
        return Change("none", a, b, 0.0, 0.0)
    if a == b:
        return Change("same", a, b, lead(first), lead(last))
    lead_first = float(first.shares[a] - first.shares[b])
    lead_last = float(last.shares[b] - last.shares[a])
    kind = "changed" if lead_first > MARGIN and lead_last > MARGIN else "tie"
    return Change(kind, a, b, lead_first, lead_last)


def _swaps(depths: list[Depth]) -> list[Swap]:
    first, last = depths[0], depths[-1]
    before = [i for i in first.order[:TOP_SET] if first.shares[i] > 0]
    after = [i for i in last.order[:TOP_SET] if last.shares[i] > 0]
    swaps = []
    for entered in (i for i in after if i not in before):
        for left in (i for i in reversed(before) if i not in after):
            lead_first = float(first.shares[left] - first.shares[entered])
            lead_last = float(last.shares[entered] - last.shares[left])
            if lead_first > MARGIN and lead_last > MARGIN:
                swaps.append(Swap(entered, left, first.rank(entered), last.rank(entered), lead_first, lead_last))
                break
    return swaps


def _moves(depths: list[Depth]) -> list[Move]:
    first, last = depths[0], depths[-1]
    rank0 = {p: r for r, p in enumerate(first.order, start=1)}
    rank1 = {p: r for r, p in enumerate(last.order, start=1)}
    moves = [Move(p, rank0[p], rank1[p], float(first.shares[p]), float(last.shares[p])) for p in rank0]
    return sorted(moves, key=lambda m: (m.rank_last - m.rank_first, m.rank_last))


def _gold(gold: set[int], pieces: list[Piece], depths: list[Depth], positions: tuple[int, ...]) -> Gold | None:
    if not gold:
        return None
    index = {p: j for j, p in enumerate(positions)}
    cols = [index[p] for p in sorted(gold) if p in index]
    gold_pieces = tuple(i for i, p in enumerate(pieces) if p.gold)
    share, token_rank, piece_rank, context_rank = [], [], [], []
    for d in depths:
        share.append(float(d.token_shares[cols].sum()))
        order = np.argsort(-d.token_shares, kind="stable")
        ranks = np.empty(len(order), dtype=np.int64)
        ranks[order] = np.arange(1, len(order) + 1)
        token_rank.append(int(ranks[cols].min()) if cols else None)
        piece_rank.append(min((d.rank(i) for i in gold_pieces), default=None))
        context = [i for i in d.order if not pieces[i].asked]
        context_rank.append(min((context.index(i) + 1 for i in gold_pieces if i in context), default=None))
    return Gold(tuple(sorted(gold)), gold_pieces, tuple(share), tuple(token_rank), tuple(piece_rank),
                tuple(context_rank))


def _graph(trace: Trace, pieces: list[Piece], final: Depth, kind: str) -> GraphFacts | None:
    if trace.steps is None or trace.segments is None or kind != "sentence":
        return None
    from .graph import HopGraph

    influence = HopGraph.from_trace(trace).influence()
    raw = np.asarray([influence.get(p.key, 0.0) for p in pieces], dtype=float)
    total = raw.sum()
    shares = raw / total if total > 0 else np.zeros_like(raw)
    top = int(np.argmax(shares)) if total > 0 else None
    difference = float(np.abs(shares - final.shares).max()) if len(shares) else 0.0
    return GraphFacts(influence=influence, shares=shares, top=top, difference=difference, same_top=top == final.top)


def _build(trace: Trace) -> TraceFacts:
    additions = hop_additions(trace)
    gold = gold_positions(trace)
    kind, pieces = _pieces(trace, gold)
    depths = _depths(trace, additions, pieces)
    hop0 = np.asarray(trace.hops[0].raw, dtype=float)
    roles = [t.role for t in trace.tokens]
    total = hop0.sum()
    direct = {name: float(sum(v for v, r in zip(hop0, roles) if r in group) / total) if total > 0 else 0.0
              for name, group in (("prompt", ("prompt",)), ("template", ("template",)),
                                  ("generated", ("reasoning", "answer")))}
    positions = tuple(additions.prompt_positions)
    return TraceFacts(
        target_label=additions.target_label, hop0=trace.settings.hop0, piece_kind=kind, pieces=tuple(pieces),
        prompt_positions=positions, depths=tuple(depths), input_share=tuple(additions.input_share), direct=direct,
        change=_change(depths, pieces), moves=tuple(_moves(depths)), swaps=tuple(_swaps(depths)), gold=_gold(gold, pieces, depths, positions),
        graph=_graph(trace, pieces, depths[-1], kind),
        check=summarise_check(trace.extra.get(FAITHFULNESS_KEY)),
        additions=additions, _trace=weakref.ref(trace))


_ANALYSES: LiveCache[TraceFacts] = LiveCache()
_CACHE = _ANALYSES.entries  # id of a live trace -> its facts


def analyse(trace: Trace) -> TraceFacts:
    """The `TraceFacts` of `trace`, computed once per trace object and kept while the trace lives.

    A `Trace` is immutable (a changed trace is a copy, a new object), so its object is its content's key; the cache
    is shared by threads (`base.live_cache.LiveCache`).

    Args:
        trace: The recording to analyse.

    Returns:
        The facts every view reads (pieces, depths, moves, gold, graph, check, ...), the same object for the same
            trace while it lives.
    """
    return _ANALYSES.get(trace, id(trace), lambda: _build(trace))


def with_check(trace: Trace, result: Any) -> TraceFacts:
    """The facts of `trace` with a live deletion check in place of the stored one.

    Args:
        trace: The recording to analyse.
        result: The live deletion-check result (the form of ``extra["faithfulness"]``; None or a malformed value
            leaves the facts without a check).

    Returns:
        A copy of `analyse(trace)` whose ``check`` is summarised from `result`.
    """
    facts = analyse(trace)
    return TraceFacts(**{**{f: getattr(facts, f) for f in facts.__dataclass_fields__ if not f.startswith("_")},
                         "check": summarise_check(result)}, _trace=facts._trace)


__all__ = ["analyse", "with_check", "TraceFacts", "Depth", "Piece", "Change", "Move", "Swap", "TOP_SET", "Gold", "GraphFacts", "Check",
           "MARGIN", "OF_ANSWER", "OF_PROMPT", "OF_FINAL", "gold_positions"]
