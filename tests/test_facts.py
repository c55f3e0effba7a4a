"""The analysis of one trace (`flashtrace.analysis.facts.analyse`) on hand-made traces whose numbers are
worked out here: the shares a view shows per depth, the ranking and its ties, the claim of change against
the margin, swaps into the top three, climbs, gold ranks, the hop graph's agreement, and what a depth the
hops never reached repeats."""

import numpy as np
import pytest

from flashtrace.analysis.facts import MARGIN, OF_ANSWER, analyse, with_check

from .test_story import CHECK
from .trace_factory import make_trace, unread, vector

P = ["Alpha is one.", "Beta is two.", "What is alpha ?"]  # 3, 3 and 4 tokens (" ?" is punctuation only)
Q = ["Alpha is one.", "Beta is two.", "Gamma is alpha ."]  # the same token layout, no question: all context
S = ["Step one reads alpha.", "Step two checks."]
A = "Answer: one"
HOP0 = {"T0": .1, "P0": .2, "P1": .1, "P2": .3, "S0": .3, "S1": .1}  # total 1.1
HOP1 = {"P0": .6, "P2": .05, "S0": .05, "A": .1}  # total 0.8
RHO0 = .4 / 1.1  # reasoning + answer after hop 0
CUM = [.2 + .6 * RHO0, .1, .3 + .05 * RHO0]  # each sentence's attribution after hop 1


def two_hops(**kwargs):
    return make_trace(P, S, A, [vector(P, S, A, HOP0), vector(P, S, A, HOP1)], **kwargs)


def test_shares_ranking_and_what_each_hop_added():
    facts = analyse(two_hops())
    assert facts.piece_kind == "sentence" and [p.key for p in facts.pieces] == ["P0", "P1", "P2"]
    assert [(p.start, p.end) for p in facts.pieces] == [(1, 4), (4, 7), (7, 11)]
    d0, d1 = facts.depths
    assert d0.shares == pytest.approx([.2 / .6, .1 / .6, .3 / .6])
    cum = np.asarray([.2 + .6 * RHO0, .1, .3 + .05 * RHO0])
    assert d1.shares == pytest.approx(cum / cum.sum()) and facts.final is d1
    assert (d0.order, d1.order) == ((2, 0, 1), (0, 2, 1)) and (d0.top, d1.top) == (2, 0)
    assert [d1.rank(i) for i in range(3)] == [1, 3, 2]
    assert d0.lead() == pytest.approx(.5 - 1 / 3) and d1.lead() == pytest.approx((cum[0] - cum[2]) / cum.sum())
    unit = cum.sum()  # the final attribution over the prompt: what was added is a share of it
    assert d0.added == pytest.approx(np.asarray([.2, .1, .3]) / unit)
    assert d1.added == pytest.approx(np.asarray([.6, 0, .05]) * RHO0 / unit)
    assert [(p.label, s) for p, s in facts.evidence()] == [(P[0], pytest.approx(d1.shares[0])),
                                                          (P[2], pytest.approx(d1.shares[2])),
                                                          (P[1], pytest.approx(d1.shares[1]))]
    assert [p.key for p, _ in facts.evidence(2)] == ["P0", "P2"]


def test_direct_split_reach_and_where_each_hop_lands():
    facts = analyse(two_hops())
    assert facts.direct == pytest.approx({"prompt": .6 / 1.1, "template": .1 / 1.1, "generated": .4 / 1.1})
    d0, d1 = facts.depths
    assert d0.split == pytest.approx({"prompt": .6 / 1.1, "template": .1 / 1.1, "reasoning": .4 / 1.1, "answer": 0})
    assert d1.split == pytest.approx({"prompt": .65 / .8, "template": 0, "reasoning": .05 / .8, "answer": .1 / .8})
    assert (d0.reached, d1.reached) == pytest.approx((.7 / 1.1, .7 / 1.1 + RHO0 * .65 / .8))
    assert (d0.rho, d1.rho) == pytest.approx((RHO0, RHO0 * .15 / .8))
    assert facts.input_share == pytest.approx((.7 / 1.1, RHO0 * .65 / .8))
    assert (d0.ran, d1.ran) == (True, True) and facts.hop0 == "answer" and facts.target_label == "answer"
    assert facts.of_answer == OF_ANSWER
    assert facts.additions.unit == pytest.approx(sum(CUM)) and facts.additions.reached == [d0.reached, d1.reached]


