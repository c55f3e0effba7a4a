"""The Story: five panels in words over the trace's facts. Numbers are checked against computations written
here from the trace's stored vectors (not through `flashtrace.analysis.facts`); claims of change are
checked against the margin on hand-made traces where the answer is known."""

import math

import pytest

from flashtrace.analysis.facts import MARGIN, analyse
from flashtrace.engine.inputs.sequence import scaffold_range
from flashtrace.analysis.story import (STEPS, asked, card_note, change_words, check_panel, direct_panel, evidence_panel,
                                       gold_words, hops_panel, moves_words, stored_check, story_panels, swap_words, top_words)
from flashtrace.analysis.text import counted, pct, quote
from flashtrace.engine.inputs.sequence import INSTRUCTION_SEPARATOR, REASONING_INSTRUCTION
from flashtrace.store.gallery import list_gallery, load_gallery_trace

from .trace_factory import make_trace, unread, vector

CHECK = {"version": 1, "fraction": 0.1, "n_prompt": 120, "n_deleted": 12, "before": -0.5, "top": -6.25,
         "random": [-0.75, -1.0, -0.5], "random_mean": -0.75, "seed": 0, "model": "m"}
P = ["Alpha is one.", "Beta is two.", "What is alpha?"]
C = ["Alpha is one.", "Beta is two.", "Gamma is alpha."]  # the same layout, all context (no question)
S = ["Step one reads alpha.", "Step two checks."]
A = "Answer: one"


def reached_by_hand(trace) -> list[float]:
    """Σ_{k<=K} ρ_{k-1} · Σ_input a_k / Σ a_k, from the stored raw vectors and ρ."""
    out, total, rho_prev = [], 0.0, 1.0
    for hop in trace.hops:
        on_input = sum(v for t, v in zip(trace.tokens, hop.raw) if t.role in ("prompt", "template"))
        total += rho_prev * on_input / sum(hop.raw)
        out.append(total)
        rho_prev = hop.rho
    return out


def sentence_shares_by_hand(trace, depth: int) -> dict[str, float]:
    """Each prompt sentence's share of Σ_{k<=depth} contribution_k over the prompt."""
    cum = [sum(h.contribution[i] for h in trace.hops[: depth + 1]) for i in range(trace.n_tokens)]
    sums = {s.id: sum(cum[s.start:s.end]) for s in trace.segments if s.role == "prompt"}
    total = sum(sums.values())
    return {k: v / total for k, v in sums.items()}


@pytest.fixture(scope="module", params=[it.name for it in list_gallery()])
def trace(request):
    return load_gallery_trace(request.param)


def test_every_gallery_trace_tells_five_panels_and_a_failure_its_sixth(trace):
    panels = story_panels(trace)
    wrong = trace.extra.get("gallery", {}).get("correct") is False
    assert [p.key for p in panels] == [*STEPS[:4], *(["failure"] if wrong else []), "check"]
    assert all(p.caption and p.title for p in panels)
    question, direct = panels[:2]
    scaffold = scaffold_range(trace.prompt)  # the instruction the tool added is not part of the question
    assert question.data["question"] == (trace.prompt[:scaffold[0]] if scaffold else trace.prompt)
    lo, hi = trace.settings.target
    assert question.data["answer"] == "".join(t.text for t in trace.tokens[lo:hi]).strip()
    raw = trace.hops[0].raw
    prompt = sum(v for t, v in zip(trace.tokens, raw) if t.role == "prompt") / sum(raw)
    assert direct.data["shares"]["prompt"] == pytest.approx(prompt)
    assert pct(prompt) in direct.caption


def test_reached_counts_what_each_hop_moved_onto_the_input(trace):
    hops = story_panels(trace)[2]
    expected = reached_by_hand(trace)
    assert hops.data["reached"] == pytest.approx(expected, abs=1e-9)
    if trace.settings.recursive == "reasoning+answer":  # then it is also 1 - ρ_K
        assert expected == pytest.approx([1 - h.rho for h in trace.hops], abs=1e-4)
    assert f"after {counted(len(expected) - 1, 'hop')} {pct(expected[-1])}" in hops.caption


def test_top_sentence_at_every_depth_is_the_one_computed_by_hand(trace):
    panel = story_panels(trace)[2]
    for depth, top in enumerate(panel.data["top"]):
        shares = sentence_shares_by_hand(trace, depth)
        best = max(shares, key=lambda k: (shares[k], -int(k[1:])))
        assert top.key == best and top.share == pytest.approx(shares[best], abs=1e-9)


