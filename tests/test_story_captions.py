"""The Story's captions and the gallery card's sentence, word for word, on hand-made traces whose numbers are
known (`tests.test_facts`): what the answer reads directly, how far the hops reach, a change or a tie against
the margin, climbs, gold ranks in ordinals, the evidence with its tie note, and the depth table."""

import pytest

from flashtrace.analysis.facts import analyse
from flashtrace.analysis.story import (card_note, change_words, depth_table, direct_panel, evidence_panel,
                                       gold_at, gold_words, hops_panel, moves_words, question_panel, reach_words,
                                       story_panels, swap_words, top_words)
from flashtrace.analysis.text import ordinal, pct, points, quote
from flashtrace.engine.inputs.sequence import INSTRUCTION_SEPARATOR, REASONING_INSTRUCTION

from .test_facts import CUM, HOP0, HOP1, RHO0, A, P, Q, S, margin_trace, swap_trace, two_hops
from .test_story import CHECK
from .trace_factory import make_trace, vector
from .trace_factory import unread as unread_trace

OF_PROMPT = "of the prompt's attribution"
REACHED1 = .7 / 1.1 + RHO0 * .65 / .8  # on the input after hop 1 (tests.test_facts)
FINAL = [v / sum(CUM) for v in CUM]


def with_settings(trace, **changes):
    return trace.model_copy(update={"settings": trace.settings.model_copy(update=changes)})


def test_step_one_names_the_answer_and_the_reasoning():
    trace = two_hops()
    panel = question_panel(trace, analyse(trace))
    assert panel.caption == ("The model (hand-made) was asked the question below and answered “Answer: one”. Before "
                             "answering it reasoned in 2 steps. The next panels show which parts of the question that "
                             "answer rests on.")
    assert panel.data == {"question": trace.prompt, "ask": "", "reasoning": "Step one reads alpha.\nStep two checks.",
                          "answer": "Answer: one"}
    bare = trace.model_copy(update={"segments": None})
    assert "Before answering it reasoned. The next" in question_panel(bare, analyse(bare)).caption
    direct = make_trace(P, [], A, [vector(P, [], A, {"P0": .5, "A": .5})])
    assert "It answered without reasoning first. The next" in question_panel(direct, analyse(direct)).caption


def test_step_one_leaves_the_tools_instruction_out_of_the_question():
    trace = two_hops()
    asked = trace.model_copy(update={"prompt": trace.prompt + INSTRUCTION_SEPARATOR + REASONING_INSTRUCTION})
    panel = question_panel(asked, analyse(asked))
    assert panel.data["question"] == trace.prompt and panel.caption.startswith("The model (hand-made) was asked")
    assert panel.caption.endswith(" (The tool asked for step-by-step reasoning; that instruction is not counted as "
                                  "evidence.)")
    assert "instruction" not in question_panel(trace, analyse(trace)).caption


def test_step_two_splits_hop_0_and_names_what_it_reads_most():
    trace = two_hops()
    panel = direct_panel(trace, analyse(trace))
    assert panel.caption == (
        f"Read directly (hop 0), the answer draws {pct(.6 / 1.1)} of its attribution from the prompt, "
        f"{pct(.4 / 1.1)} from the model's own reasoning and answer text, and {pct(.1 / 1.1)} from the chat template "
        "around them. The prompt words it reads most: “What”, “is”, “alpha”, “one”, “Beta”. The prompt sentence it "
        f"reads most: “What is alpha ?” ({pct(.5)} {OF_PROMPT}).")
    assert [(r.key, r.share) for r in panel.data["sentences"]] == [("P2", pytest.approx(.5)), ("P0", pytest.approx(1 / 3)),
                                                                   ("P1", pytest.approx(1 / 6))]
    assert [r.key for r in panel.data["tokens"]] == ["7", "8", "9", "3", "4"] and panel.data["gold"] is None
    generation = make_trace(P, S, A, [vector(P, S, A, HOP0)], hop0="generation")
    assert (" (In this trace hop 0 was taken over the whole generated text, reasoning and answer, not the answer "
            "alone.) The prompt sentence it reads most: ") in direct_panel(generation, analyse(generation)).caption