def test_a_depth_the_hops_never_reached_repeats_the_last_one():
    trace = two_hops()
    stopped = trace.model_copy(update={"settings": trace.settings.model_copy(update={"hops": 2})})
    facts = analyse(stopped)
    d1, d2 = facts.depths[1:]
    assert not d2.ran and d2.split is None and d2.added == pytest.approx([0, 0, 0])
    assert d2.shares == pytest.approx(d1.shares) and (d2.reached, d2.rho) == pytest.approx((d1.reached, d1.rho))
    assert d2.top_tokens == d1.top_tokens and facts.input_share[2] == 0
    two_short = analyse(trace.model_copy(update={"settings": trace.settings.model_copy(update={"hops": 3})}))
    assert [d.split is None for d in two_short.depths] == [False, False, True, True]
    assert [d.ran for d in two_short.depths] == [True, True, False, False]


def test_top_words_skip_punctuation_and_unread_tokens_and_break_ties_by_position():
    trace = make_trace(P, S, A, [vector(P, S, A, {"P0": .75, "P2": 1.0, "S0": .25})])
    facts = analyse(trace)
    d0 = facts.depths[0]
    # P2's 4 tokens hold .25 each, P0's 3 hold .25 each: a tie, broken by position; " ?" and P1 are left out
    assert [trace.tokens[p].text for p in d0.top_tokens] == ["Alpha", " is", " one.", " What", " is", " alpha"]
    assert facts.token_share(0, 8) == pytest.approx(.25 / 1.75) and facts.token_share(0, 5) == 0
    assert d0.token_shares.sum() == pytest.approx(1.0)


def test_a_piece_tie_is_broken_by_text_order():
    trace = make_trace(P, S, A, [vector(P, S, A, {"P1": .3, "P2": .3, "S0": .4})])
    d0 = analyse(trace).depths[0]
    assert d0.order == (1, 2, 0) and d0.top == 1 and d0.lead() == 0


def test_a_trace_without_prompt_attribution_has_no_top_and_claims_nothing():
    facts = analyse(unread(two_hops()))
    assert all(d.top is None for d in facts.depths) and facts.evidence() == []
    assert facts.change.kind == "none" and (facts.change.lead_first, facts.change.lead_last) == (0, 0)
    assert all(d.shares.sum() == 0 and d.token_shares.sum() == 0 and d.top_tokens == () for d in facts.depths)
    assert facts.swaps == () and not facts.hops_change_evidence
    assert all(d.added.tolist() == [0.0, 0.0, 0.0] for d in facts.depths)  # nothing added, not 0/0


def test_a_kept_top_reports_its_lead_at_both_depths():
    raws = [vector(Q, S, A, {"P0": .5, "P1": .2, "S0": .3}), vector(Q, S, A, {"P0": .2, "P2": .7, "S1": .1})]
    facts = analyse(make_trace(Q, S, A, raws))
    c, d0, d1 = facts.change, facts.depths[0], facts.depths[1]
    assert (c.kind, c.first, c.last) == ("same", 0, 0) and c.margin == MARGIN
    assert c.lead_first == pytest.approx(d0.shares[0] - d0.shares[1])
    assert c.lead_last == pytest.approx(d1.shares[0] - d1.shares[2]) and c.lead_last > 0