def test_evidence_is_the_final_ranking_of_the_context_with_the_questions_share_apart(trace):
    evidence = story_panels(trace)[3]
    prompt = [s for s in trace.segments if s.role == "prompt"]
    sums = {s.id: sum(trace.scores.prompt[s.start:s.end]) for s in prompt}
    questions = {s.id for s in prompt if s.text.strip().endswith("?")}
    if len(questions) == len([s for s in prompt if s.text.strip()]):
        questions = set()  # a prompt that is only a question is its own context
    ranked = sorted((k for k in sums if k not in questions), key=lambda k: -sums[k])[:3]
    assert [p.key for p in evidence.data["sentences"]] == ranked
    assert evidence.data["sentences"][0].share == pytest.approx(sums[ranked[0]], rel=1e-4)
    assert quote(evidence.data["sentences"][0].text) in evidence.caption
    assert {p.key for p in evidence.data["asked"]} == questions
    if questions:
        asked = sum(sums[k] for k in questions)
        assert f"holds {pct(asked)} of the prompt's attribution: it says what was asked" in evidence.caption


def test_recursive_reasoning_reach_is_not_one_minus_rho():
    # hop 0 puts mass on the answer's own text: with recursive="reasoning" it is never followed
    raws = [vector(P, S, A, {"P0": .1, "P2": .1, "S0": .4, "A": .4}), vector(P, S, A, {"P0": .5, "P1": .3, "S1": .2})]
    tr = make_trace(P, S, A, raws, recursive="reasoning")
    expected = [0.2, 0.2 + 0.4 * 0.8]
    assert reached_by_hand(tr) == pytest.approx(expected)
    assert [d.reached for d in analyse(tr).depths] == pytest.approx(expected)
    assert 1 - tr.hops[-1].rho != pytest.approx(expected[-1])  # the old shortcut would say 92 %
    caption = hops_panel(tr, analyse(tr)).caption
    assert f"after 1 hop {pct(expected[-1])}" in caption and "follow the reasoning only" in caption


def test_a_change_is_claimed_only_beyond_the_margin():
    # hop 0: "Gamma is alpha." leads by 10 points; hop 1 moves the evidence to "Alpha is one." decisively
    raws = [vector(C, S, A, {"P0": .2, "P1": .1, "P2": .3, "S0": .3, "S1": .1}),
            vector(C, S, A, {"P0": .6, "P2": .05, "S0": .05})]
    facts = analyse(make_trace(C, S, A, raws))
    assert facts.change.kind == "changed"
    words = change_words(facts)
    assert words.startswith("The hops changed the top prompt sentence from “Gamma is alpha.”") and "“Alpha is one.”" in words
    assert "Hops change the evidence" in card_note(facts)


def test_a_lead_within_the_margin_is_a_tie_naming_both():
    # hop 0: "Gamma is alpha." 43.2 % vs "Alpha is one." 42.4 % (a tie); later "Alpha is one." leads
    raws = [vector(C, S, A, {"P0": .295, "P1": .1, "P2": .3, "S0": .4}),
            vector(C, S, A, {"P0": .6, "P2": .1, "S0": .1})]
    facts = analyse(make_trace(C, S, A, raws))
    d0 = facts.depths[0]
    assert d0.shares[2] - d0.shares[0] < MARGIN
    assert facts.change.kind == "tie"
    words = change_words(facts)
    assert "did not clearly change" in words and "“Gamma is alpha.”" in words and "“Alpha is one.”" in words
    assert "changed the top" not in words and "not a change" in card_note(facts)


def test_sentences_that_climb_are_named_with_their_ranks():
    prompt = [f"Fact {i} is here." for i in range(8)] + ["What is it?"]
    values0 = {f"P{i}": 0.1 - 0.01 * i for i in range(8)} | {"P8": 0.5, "S0": 0.5}
    values1 = {"P7": 0.4, "P8": 0.1, "S0": 0.05}
    raws = [vector(prompt, S, A, values0), vector(prompt, S, A, values1)]
    facts = analyse(make_trace(prompt, S, A, raws))
    words = moves_words(facts)
    assert "“Fact 7 is here.” from 9th to" in words


