"""The Story page's analysis: panels, captions in words, and the stored faithfulness check (no model)."""

import math

import pytest

from flashtrace.store.gallery import list_gallery, load_gallery_trace
from flashtrace.analysis.story import (STEPS, check_panel, counted, evidence_panel, pct, prompt_pieces, quote, reached,
                              role_shares, stored_check, story_panels)

CHECK = {"version": 1, "fraction": 0.1, "n_prompt": 120, "n_deleted": 12, "before": -0.5, "top": -6.25,
         "random": [-0.75, -1.0, -0.5], "random_mean": -0.75, "seed": 0, "model": "m"}


@pytest.fixture(scope="module", params=[it.name for it in list_gallery()])
def trace(request):
    return load_gallery_trace(request.param)


def test_every_gallery_trace_tells_five_panels(trace):
    panels = story_panels(trace)
    assert [p.key for p in panels] == list(STEPS)
    assert all(p.caption and p.title for p in panels)
    question, direct, hops, evidence, check = panels
    assert question.data["question"] == trace.prompt
    lo, hi = trace.settings.target
    assert question.data["answer"] == "".join(t.text for t in trace.tokens[lo:hi]).strip()
    assert math.isclose(sum(direct.data["shares"].values()), 1.0, abs_tol=1e-9)
    assert pct(direct.data["shares"]["prompt"]) in direct.caption


def test_reached_is_one_minus_rho_and_grows_with_hops(trace):
    r = reached(trace)
    assert r == [1 - h.rho for h in trace.hops]
    assert all(b >= a - 1e-12 for a, b in zip(r, r[1:]))
    hops = story_panels(trace)[2]
    assert f"after {len(r) - 1} hops {pct(r[-1])}" in hops.caption
    assert math.isclose(sum(hops.data["added"]), r[-1], abs_tol=1e-9)


def test_direct_shares_are_hop_zero_mass_by_role(trace):
    raw = trace.hops[0].raw
    total = sum(raw)
    prompt = sum(v for t, v in zip(trace.tokens, raw) if t.role == "prompt") / total
    assert role_shares(trace, raw)["prompt"] == pytest.approx(prompt)
    # hop 0's input share (prompt + template) is what the hops panel starts from
    shares = role_shares(trace, raw)
    assert shares["prompt"] + shares["template"] == pytest.approx(reached(trace)[0], abs=1e-4)


def test_evidence_pieces_are_the_top_prompt_sentences(trace):
    pieces = prompt_pieces(trace, trace.scores.prompt, 3)
    sums = sorted(((sum(trace.scores.prompt[s.start:s.end]), s.id) for s in trace.segments if s.role == "prompt"),
                  reverse=True)
    assert [p.key for p in pieces] == [i for _v, i in sums[:3]]
    assert pieces[0].share == pytest.approx(sums[0][0] / sum(trace.scores.prompt[i] for i in trace.positions("prompt")))
    assert quote(pieces[0].text, 90) in story_panels(trace)[3].caption


def test_counts_read_in_the_right_number():
    assert [counted(0, "hop"), counted(1, "hop"), counted(3, "step"), counted(2, "query", "queries")] == [
        "0 hops", "1 hop", "3 steps", "2 queries"]


def test_a_single_evidence_sentence_is_named_in_the_singular():
    trace = load_gallery_trace("arithmetic")
    prompt = [s for s in trace.segments if s.role == "prompt"]
    whole = prompt[0].model_copy(update={"end": prompt[-1].end, "text": "".join(s.text for s in prompt)})
    one = trace.model_copy(update={"segments": [s for s in trace.segments if s.role != "prompt"] + [whole]})
    caption = evidence_panel(one).caption
    assert caption.startswith("After all hops, the answer rests most on one prompt sentence, “")
    assert "sentence(s)" not in caption and "the first is" not in caption
    assert "prompt sentences below" in evidence_panel(trace).caption


def test_check_panel_says_plainly_when_not_precomputed():
    trace = load_gallery_trace("free-form").model_copy(deep=True)
    trace.extra.pop("faithfulness", None)
    panel = check_panel(trace)
    assert panel.data["result"] is None and "not precomputed for this trace" in panel.caption


def test_stored_check_is_read_and_malformed_ones_are_ignored():
    trace = load_gallery_trace("free-form").model_copy(deep=True)
    trace.extra["faithfulness"] = dict(CHECK)
    assert stored_check(trace) == CHECK
    panel = check_panel(trace)
    assert "from -0.50 to -6.25" in panel.caption and "-0.75 on average (3 draws)" in panel.caption
    assert "The evidence matters" in panel.caption
    for bad in ("x", {**CHECK, "top": "NaN"}, {**CHECK, "random": []}, {**CHECK, "before": float("inf")},
                {k: v for k, v in CHECK.items() if k != "n_deleted"}):
        trace.extra["faithfulness"] = bad
        assert stored_check(trace) is None


def test_a_trace_without_hops_says_so():
    trace = load_gallery_trace("free-form")
    zero = trace.model_copy(update={"hops": trace.hops[:1]})
    assert "without hops" in story_panels(zero)[2].caption


def test_caption_quotes_are_short_and_plain():
    assert quote("a\n  b   c") == "“a b c”"
    assert quote("x" * 200, 20).endswith("…”") and len(quote("x" * 200, 20)) == 22
    assert pct(0.784) == "78\u00a0%" and pct(0.001) == "<1\u00a0%" and pct(0) == "0\u00a0%"  # never split by a line break


def test_captions_name_a_target_that_is_not_the_answer_and_a_generation_hop0():
    trace = load_gallery_trace("free-form")
    assert "answered “" in story_panels(trace)[0].caption
    lo, hi = trace.spans.reasoning
    other = trace.model_copy(update={"settings": trace.settings.model_copy(update={"target": (lo, hi),
                                                                                    "hop0": "generation"})})
    question, direct = story_panels(other)[:2]
    assert "the part explained here (the target)" in question.caption
    assert "hop 0 was taken over the whole generated text" in direct.caption


@pytest.mark.parametrize("top, random, says", [(-6.25, -0.75, "The evidence matters"),
                                               (-0.9, -0.8, "only slightly more"),
                                               (-0.7, -0.9, "no more than removing random"),
                                               (-0.4, -0.3, "did not lower")])  # both deletions raised it
def test_check_verdict_follows_the_drops(top, random, says):
    trace = load_gallery_trace("free-form").model_copy(deep=True)
    trace.extra["faithfulness"] = {**CHECK, "before": -0.5, "top": top, "random": [random], "random_mean": random}
    caption = check_panel(trace).caption
    assert says in caption
    if says != "The evidence matters":
        assert "matters" not in caption