def test_a_change_and_a_tie_carry_both_leads():
    raws = [vector(Q, S, A, {"P0": .2, "P1": .1, "P2": .3, "S0": .3, "S1": .1}),
            vector(Q, S, A, {"P0": .6, "P2": .05, "S0": .05})]
    facts = analyse(make_trace(Q, S, A, raws))
    c, d0, d1 = facts.change, *facts.depths
    assert (c.kind, c.first, c.last) == ("changed", 2, 0) and facts.hops_change_evidence
    assert c.lead_first == pytest.approx(d0.shares[2] - d0.shares[0]) and c.lead_first > MARGIN
    assert c.lead_last == pytest.approx(d1.shares[0] - d1.shares[2]) and c.lead_last > MARGIN
    # the same move, but "Alpha is one." ends only 1 point ahead: a tie at the deepest depth
    raws[1] = vector(Q, S, A, {"P0": .275, "S0": .05})
    tie = analyse(make_trace(Q, S, A, raws))
    t1 = tie.depths[1]
    assert tie.change.kind == "tie" and tie.change.lead_last == pytest.approx(t1.shares[0] - t1.shares[2])
    assert 0 < tie.change.lead_last < MARGIN < tie.change.lead_first
    assert not tie.hops_change_evidence


def test_the_top_evidence_is_ranked_over_the_context_the_question_apart():
    # the same attribution with the third sentence a question: it leads at hop 0 but is what was asked, so the
    # top context sentence is "Alpha is one." at both depths
    raws = [vector(P, S, A, {"P0": .2, "P1": .1, "P2": .3, "S0": .3, "S1": .1}),
            vector(P, S, A, {"P0": .6, "P2": .05, "S0": .05})]
    facts = analyse(make_trace(P, S, A, raws))
    d0, d1 = facts.depths
    assert facts.pieces[2].asked and d0.top == 2  # the question holds the most at hop 0 ...
    c = facts.change
    assert (c.kind, c.first, c.last) == ("same", 0, 0)  # ... but the context's top stays
    assert c.lead_first == pytest.approx(d0.shares[0] - d0.shares[1])
    assert c.lead_last == pytest.approx(d1.shares[0] - d1.shares[1])


def swap_trace(late: float):
    prompt = [f"Fact {i} here." for i in range(5)]
    hop0 = {"P0": .4, "P1": .3, "P2": .2, "P3": .05, "P4": .01, "S0": 1.0}  # ρ0 = 1/1.96
    return make_trace(prompt, S, A, [vector(prompt, S, A, hop0), vector(prompt, S, A, {"P4": late, "S0": .1})])


def test_a_piece_the_hops_bring_into_the_top_three_is_a_swap_beyond_the_margin():
    facts = analyse(swap_trace(.5))  # "Fact 4" from last (5th) to 3rd, past "Fact 2"; the top stays
    assert facts.change.kind == "same" and len(facts.swaps) == 1 and facts.hops_change_evidence
    w, d0, d1 = facts.swaps[0], *facts.depths
    assert d1.order == (0, 1, 4, 2, 3)
    assert (w.entered, w.left, w.rank_first, w.rank_last) == (4, 2, 5, 3)
    assert w.lead_first == pytest.approx(d0.shares[2] - d0.shares[4]) and w.lead_first > MARGIN
    assert w.lead_last == pytest.approx(d1.shares[4] - d1.shares[2]) and w.lead_last > MARGIN
    move = facts.moves[0]  # the largest climb first, then by final rank
    assert (move.piece, move.rank_first, move.rank_last) == (4, 5, 3)
    assert (move.share_first, move.share_last) == pytest.approx((d0.shares[4], d1.shares[4]))
    assert [m.piece for m in facts.moves] == [4, 0, 1, 2, 3]
    assert facts.climbers() == [] and [m.piece for m in facts.climbers(min_places=2)] == [4]
    assert facts.climbers(min_places=2, within=2) == [] and facts.climbers(min_places=2, within=3) == [move]


def test_entering_the_top_three_within_the_margin_is_no_swap():
    facts = analyse(swap_trace(.385))  # "Fact 4" passes "Fact 2" by less than 2 points of the final share
    d1 = facts.depths[1]
    assert d1.order[:3] == (0, 1, 4) and 0 < d1.shares[4] - d1.shares[2] < MARGIN
    assert facts.swaps == () and not facts.hops_change_evidence