def test_gold_is_reported_even_when_it_ranks_low():
    prompt_text = " ".join(P)
    lo = prompt_text.index("Beta")
    raws = [vector(P, S, A, {"P0": .5, "P1": .01, "P2": .3, "S0": .2})]
    tr = make_trace(P, S, A, raws, extra={"gold": [[lo, lo + len("Beta is two.")]]})
    facts = analyse(tr)
    assert facts.gold is not None and facts.gold.piece_rank[0] == 3
    words = gold_words(facts)
    assert "known evidence (gold" in words and "ranks 3rd" in words
    assert words in evidence_panel(tr, facts).caption


def test_a_trace_without_hops_says_so():
    trace = load_gallery_trace("free-form")
    zero = trace.model_copy(update={"hops": trace.hops[:1],
                                    "settings": trace.settings.model_copy(update={"hops": 0})})
    assert "without hops" in story_panels(zero)[2].caption


def test_check_panel_says_plainly_when_not_precomputed():
    trace = load_gallery_trace("free-form")
    trace = trace.model_copy(update={"extra": {k: v for k, v in trace.extra.items() if k != "faithfulness"}})
    panel = check_panel(trace, analyse(trace))
    assert (panel.key, panel.title) == ("check", "Is it faithful? Delete the evidence and watch the answer")
    assert panel.data == {"check": None} and panel.caption == (
        "The faithfulness check is not precomputed for this trace. It deletes the top 10 % of prompt tokens and, "
        "separately, 10 % chosen at random several times, and compares how much the answer's log-probability falls; "
        "it needs the model that made the trace.")


def test_stored_check_is_read_and_malformed_ones_are_ignored():
    trace = load_gallery_trace("free-form")
    trace = trace.model_copy(update={"extra": {**trace.extra, "faithfulness": dict(CHECK)}})
    check = stored_check(trace)
    assert (check.before, check.top, check.drop_top) == (-0.5, -6.25, 5.75)
    caption = check_panel(trace, analyse(trace)).caption
    assert "from -0.50 to -6.25" in caption and "drops from 0.00 to 0.50 (mean 0.25)" in caption
    assert "Deleting as many prompt tokens at random, in 3 draws, gives drops" in caption
    for bad in ("x", {**CHECK, "top": "NaN"}, {**CHECK, "random": []}, {**CHECK, "before": float("inf")},
                {k: v for k, v in CHECK.items() if k != "n_deleted"}):
        trace = trace.model_copy(update={"extra": {**trace.extra, "faithfulness": bad}})
        assert stored_check(trace) is None


@pytest.mark.parametrize("top, randoms, verdict, says", [
    (-6.25, [-0.6, -0.7, -0.65, -0.55], "clearly-above", "The evidence matters"),
    (-2.22, [-0.73, -2.08, -1.69, -1.2, -1.93], "above-draws", "suggestive, not conclusive"),  # the arithmetic case
    (-1.0, [-0.6, -1.2, -0.9], "within-random", "within random variation"),
    (-0.55, [-0.9, -1.2], "below-random", "less than every random draw"),
    (-0.4, [-0.6, -0.7], "not-lower", "did not lower"),
    (-0.503, [-0.495, -0.509, -0.5], "no-effect", "this check says nothing about the highlighted"),  # a saturated answer
])
def test_check_verdict_weighs_the_spread_of_the_random_draws(top, randoms, verdict, says):
    trace = load_gallery_trace("free-form")
    trace = trace.model_copy(update={"extra": {**trace.extra, "faithfulness": {**CHECK, "top": top, "random": randoms}}})
    facts = analyse(trace)
    assert facts.check.verdict == verdict
    caption = check_panel(trace, facts).caption
    assert says in caption
    if verdict != "clearly-above":
        assert "matters" not in caption
    drops = [-0.5 - r for r in randoms]
    assert f"drops from {min(drops):.2f} to {max(drops):.2f}" in caption


def test_captions_name_a_target_that_is_not_the_answer_and_a_generation_hop0():
    trace = load_gallery_trace("free-form")
    assert "answered “" in story_panels(trace)[0].caption
    lo, hi = trace.spans.reasoning
    other = trace.model_copy(update={"settings": trace.settings.model_copy(update={"target": (lo, hi),
                                                                                    "hop0": "generation"})})
    question, direct = story_panels(other)[:2]
    assert "the part explained here (the target)" in question.caption
    assert "hop 0 was taken over the whole generated text" in direct.caption