def test_step_two_calls_two_sentences_within_the_margin_a_tie():
    trace = make_trace(P, S, A, [vector(P, S, A, {"P0": .1, "P1": .3, "P2": .3, "S0": .3})])
    caption = direct_panel(trace, analyse(trace)).caption
    assert caption.endswith(" Two prompt sentences are tied at the top (within 2.0 points): “Beta is two.” "
                            f"({pct(3 / 7, 1)}) and “What is alpha ?” ({pct(3 / 7, 1)} {OF_PROMPT}).")


def test_reach_is_said_per_depth_and_split_between_the_prompt_and_the_chat_template():
    # the chat template holds .1 of hop 0's 1.1 and nothing of hop 1's: the rest of what reached the input is prompt
    assert reach_words(analyse(two_hops())) == (
        f"Read directly, {pct(.7 / 1.1)} of the answer's attribution is on the input (the prompt and the chat "
        f"template); after 1 hop {pct(REACHED1)} has reached it. Of that, {pct(REACHED1 - .1 / 1.1)} is on the "
        f"prompt and {pct(.1 / 1.1)} on the chat template around it.")
    one = make_trace(P, S, A, [vector(P, S, A, HOP0)])
    assert reach_words(analyse(one)) == (f"Read directly (hop 0), {pct(.7 / 1.1)} of the answer's attribution is on "
                                         f"the input (the prompt and chat template). Of that, {pct(.6 / 1.1)} is on "
                                         f"the prompt and {pct(.1 / 1.1)} on the chat template around it.")


def test_a_change_is_told_with_both_shares_at_both_depths():
    facts = analyse(make_trace(Q, S, A, [vector(Q, S, A, HOP0), vector(Q, S, A, HOP1)]))
    d0 = [.2 / .6, .1 / .6, .3 / .6]
    assert change_words(facts) == (
        f"The hops changed the top prompt sentence from “Gamma is alpha .” ({pct(d0[2], 1)} at hop 0, against "
        f"{pct(d0[0], 1)}) to “Alpha is one.” ({pct(FINAL[0], 1)} after 1 hop, against {pct(FINAL[2], 1)}): a lead "
        "of more than 2.0 points at both depths.")
    assert card_note(facts) == ("Hops change the evidence: the top prompt sentence moves from “Gamma is alpha .” to "
                                "“Alpha is one.”, beyond the 2-point margin.")


def test_a_tie_says_at_which_depth_the_two_are_close():
    late = make_trace(Q, S, A, [vector(Q, S, A, HOP0), vector(Q, S, A, {"P0": .11 / RHO0, "S0": .1})])
    facts = analyse(late)
    c = facts.change
    assert c.kind == "tie"
    d0, d1 = facts.depths
    assert change_words(facts) == (
        "The hops did not clearly change the top prompt sentence: “Gamma is alpha .” and “Alpha is one.” are within "
        f"2.0 points of each other after 1 hop ({pct(d0.shares[2], 1)} and {pct(d0.shares[0], 1)} at hop 0; "
        f"{pct(d1.shares[2], 1)} and {pct(d1.shares[0], 1)} after 1 hop).")
    assert card_note(facts) == ("A near tie, not a change: “Gamma is alpha .” and “Alpha is one.” are within 2.0 points "
                                "of each other after 1 hop.")
    early = make_trace(Q, S, A, [vector(Q, S, A, {"P0": .29, "P2": .3, "S0": .4}), vector(Q, S, A, HOP1)])
    facts = analyse(early)
    assert facts.change.kind == "tie" and " of each other at hop 0 (" in change_words(facts)
    assert card_note(facts).endswith(" are within 2.0 points of each other at hop 0.")


def test_a_kept_top_says_by_how_much_it_leads_or_that_the_next_is_close():
    raws = [vector(Q, S, A, {"P0": .5, "P1": .2, "S0": .3}), vector(Q, S, A, {"P0": .2, "P2": .1, "S1": .1})]
    facts = analyse(make_trace(Q, S, A, raws))
    c = facts.change
    assert change_words(facts) == (f"The top prompt sentence is “Alpha is one.” at every depth (leading the next by "
                                   f"{points(c.lead_first)} at hop 0 and {points(c.lead_last)} after 1 hop).")
    raws[1] = vector(Q, S, A, {"P1": .95, "S1": .1})  # "Beta is two." closes in, within the margin
    close = analyse(make_trace(Q, S, A, raws))
    assert close.change.kind == "same" and close.change.lead_last <= .02
    assert change_words(close) == ("The top prompt sentence is “Alpha is one.” at every depth, but the next one is "
                                   "within 2.0 points of it at some depth.")
    assert change_words(analyse(make_trace(Q, S, A, raws[:1]))) == ""