def test_gold_ranks_and_shares_per_depth():
    prompt = " ".join(P)
    lo = prompt.index("Beta")
    trace = two_hops(extra={"gold": [[lo, lo + len("Beta is")]]})
    facts = analyse(trace)
    g = facts.gold
    assert g.positions == (4, 5) and g.pieces == (1,) and [p.gold for p in facts.pieces] == [False, True, False]
    d0, d1 = facts.depths
    assert g.share == pytest.approx((d0.token_shares[3:5].sum(), d1.token_shares[3:5].sum()))
    assert g.piece_rank == (3, 3)
    # hop 0: 7 tokens of P0 and P2 hold more than P1's (.2/3 and .3/4 against .1/3), " ?" among them
    assert g.token_rank == (8, 8)
    assert analyse(two_hops()).gold is None


def test_the_hop_graph_agrees_with_the_final_scores_or_says_by_how_much():
    trace = two_hops(step_vectors={"S0": vector(P, S, A, {"P0": .6, "P2": .1}),
                                   "S1": vector(P, S, A, {"P1": .5, "S0": .5}),
                                   "A": vector(P, S, A, {"P2": .2, "S0": .4, "S1": .4})})
    facts = analyse(trace)
    graph = facts.graph
    assert graph is not None and set(graph.influence) >= {"P0", "P1", "P2"}
    raw = np.asarray([graph.influence[k] for k in ("P0", "P1", "P2")])
    assert graph.shares == pytest.approx(raw / raw.sum())
    assert graph.top == int(np.argmax(raw)) and graph.same_top == (graph.top == facts.final.top)
    assert graph.difference == pytest.approx(np.abs(graph.shares - facts.final.shares).max())
    assert graph.agrees == (graph.difference <= 1e-6) and not graph.agrees
    assert analyse(two_hops()).graph is None  # no steps: no hop graph


def test_a_trace_without_segments_ranks_its_prompt_tokens():
    trace = two_hops()
    bare = trace.model_copy(update={"segments": None})
    facts = analyse(bare)
    assert facts.piece_kind == "token" and [p.key for p in facts.pieces] == [str(i) for i in range(1, 11)]
    assert [(p.start, p.end) for p in facts.pieces[:2]] == [(1, 2), (2, 3)]
    assert facts.pieces[0].text == "Alpha" and facts.final.shares.sum() == pytest.approx(1.0)
    assert facts.graph is None


def test_overlap_of_the_top_tokens_between_hop_0_and_the_deepest_depth():
    facts = analyse(two_hops())
    # hop 0's top 4 tokens are P2's (.075 each, " ?" too); after the hops P0's 3 lead, then P2's first
    assert facts.overlap(3) == 0.0 and facts.overlap(4) == .25
    assert facts.overlap(10) == 1.0 and facts.overlap(100) == 1.0  # all 10 prompt tokens
    assert facts.overlap(0) == 1.0


def test_analysis_is_computed_once_and_a_live_check_replaces_the_stored_one():
    trace = two_hops(extra={"faithfulness": dict(CHECK)})
    facts = analyse(trace)
    assert analyse(trace) is facts and facts.check.drop_top == pytest.approx(5.75)
    live = with_check(trace, {**CHECK, "top": -1.5})
    assert live.check.drop_top == pytest.approx(1.0) and analyse(trace).check.drop_top == pytest.approx(5.75)
    assert live.final.shares == pytest.approx(facts.final.shares) and live.change == facts.change
    assert with_check(trace, None).check is None
    comparison = facts.comparison(3)
    assert comparison is facts.comparison(3) and comparison.k == 3


def test_overlap_and_comparison_read_the_deepest_depth():
    hop2 = vector(P, S, A, {"P1": 5.0, "S0": .1})  # after hop 2 the top tokens are P1's, not hop 1's P0
    trace = make_trace(P, S, A, [vector(P, S, A, HOP0), vector(P, S, A, HOP1), hop2])
    facts = analyse(trace)
    assert facts.depths[2].top_tokens[:3] == (4, 5, 6) and facts.depths[1].top_tokens[:3] == (1, 2, 3)
    assert facts.overlap(3) == 0.0 and facts.overlap(4) == 0.0 and facts.overlap(7) == pytest.approx(4 / 7)
    assert facts.comparison().k == 10  # the Compare page's top-10 overlap
    live = with_check(trace, dict(CHECK))
    assert live.comparison(3).overlap == facts.comparison(3).overlap  # the live facts still reach the trace