def test_counts_and_percentages_read_plainly():
    assert [counted(0, "hop"), counted(1, "hop"), counted(3, "step"), counted(2, "query", "queries")] == [
        "0 hops", "1 hop", "3 steps", "2 queries"]
    assert pct(0.784) == "78\u00a0%" and pct(0.001) == "<1\u00a0%" and pct(0) == "0\u00a0%"
    assert pct(0.7834, 1) == "78.3\u00a0%" and math.isclose(float(pct(0.5, 1).split()[0]), 50.0)
    assert quote("a\n  b   c") == "“a b c”"
    long = quote("start " + "x" * 200 + " end", 30)
    assert long.startswith("“start") and long.endswith("end”") and " … " in long


def test_paths_that_skip_the_reasoning_say_why():
    from flashtrace.analysis.graph import HopPath
    from flashtrace.analysis.graph_words import path_words

    direct = [HopPath(("A", "P1"), 0.3), HopPath(("A", "P4"), 0.1), None]
    assert "skipping the reasoning" in path_words(direct)
    assert path_words([HopPath(("A", "S2", "P1"), 0.2), HopPath(("A", "P4"), 0.1)]) == ""  # one goes through a step
    assert path_words([None]) == ""


def test_step_one_names_the_sentence_that_asks_in_a_long_prompt():
    # long-vartrack hides its question after ~8,800 characters of text: step 1 shows that sentence large
    assert asked(load_gallery_trace("long-vartrack")) == "Question: What is the value of VAR HWRXJ?"
    assert story_panels(load_gallery_trace("long-vartrack"))[0].data["ask"] == "Question: What is the value of VAR HWRXJ?"
    assert asked(load_gallery_trace("free-form")) == ""  # 161 characters: shown whole
    facts = ["Alpha is one and it stays one for a long while, as every reader of this long text knows."] * 4
    trace = make_trace(facts + ["Tell me alpha."], S, A, [vector(facts + ["Tell me alpha."], S, A, {"P0": .5, "S0": .5})])
    assert len(trace.prompt) > 300 and asked(trace) == "Tell me alpha."  # no question mark: the last sentence


@pytest.mark.parametrize("top, randoms, verdict", [
    (0.0, [-1.0, -2.0], "not-lower"),  # no drop at all: not lower
    (-0.01, [0.0, -0.01], "no-effect"),  # nothing moves by more than 0.01 nats: the check tells nothing
    (-0.011, [0.0, -0.01], "above-draws"),  # just beyond: a verdict again
    (-0.5, [0.0, 0.0], "above-draws"),  # the top moves, the random ones do not
    (-1.0, [-1.0, -2.0], "within-random"),  # as much as the smallest random drop: within the draws
    (-2.0, [-1.0, -2.0], "within-random"),  # as much as the largest
    (-4.0, [-1.0, -2.0, -3.0], "clearly-above"),  # 2 standard deviations (n - 1) above the draws' mean, 3 draws
    (-3.9, [-1.0, -2.0, -3.0], "above-draws"),  # 1.9 of them (2.3 with the population's deviation)
    (-9.0, [-1.0, -2.0], "above-draws"),  # far above, but two draws cannot tell
    (-9.0, [-1.0], "above-draws"),  # one draw: no spread at all
])
def test_check_verdicts_at_their_boundaries(top, randoms, verdict):
    from flashtrace.analysis.check import summarise_check

    check = summarise_check({**CHECK, "before": 0.0, "top": top, "random": randoms})
    assert check.verdict == verdict
    assert (check.drop_top, check.drops_random) == (-top, tuple(-r for r in randoms))
    assert (check.fraction, check.n_deleted, check.randoms) == (0.1, 12, tuple(randoms))
    assert check.drop_random_mean == pytest.approx(-sum(randoms) / len(randoms))
    if len(randoms) == 3:
        assert check.z == pytest.approx(-top - 2.0)  # the draws' drops 1, 2, 3: mean 2, sample deviation 1
    if len(randoms) == 1:
        assert check.z is None


def test_a_check_needs_numbers_where_numbers_belong():
    from flashtrace.analysis.check import valid_check

    assert valid_check(CHECK)
    for bad in ({**CHECK, "fraction": True}, {**CHECK, "n_deleted": True}, {**CHECK, "n_deleted": 12.0},
                {**CHECK, "random": (-0.5,)}, {**CHECK, "random": [-0.5, False]}, {**CHECK, "before": None},
                {**CHECK, "random": [-0.5, float("nan")]}, [CHECK]):
        assert not valid_check(bad), bad