def test_a_swap_into_the_top_three_is_told_and_carded():
    facts = analyse(swap_trace(.5))
    assert swap_words(facts) == "The hops brought into the top 3: “Fact 4 here.” from 5th to 3rd, past “Fact 2 here.”."
    assert card_note(facts) == "Hops change the evidence: “Fact 4 here.” climbs from 5th to 3rd, past “Fact 2 here.”."
    assert swap_words(analyse(swap_trace(.385))) == ""


def climb_trace(gold: bool = False):
    prompt = [f"Fact {i} is here." for i in range(8)] + ["What is it?"]
    values0 = {f"P{i}": 0.1 - 0.01 * i for i in range(8)} | {"P8": 0.5, "S0": 0.5}
    raws = [vector(prompt, S, A, values0), vector(prompt, S, A, {"P7": .4, "P6": .3, "P8": .1, "S0": .05})]
    text = " ".join(prompt)
    extra = {"gold": [[text.index("Fact 6"), text.index("Fact 6") + 6]]} if gold else None
    return make_trace(prompt, S, A, raws, extra=extra)


def test_climbs_are_named_with_ranks_and_shares_known_evidence_first():
    facts = analyse(climb_trace())
    moves = {m.piece: m for m in facts.moves}
    m7, m6 = moves[7], moves[6]
    assert (m7.rank_first, m7.rank_last, m6.rank_first, m6.rank_last) == (9, 2, 8, 3)
    assert moves_words(facts) == (
        f"What the hops moved: “Fact 7 is here.” from 9th to 2nd ({pct(m7.share_first, 1)} → {pct(m7.share_last, 1)}); "
        f"“Fact 6 is here.” from 8th to 3rd ({pct(m6.share_first, 1)} → {pct(m6.share_last, 1)}).")
    gold = analyse(climb_trace(gold=True))
    assert moves_words(gold).startswith("What the hops moved: “Fact 6 is here.” (known evidence) from 8th to 3rd "
                                        f"({pct(m6.share_first, 1)} → {pct(m6.share_last, 1)}); “Fact 7 is here.”")
    assert moves_words(gold, n=1).count("“") == 1
    assert moves_words(analyse(two_hops())) == ""


def test_ordinals_read_as_english():
    assert [ordinal(n) for n in (1, 2, 3, 4, 10, 11, 12, 13, 20, 21, 22, 23, 101, 111, 112, 113, 121)] == [
        "1st", "2nd", "3rd", "4th", "10th", "11th", "12th", "13th", "20th", "21st", "22nd", "23rd", "101st", "111th",
        "112th", "113th", "121st"]
    assert ordinal(None) == "unranked"


def test_gold_is_placed_at_both_depths_in_words_and_on_the_cards():
    text = " ".join(P)
    trace = two_hops(extra={"gold": [[text.index("Beta"), text.index("Beta") + 7]]})
    facts = analyse(trace)
    g = facts.gold
    assert gold_words(facts) == (
        f"The known evidence (gold, 2 tokens) holds {pct(g.share[0], 1)} {OF_PROMPT} at hop 0 and {pct(g.share[1], 1)} "
        "after 1 hop; its best sentence ranks 3rd at hop 0 and 3rd after 1 hop (2nd and 2nd among the context "
        "sentences, the question apart); its best token ranks 8th among the prompt's tokens.")
    assert card_note(facts).endswith(" The known evidence's best sentence ranks 2nd at hop 0 and 2nd after the hops "
                                     "among the context sentences.")
    at = gold_at(facts, 1)
    assert (at["piece"].key, at["rank"], at["ranked"], at["piece"].share) == ("P1", 3, "3rd", pytest.approx(FINAL[1]))
    assert gold_at(analyse(two_hops()), 0) is None and gold_words(analyse(two_hops())) == ""