def test_climbers_are_three_places_up_into_the_top_ten_by_default():
    prompt = [f"Fact {i} here." for i in range(14)]
    raws = [vector(prompt, S, A, {f"P{i}": 0.1 - 0.005 * i for i in range(14)} | {"S0": .5}),
            vector(prompt, S, A, {"P9": .05, "P13": .055, "S0": .05})]
    facts = analyse(make_trace(prompt, S, A, raws))
    moves = {m.piece: (m.rank_first, m.rank_last) for m in facts.moves}
    assert moves[9] == (10, 7) and moves[13] == (14, 11)  # both climb 3 places; "Fact 13" ends 11th
    assert [m.piece for m in facts.climbers()] == [9]
    assert [m.piece for m in facts.climbers(within=11)] == [9, 13] and facts.climbers(min_places=4) == []


def test_overlap_counts_the_top_ten_prompt_tokens_by_default():
    prompt = ["Aa bb cc.", "Dd ee ff.", "Gg hh ii.", "Jj kk ll."]
    raws = [vector(prompt, S, A, {"P0": .4, "P1": .3, "P2": .2, "P3": .1, "S0": 1.0}),
            vector(prompt, S, A, {"P3": 2.0, "S0": .1})]
    facts = analyse(make_trace(prompt, S, A, raws))
    assert facts.final.order == (3, 0, 1, 2)
    # hop 0's top 10: every token but "Gg hh ii."'s last two and "Jj kk ll."'s last two; after the hops
    # "Jj kk ll." leads and "Gg hh ii." trails
    assert facts.overlap() == pytest.approx(.8) and facts.overlap(11) == pytest.approx(10 / 11)


def test_the_lead_of_a_top_over_the_runner_up_with_two_one_or_no_pieces():
    two = make_trace(["Alpha is one.", "Beta is two."], S, A,
                     [vector(["Alpha is one.", "Beta is two."], S, A, {"P0": .3, "P1": .1, "S0": .6})])
    assert analyse(two).depths[0].lead() == pytest.approx(.75 - .25)
    one = make_trace(["Alpha is one."], S, A, [vector(["Alpha is one."], S, A, {"P0": .3, "S0": .6})])
    assert analyse(one).depths[0].lead() == 1.0
    trace = two_hops()
    tokens = [t.model_copy(update={"role": "template"}) if t.role == "prompt" else t for t in trace.tokens]
    unprompted = analyse(trace.model_copy(update={"tokens": tokens, "segments": None}))
    assert unprompted.pieces == () and unprompted.depths[0].lead() == 0.0 and unprompted.depths[0].top is None
    assert unprompted.moves == () and unprompted.evidence() == [] and unprompted.depths[0].shares.shape == (0,)
    assert unprompted.depths[0].token_shares.shape == (0,) and unprompted.overlap() == 1.0


def test_a_hop_that_attributes_nothing_lands_nowhere():
    trace = two_hops()
    silent = trace.model_copy(update={"hops": [trace.hops[0], trace.hops[1].model_copy(update={"raw": [0.0] * 20})]})
    split = analyse(silent).depths[1].split
    assert split == {"prompt": 0.0, "template": 0.0, "reasoning": 0.0, "answer": 0.0}
    mute = trace.model_copy(update={"hops": [trace.hops[0].model_copy(update={"raw": [0.0] * 20}), trace.hops[1]]})
    assert analyse(mute).direct == {"prompt": 0.0, "template": 0.0, "generated": 0.0}