def test_two_sentences_tied_at_the_top_are_both_named():
    two = ["Alpha is one.", "Beta is two."]
    trace = make_trace(two, S, A, [vector(two, S, A, {"P0": .3, "P1": .3, "S0": .4})])
    assert direct_panel(trace, analyse(trace)).caption.endswith(
        f"tied at the top (within 2.0 points): “Alpha is one.” ({pct(.5, 1)}) and “Beta is two.” ({pct(.5, 1)} "
        "of the prompt's attribution).")
    three = make_trace(P, S, A, [vector(P, S, A, {"P1": .3, "P2": .3, "S0": .4})])  # the third sentence unread
    assert "“Beta is two.” (" in direct_panel(three, analyse(three)).caption.split("tied at the top")[1]


def test_the_direct_panel_names_no_top_sentence_when_the_prompt_is_unread():
    trace = unread(make_trace(P, S, A, [vector(P, S, A, {"P0": .5, "S0": .5})]))
    assert direct_panel(trace, analyse(trace)).caption.endswith("from the chat template around them.")


def test_two_pieces_brought_into_the_top_three_are_both_told():
    prompt = [f"Fact {i} here." for i in range(6)]
    raws = [vector(prompt, S, A, {"P0": .3, "P1": .25, "P2": .2, "P3": .05, "P4": .04, "S0": 1.0}),
            vector(prompt, S, A, {"P3": .5, "P4": .45, "S0": .1})]
    facts = analyse(make_trace(prompt, S, A, raws))
    assert swap_words(facts) == ("The hops brought into the top 3: “Fact 3 here.” from 4th to 1st, past “Fact 2 here.”; "
                                 "“Fact 4 here.” from 5th to 3rd, past “Fact 2 here.”.")


def long_question(extra: str):
    facts = [f"Fact {i} says that alpha is one and stays one for a long while, as every reader knows." for i in range(4)]
    prompt = [*facts, "What is alpha?", extra]
    trace = make_trace(prompt, S, A, [vector(prompt, S, A, {"P0": .5, "S0": .5})])
    segments = [s.model_copy(update={"char_start": trace.tokens[s.start].start}) if s.role == "prompt" else s
                for s in trace.segments]  # where its first token starts (the space before a sentence included)
    return trace.model_copy(update={"segments": segments})


def test_step_one_shows_the_sentence_that_asks_not_what_follows_it():
    trace = long_question("Answer briefly.")
    assert len(trace.prompt) > 300 and asked(trace) == "What is alpha?"
    assert asked(trace, "a" * 300) == ""  # 300 characters: shown whole
    assert asked(trace, "a" * 301).startswith("Fact 3 says")  # the last sentence that starts within the question
    # a sentence that starts where the question ends (the tool's instruction) is not part of it
    tail = long_question("Can you think step by step?")
    question = tail.prompt[:tail.prompt.index(" Can you")]
    assert asked(tail) == "Can you think step by step?" and asked(tail, question) == "What is alpha?"


def test_step_one_shows_a_short_question_whole_even_with_the_instruction():
    short = ["Alpha is one and stays one for a long while, as every reader of this text knows well."] * 3
    trace = make_trace(short, S, A, [vector(short, S, A, {"P0": .5, "S0": .5})])
    instructed = trace.model_copy(update={"prompt": trace.prompt + INSTRUCTION_SEPARATOR + REASONING_INSTRUCTION})
    assert len(trace.prompt) <= 300 < len(instructed.prompt)
    panel = story_panels(instructed)[0]
    assert panel.data["question"] == trace.prompt and panel.data["ask"] == ""


def test_top_words_carry_their_tokens_and_share_each_word_once():
    trace = make_trace(P, S, A, [vector(P, S, A, {"P0": .3, "P2": .3, "S0": .4})])
    words = top_words(trace, analyse(trace), 0, 3)
    assert [(w.key, w.text, w.label, w.piece.start, w.piece.end) for w in words] == [("1", "Alpha", "Alpha", 1, 2),
                                                                                     ("2", "is", "is", 2, 3),
                                                                                     ("3", "one", "one", 3, 4)]
    assert [w.share for w in words] == [pytest.approx(.1 / .6)] * 3  # "alpha" and the second "is" are no repeat