def test_the_hops_panel_says_when_the_hops_stopped_or_never_ran():
    trace = two_hops()
    facts = analyse(trace)
    assert hops_panel(trace, facts).caption == (reach_words(facts) + " Each hop follows the share left on the "
                                                "reasoning back to the words it read. " + change_words(facts))
    stopped = with_settings(trace, hops=2)
    assert hops_panel(stopped, analyse(stopped)).caption.startswith(
        reach_words(analyse(stopped)) + " Each hop follows the share left on the reasoning back to the words it read. "
        "(The hops stopped after 1: nothing was left on the reasoning.) The top context sentence")
    none = make_trace(P, S, A, [vector(P, S, A, HOP0)])
    panel = hops_panel(none, analyse(none))
    assert (panel.key, panel.title) == ("hops", "How the reasoning passes it on")
    assert panel.caption == (f"This trace was made without hops: the {pct(RHO0)} of the answer's attribution that sits "
                             "on the reasoning was not followed back to the prompt. Trace it again with hops to see "
                             "where it goes.")
    assert [r.key for r in panel.data["top"]] == ["P2"] and panel.data["reached"] == [pytest.approx(.7 / 1.1)]
    assert panel.data["added"] == [pytest.approx(.7 / 1.1)]
    two = hops_panel(trace, analyse(trace))
    assert (two.key, two.title) == ("hops", "How the reasoning passes it on")
    assert two.data["added"] == list(analyse(trace).input_share) and [r.key for r in two.data["top"]] == ["P2", "P0"]
    reasoning = make_trace(P, S, A, [vector(P, S, A, HOP0), vector(P, S, A, HOP1)], recursive="reasoning")
    assert (" Each hop follows the share left on the reasoning back to the words it read. (In this trace the hops "
            "follow the reasoning only; the answer's attribution on its own text stays.) The top context sentence"
            in hops_panel(reasoning, analyse(reasoning)).caption)


def test_the_evidence_panel_names_its_sentences_and_a_final_tie():
    trace = two_hops()
    facts = analyse(trace)
    words = "".join(f"“{w.text.strip()}”, " for w in top_words(trace, facts, 1, 8))[:-2]
    assert evidence_panel(trace, facts).caption == (
        f"After all hops, the answer rests most on the 2 context sentences below, {pct(FINAL[0] + FINAL[1])} "
        f"{OF_PROMPT} between them; the first is “Alpha is one.” ({pct(FINAL[0])}). The question (“What is alpha ?”) "
        f"holds {pct(FINAL[2])} {OF_PROMPT}: it says what was asked, not what supplied the answer. Strongest words: "
        f"{words}. The darker a word's background, the more the answer rests on it.")
    one = make_trace(P, S, A, [vector(P, S, A, {"P1": .5, "S0": .5})])
    assert evidence_panel(one, analyse(one)).caption.startswith(
        f"After all hops, the answer rests most on one context sentence, “Beta is two.”, which holds {pct(1.0)} "
        f"{OF_PROMPT}.")
    alone = make_trace(["What is alpha ?"], S, A, [vector(["What is alpha ?"], S, A, {"P0": .5, "S0": .5})])
    assert evidence_panel(alone, analyse(alone)).caption.startswith(  # a prompt that is only a question
        f"After all hops, the answer rests most on one prompt sentence, “What is alpha ?”, which holds {pct(1.0)}")
    tie = make_trace(P, S, A, [vector(P, S, A, {"P0": .3, "P1": .295, "S0": .4})])
    lead = analyse(tie).final.lead()
    assert f" It leads the next by {points(lead)} only: within the 2-point margin, so call these two a tie." in \
        evidence_panel(tie, analyse(tie)).caption
    assert "tie" not in evidence_panel(trace, facts).caption
    data = evidence_panel(trace, facts).data
    assert [r.key for r in data["sentences"]] == ["P0", "P1"] and data["scores"] == trace.scores.prompt
    assert [r.key for r in data["asked"]] == ["P2"] and data["asked"][0].share == pytest.approx(FINAL[2])
    assert [r.text for r in data["tokens"]] == [w.text for w in facts.top_words(-1, 8)] and data["gold"] is None
    assert len({r.text.casefold() for r in data["tokens"]}) == len(data["tokens"])  # each word once
    many = climb_trace()
    assert len(evidence_panel(many, analyse(many)).data["sentences"]) == 3