def margin_trace(hops: int = 1, extra: dict | None = None):
    """62 one-word prompt tokens (no sentences) whose hop 0 shares are exactly 4 % ("w0") and 2 % ("w1"), the
    rest below 2 %: "w0" leads "w1" by exactly the margin. Hop 1 puts "w1" far ahead."""
    words = [f"w{i}" for i in range(62)]
    base = [0.04, 0.02] + [1 / 64] * 59
    rest = 0.01812499999999989  # the prompt's shares then sum to exactly 1.0 in floating point
    n = 1 + len(words) + 2 + 2  # the template, the words, "Step one." and the answer
    raw0 = [0.0, *base, rest] + [1.0] * (n - 63)
    raw1 = [0.0] * n
    raw1[2], raw1[-1] = 5.0, 1.0
    trace = make_trace([" ".join(words)], ["Step one."], A, [raw0, raw1][:hops + 1], extra=extra)
    return trace.model_copy(update={"segments": None})


def test_a_lead_of_exactly_the_margin_is_a_tie_not_a_change():
    facts = analyse(margin_trace())
    d0 = facts.depths[0]
    assert (d0.shares[0], d0.shares[1]) == (0.04, 0.02) and d0.lead() == MARGIN
    assert (facts.change.kind, facts.change.first, facts.change.last) == ("tie", 0, 1)
    assert facts.change.lead_first == MARGIN and facts.change.lead_last > .5 and not facts.hops_change_evidence


def test_no_claim_of_change_when_hop_0_reads_no_prompt_at_all():
    raws = [vector(P, S, A, {"S0": 1.0}), vector(P, S, A, {"P0": .5, "S0": .1})]
    facts = analyse(make_trace(P, S, A, raws))
    assert (facts.depths[0].top, facts.final.top) == (None, 0)
    assert (facts.change.kind, facts.change.first, facts.change.last) == ("none", None, 0)


def test_a_piece_without_attribution_at_hop_0_can_still_enter_the_top_three():
    prompt = [*P, "Gamma is three."]
    raws = [vector(prompt, S, A, {"P0": .5, "P1": .3, "S0": .2}), vector(prompt, S, A, {"P2": 5.0, "P3": 4.0, "S0": .1})]
    facts = analyse(make_trace(prompt, S, A, raws))
    assert facts.depths[0].order[:3] == (0, 1, 2) and facts.depths[0].shares[2] == 0  # third at hop 0, unread
    assert [(w.entered, w.left, w.rank_first, w.rank_last) for w in facts.swaps] == [(2, 1, 3, 1), (3, 1, 4, 2)]


def test_a_final_lead_of_exactly_the_margin_is_a_tie_not_a_change():
    # "w0" leads at hop 0; hop 1 (rho0 exactly 1/2) gives "w1" exactly 4 % against "w0"'s 2 % of a total of 1.0
    words = [f"w{i}" for i in range(62)]
    raw0 = [0.0, 0.02, 0.0] + [1 / 64] * 59 + [0.01812499999999989, 0.0, 0.0, 0.0, 0.0]
    raw0[-4] = sum(raw0)  # the reasoning holds as much as the prompt
    raw1 = [0.0] * len(raw0)
    raw1[2], raw1[-1] = 0.08, 1.0
    trace = make_trace([" ".join(words)], ["Step one."], A, [raw0, raw1]).model_copy(update={"segments": None})
    facts = analyse(trace)
    assert (facts.final.shares[1], facts.final.shares[0]) == (0.04, 0.02) and facts.final.top == 1
    assert (facts.change.kind, facts.change.lead_last) == ("tie", MARGIN) and facts.change.lead_first > MARGIN


def test_passing_a_piece_that_led_by_exactly_the_margin_is_no_swap():
    # hop 0: "w0".."w2" hold exactly 4 % each (of a total of 1.0), "w3" exactly 2 %; hop 1 puts "w3" on top
    base = [0.04, 0.04, 0.04, 0.02] + [1 / 128] * 108 + [0.01624999999999993]
    words = [f"w{i}" for i in range(len(base))]
    raw1 = [0.0] * (len(base) + 5)
    raw1[4], raw1[-1] = 5.0, 1.0
    trace = make_trace([" ".join(words)], ["Step one."], A, [[0.0, *base, 1.0, 1.0, 1.0, 1.0], raw1])
    facts = analyse(trace.model_copy(update={"segments": None}))
    d0 = facts.depths[0]
    assert d0.order[:4] == (0, 1, 2, 3) and d0.shares[2] - d0.shares[3] == MARGIN
    assert facts.final.order[:3] == (3, 0, 1) and facts.swaps == ()  # "w3" passed "w2", but not beyond the margin