def test_subword_tokens_make_one_word_with_their_summed_share():
    from flashtrace.analysis.schema import Trace

    spaced = ["Tom has 1 2 mar bles ."]  # the factory makes one token per word; then the spaces go, as Qwen splits
    data = make_trace(spaced, S, A, [vector(spaced, S, A, {"P0": .6, "S0": .4})]).model_dump()
    for position, text in zip(range(1, 8), ["Tom", " has", " 1", "2", " mar", "bles", "."]):
        assert data["tokens"][position]["role"] == "prompt"
        data["tokens"][position]["text"] = text
    split = Trace.model_validate(data)
    words = {w.text: w for w in analyse(split).top_words(0, 8)}
    assert set(words) == {"Tom", "has", "12", "marbles"}  # "." is no word
    assert words["marbles"].positions == (5, 6) and words["12"].positions == (3, 4)
    assert words["12"].share == pytest.approx(analyse(split).token_share(0, 3) + analyse(split).token_share(0, 4))


def one_word_tokens(hop0: list[float], hop1: list[float]):
    """62 one-word prompt tokens ("w0".."w61", no sentences) with these prompt values at hops 0 and 1; the
    reasoning holds as much as the prompt at hop 0, so hop 1 counts half (ρ0 = 1/2 exactly)."""
    raw0 = [0.0, *hop0, sum(hop0), 0.0, 0.0, 0.0]
    raw1 = [0.0, *hop1, 0.0, 0.0, 0.0, 1.0]
    trace = make_trace([" ".join(f"w{i}" for i in range(62))], ["Step one."], A, [raw0, raw1])
    return analyse(trace.model_copy(update={"segments": None}))


REST = [1 / 64] * 59 + [0.01812499999999989]  # with 4 % and 2 % the shares then sum to exactly 1.0


def test_a_kept_top_within_the_margin_at_either_depth_says_so():
    early = one_word_tokens([0.04, 0.02, *REST], [5.0] + [0.0] * 61)  # "w0" leads "w1" by exactly 2 points at hop 0
    late = one_word_tokens([0.04, 0.0, *REST], [0.0, 0.04] + [0.0] * 60)  # and after hop 1
    assert (early.change.kind, early.change.lead_first) == ("same", MARGIN) and early.change.lead_last > MARGIN
    assert (late.change.kind, late.change.lead_last) == ("same", MARGIN) and late.change.lead_first > MARGIN
    for facts in (early, late):
        assert change_words(facts) == ("The top prompt token is “w0” at every depth, but the next one is within 2.0 "
                                       "points of it at some depth.")


def test_the_gold_bar_shows_the_best_ranked_gold_sentence_at_each_depth():
    from flashtrace.analysis.story import gold_at

    text = " ".join(P)
    gold = [[0, 5], [text.index("What"), text.index("What") + 4]]  # "Alpha" and "What": P0 and P2
    raws = [vector(P, S, A, {"P0": .2, "P1": .1, "P2": .3, "S0": .4}), vector(P, S, A, {"P0": .6, "S0": .1})]
    facts = analyse(make_trace(P, S, A, raws, extra={"gold": gold}))
    assert [(gold_at(facts, k)["piece"].key, gold_at(facts, k)["ranked"]) for k in (0, 1)] == [("P2", "1st"), ("P0", "1st")]


def test_the_three_largest_climbs_are_named_largest_first():
    prompt = [f"Fact {i} here." for i in range(12)]
    raws = [vector(prompt, S, A, {f"P{i}": 0.1 - 0.005 * i for i in range(12)} | {"S0": .5}),
            vector(prompt, S, A, {"P11": .3, "P10": .25, "P9": .2, "P7": .1, "S0": .05})]
    trace = make_trace(prompt, S, A, raws)
    facts = analyse(trace)
    assert [(m.piece, m.rank_first, m.rank_last) for m in facts.climbers()] == [(11, 12, 1), (10, 11, 2), (9, 10, 3),
                                                                                (7, 8, 4)]
    words = moves_words(facts)  # "Fact 7" (8th to 4th) is the smallest climb of the four: left out
    assert words.startswith("What the hops moved: “Fact 11 here.” from 12th to 1st (") and words.count("“") == 3
    assert "Fact 7" not in words and "“Fact 9 here.” from 10th to 3rd" in words
    assert len(story_panels(trace)[1].data["sentences"]) == 3  # the direct panel's top three sentences