def test_cards_for_a_kept_top_and_for_no_hops():
    kept = make_trace(P, S, A, [vector(P, S, A, {"P0": .5, "P1": .2, "S0": .3}), vector(P, S, A, {"P0": .2, "S1": .1})])
    assert card_note(analyse(kept)) == (f"Hops change little here: the top context sentence stays “Alpha is one.” and the top-10 "
                                        f"prompt words at hop 0 and after 1 hop overlap {pct(1.0)}.")
    assert card_note(analyse(kept), k=2) .endswith(f"after 1 hop overlap {pct(analyse(kept).overlap(2))}.")
    prompt = [f"Fact {i} is here." for i in range(12)]
    raws = [vector(prompt, S, A, {f"P{i}": 0.1 - 0.005 * i for i in range(12)} | {"S0": .5}),
            vector(prompt, S, A, {"P9": .08, "S0": .05})]  # "Fact 9" climbs from 10th to 5th, no swap
    climbs = analyse(make_trace(prompt, S, A, raws))
    assert climbs.change.kind == "same" and not climbs.swaps
    assert card_note(climbs) == "Hops keep the top prompt sentence “Fact 0 is here.” and move “Fact 9 is here.” from 10th to 5th."
    assert card_note(analyse(make_trace(P, S, A, [vector(P, S, A, HOP0)]))) == "Traced without hops."


def test_the_depth_table_names_its_denominators_unless_compact():
    facts = analyse(two_hops())
    assert depth_table(facts) == [
        {"depth": "directly (hop 0)", "reached the input": f"{pct(.7 / 1.1, 1)} of the answer's attribution",
         "top prompt sentence": "What is alpha ?", "its share": f"{pct(.5, 1)} {OF_PROMPT}"},
        {"depth": "after 1 hop", "reached the input": f"{pct(REACHED1, 1)} of the answer's attribution",
         "top prompt sentence": "Alpha is one.", "its share": f"{pct(FINAL[0], 1)} {OF_PROMPT}"}]
    assert depth_table(facts, compact=True)[1] == {"depth": "after 1 hop", "reached the input": pct(REACHED1, 1),
                                                   "top prompt sentence": "Alpha is one.", "its share": pct(FINAL[0], 1)}


def test_a_live_check_takes_the_place_of_the_stored_one():
    trace = two_hops(extra={"faithfulness": dict(CHECK)})
    stored, live = story_panels(trace)[4], story_panels(trace, {**CHECK, "top": -1.5})[4]
    assert "from -0.50 to -6.25, a drop of 5.75" in stored.caption
    assert "from -0.50 to -1.50, a drop of 1.00" in live.caption and live.data["check"].drop_top == 1.0


def test_long_texts_are_shortened_to_each_sentences_width():
    prompt = [f"{'x' * 40}{i} is a long sentence about the number {i}, with more words after it." for i in range(12)]
    answer = "Answer: " + "y" * 130
    raws = [vector(prompt, S, answer, {f"P{i}": 0.1 - 0.005 * i for i in range(12)} | {"S0": .5}),
            vector(prompt, S, answer, {"P9": .2, "P11": .08, "S0": .05})]
    trace = make_trace(prompt, S, answer, raws)
    facts = analyse(trace)
    assert facts.change.kind == "changed" and [(w.entered, w.left) for w in facts.swaps] == [(9, 2)]
    assert all(len(p) > 70 for p in prompt) and quote(prompt[0], 40) != quote(prompt[0], 41)
    assert card_note(facts) == (f"Hops change the evidence: the top prompt sentence moves from {quote(prompt[0], 40)} "
                                f"to {quote(prompt[9], 40)}, beyond the 2-point margin.")
    assert swap_words(facts) == (f"The hops brought into the top 3: {quote(prompt[9], 50)} from 10th to 1st, past "
                                 f"{quote(prompt[2], 40)}.")
    assert moves_words(facts).startswith(f"What the hops moved: {quote(prompt[9], 50)} from 10th to 1st")
    assert f" and answered {quote(answer, 120)}. " in question_panel(trace, facts).caption
    target = trace.model_copy(update={"spans": trace.spans.model_copy(update={"answer": None})})  # not the answer
    assert (f"wrote a response; the part explained here (the target) is {quote(answer, 120)}. "
            in question_panel(target, analyse(target)).caption)
    direct = direct_panel(trace, facts).caption
    assert f"The prompt words it reads most: {quote('x' * 40 + '0', 30)}, “is”, “a”, “long”, “sentence”." in direct
    assert f"at the top (within 2.0 points): {quote(prompt[0])} (" in direct
    assert f"changed the top prompt sentence from {quote(prompt[0])} (" in change_words(facts)