def test_a_gold_token_tied_with_others_ranks_in_text_order():
    text = " ".join(f"w{i}" for i in range(62))
    at = text.index("w50")
    facts = analyse(margin_trace(hops=0, extra={"gold": [[at, at + 3]]}))
    # 4 %, 2 %, then "w61" (1.8 %), then w2..w60 tied at 1/64 in text order: w50 is the 49th of them
    assert facts.gold.positions == (51,) and facts.gold.token_rank == (3 + 49,)


def test_gold_outside_every_sentence_has_no_sentence_rank_and_a_graph_needs_sentences():
    trace = two_hops(extra={"gold": [[13, 17]]})  # " Beta", whose sentence is then left out
    facts = analyse(trace.model_copy(update={"segments": [s for s in trace.segments if s.id != "P1"]}))
    assert facts.gold.positions == (4,) and facts.gold.pieces == () and facts.gold.piece_rank == (None, None)
    assert facts.gold.token_rank == (8, 8)  # behind the 7 tokens of P0 and P2 at both depths
    steps = {"S0": vector(P, S, A, {"P0": 1.0}), "S1": vector(P, S, A, {"S0": 1.0}), "A": vector(P, S, A, {"S1": 1.0})}
    traced = two_hops(step_vectors=steps)
    unsplit = traced.model_copy(update={"segments": [s for s in traced.segments if s.role != "prompt"]})
    assert analyse(traced).graph is not None and analyse(unsplit).piece_kind == "token" and analyse(unsplit).graph is None


def test_a_hop_graph_that_never_reaches_the_prompt_has_no_top():
    steps = {"S0": vector(P, S, A, {"T0": 1.0}), "S1": vector(P, S, A, {"S0": 1.0}), "A": vector(P, S, A, {"S1": 1.0})}
    facts = analyse(two_hops(step_vectors=steps))
    graph = facts.graph
    assert graph.top is None and graph.shares.tolist() == [0.0, 0.0, 0.0] and not graph.same_top
    assert graph.difference == pytest.approx(max(facts.final.shares))


def test_a_traces_analysis_is_forgotten_with_the_trace():
    import gc

    from flashtrace.analysis import facts as module

    trace = two_hops()
    key = id(trace)
    analyse(trace)
    assert key in module._CACHE
    del trace
    gc.collect()
    assert key not in module._CACHE  # a long session does not keep every trace it analysed


def test_the_hop_graphs_top_sentence_is_its_most_influential():
    steps = {"S0": vector(P, S, A, {"P2": 1.0}), "S1": vector(P, S, A, {"P1": .2, "S0": .8}),
             "A": vector(P, S, A, {"P0": .1, "S1": .9})}
    graph = analyse(two_hops(step_vectors=steps)).graph
    assert graph.shares.argmax() == 2 and graph.top == 2 and graph.same_top is False  # the final top is P0


def test_entering_the_top_three_by_exactly_the_margin_is_no_swap():
    # hop 0: "w2" third (2 %), "w3" unread; hop 1 (ρ0 exactly 1/2) gives "w3" exactly 4 % against "w2"'s 2 %
    hop0 = [0.04, 0.04, 0.02, 0.0] + [1 / 128] * 108 + [0.01624999999999993]
    raw1 = [0.0] * (len(hop0) + 5)
    raw1[4], raw1[-1] = 0.08, 1.0
    words = " ".join(f"w{i}" for i in range(len(hop0)))
    trace = make_trace([words], ["Step one."], A, [[0.0, *hop0, sum(hop0), 0.0, 0.0, 0.0], raw1])
    facts = analyse(trace.model_copy(update={"segments": None}))
    d1 = facts.final
    assert facts.depths[0].order[:3] == (0, 1, 2) and d1.order[:4] == (0, 1, 3, 2) and d1.shares[3] - d1.shares[2] == MARGIN
    assert facts.swaps == ()