def test_a_trace_without_prompt_attribution_says_so_everywhere():
    unread = unread_trace(two_hops())
    facts = analyse(unread)
    assert card_note(facts) == "No prompt attribution to compare." and change_words(facts) == ""
    empty = evidence_panel(unread, facts)
    assert (empty.key, empty.title) == ("evidence", "The evidence in the prompt")
    assert empty.caption == "No prompt token received any attribution in this trace."
    assert empty.data == {"sentences": [], "asked": empty.data["asked"], "tokens": [], "scores": unread.scores.prompt,
                          "gold": None}
    assert [r.key for r in empty.data["asked"]] == ["P2"]
    assert hops_panel(unread, facts).data["top"] == [None, None]
    rows = depth_table(facts)
    assert [(r["top prompt sentence"], r["its share"]) for r in rows] == [("(none)", "")] * 2
    assert rows[1]["reached the input"] == f"{pct(REACHED1, 1)} of the answer's attribution"
    assert [(r["top prompt sentence"], r["its share"]) for r in depth_table(facts, compact=True)] == [("(none)", "")] * 2


def test_the_card_places_the_gold_at_hop_0_and_after_the_last_hop():
    raws = [vector(Q, S, A, {"P0": .3, "P1": .1, "P2": .2, "S0": .4}), vector(Q, S, A, {"P1": .3, "S0": .5}),
            vector(Q, S, A, {"P1": .5, "S0": .1})]
    text = " ".join(Q)
    gold = {"gold": [[text.index("Beta"), text.index("Beta") + 4]]}
    facts = analyse(make_trace(Q, S, A, raws, extra=gold))
    assert facts.gold.piece_rank == (3, 2, 1)
    assert card_note(facts) == ("Hops change the evidence: the top prompt sentence moves from “Alpha is one.” to "
                                "“Beta is two.”, beyond the 2-point margin. The known evidence's best sentence ranks "
                                "3rd at hop 0 and 1st after the hops.")
    assert card_note(analyse(make_trace(Q, S, A, raws[:1], extra=gold))) == "Traced without hops."


def long_texts(trace):
    """`trace` with each prompt sentence's text 90 characters long (the numbers unchanged)."""
    segments = [s.model_copy(update={"text": f"{s.id}:" + "x" * 88}) if s.role == "prompt" else s
                for s in trace.segments]
    return trace.model_copy(update={"segments": segments})


def cards():
    prompt = [f"Fact {i} is here." for i in range(12)]
    climb = [vector(prompt, S, A, {f"P{i}": 0.1 - 0.005 * i for i in range(12)} | {"S0": .5}),
             vector(prompt, S, A, {"P9": .08, "S0": .05})]
    kept = [vector(Q, S, A, {"P0": .5, "P1": .2, "S0": .3}), vector(Q, S, A, {"P0": .2, "S1": .1})]
    tie = [vector(Q, S, A, HOP0), vector(Q, S, A, {"P0": .11 / RHO0, "S0": .1})]
    return {"swap": swap_trace(.5), "tie": make_trace(Q, S, A, tie), "climb": make_trace(prompt, S, A, climb),
            "little": make_trace(Q, S, A, kept), "change": make_trace(Q, S, A, [vector(Q, S, A, HOP0), vector(Q, S, A, HOP1)])}


@pytest.mark.parametrize("case", ["swap", "tie", "climb", "little", "change"])
def test_a_card_quotes_each_sentence_in_at_most_40_characters(case):
    trace = cards()[case]
    short, long = card_note(analyse(trace)), card_note(analyse(long_texts(trace)))
    quoted = [q.split("”")[0] for q in long.split("“")[1:]]
    assert len(quoted) == short.count("“") >= 1
    assert all(len(q) == 40 and " … " in q for q in quoted), quoted


def test_a_lead_of_exactly_the_margin_is_called_a_tie_in_every_caption():
    trace = margin_trace(hops=0)
    facts = analyse(trace)
    assert direct_panel(trace, facts).caption.endswith(" Two prompt tokens are tied at the top (within 2.0 points): "
                                                       f"“w0” ({pct(.04, 1)}) and “w1” ({pct(.02, 1)} {OF_PROMPT}).")
    assert " It leads the next by 2.0 points only: within the 2-point margin, so call these two a tie." in \
        evidence_panel(trace, facts).caption
    facts = analyse(margin_trace(hops=1))
    assert card_note(facts) == "A near tie, not a change: “w0” and “w1” are within 2.0 points of each other at hop 0."
    assert change_words(facts).startswith("The hops did not clearly change the top prompt token: “w0” and “w1” are "
                                          f"within 2.0 points of each other at hop 0 ({pct(.04, 1)} and {pct(.02, 1)} "
                                          "at hop 0; ")


def three_depths(gold: bool = True):
    raws = [vector(P, S, A, {"P0": .3, "P1": .1, "P2": .2, "S0": .4}), vector(P, S, A, {"P1": .3, "S0": .5}),
            vector(P, S, A, {"P1": .5, "S0": .1})]
    text = " ".join(P)
    return make_trace(P, S, A, raws, extra={"gold": [[text.index("Beta"), text.index("Beta") + 4]]} if gold else None)


def test_gold_words_at_hop_0_only_or_at_hop_0_and_the_last_depth():
    facts = analyse(three_depths())
    g = facts.gold
    assert gold_words(facts) == (
        f"The known evidence (gold, 1 token) holds {pct(g.share[0], 1)} {OF_PROMPT} at hop 0 and {pct(g.share[2], 1)} "
        f"after 2 hops; its best sentence ranks 3rd at hop 0 and 1st after 2 hops (2nd and 1st among the context "
        f"sentences, the question apart); its best token ranks {ordinal(g.token_rank[2])} among the prompt's tokens.")
    one = analyse(make_trace(P, S, A, [vector(P, S, A, {"P0": .3, "P1": .1, "P2": .2, "S0": .4})],
                             extra={"gold": [[13, 17]]}))
    assert gold_words(one) == (f"The known evidence (gold, 1 token) holds {pct(one.gold.share[0], 1)} {OF_PROMPT} at "
                               "hop 0; its best sentence ranks 3rd at hop 0 (2nd among the context sentences, the "
                               "question apart); its best token ranks 8th among the prompt's tokens.")


def test_gold_outside_every_sentence_has_no_sentence_rank():
    trace = two_hops(extra={"gold": [[13, 17]]})  # "Beta", whose sentence is then left out
    partial = trace.model_copy(update={"segments": [s for s in trace.segments if s.id != "P1"]})
    facts = analyse(partial)
    assert facts.gold.positions == (4,) and facts.gold.piece_rank == (None, None)
    words = gold_words(facts)
    assert "sentence ranks" not in words and words.endswith(" after 1 hop; its best token ranks "
                                                            f"{ordinal(facts.gold.token_rank[1])} among the prompt's tokens.")
    assert "known evidence" not in card_note(facts)


def test_reach_over_three_depths_lists_each():
    facts = analyse(three_depths(gold=False))
    r = [d.reached for d in facts.depths]
    d2 = facts.depths[2]
    assert f"to “Beta is two.” ({pct(d2.shares[1], 1)} after 2 hops, against {pct(d2.shares[0], 1)})" in change_words(facts)
    assert f"; after 1 hop {pct(r[1])}, after 2 hops {pct(r[2])} has reached it. Of that, " in reach_words(facts)


def test_the_direct_and_evidence_panels_place_the_gold():
    trace = three_depths()
    facts = analyse(trace)
    assert [gold_at(facts, k)["rank"] for k in range(3)] == [3, 2, 1]
    assert direct_panel(trace, facts).data["gold"]["rank"] == 3 and evidence_panel(trace, facts).data["gold"]["rank"] == 1
    assert evidence_panel(trace, facts).caption.endswith(". " + gold_words(facts) + " Gold words are underlined.")
