"""Segmentation: exact tiling on every family's tokenizer, the splitting rules, user boundaries."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flashtrace.engine.inputs import build_sequence
from flashtrace.engine.models.loading import default_tokenizer
from flashtrace.analysis.segments import (FirstMatch, LineSplitter, SentenceSplitter, StepSplitter, WholeSplitter,
                                          segment_at, segment_sequence)

TEXTS = [
    ("Ann has 3 red balls. Ben has 4 blue balls. How many balls do they have together?",
     "Ann has 3 balls.\nBen has 4 balls.\n3 + 4 = 7.\nAnswer: 7 balls"),
    ("  Ünïcödé prompt: café 東京 and   spaces\n\nnew line 🙂. Ok?",
     "  Think: 東京 is a city. 🙂 So yes.\nAnswer: Tokyo"),
    ("\nLeading newline.\n", "<think>\n1. add them\n2. check 3.5 + 1\n</think>\nThe answer is \\boxed{4.5}."),
    ("x", "so \\boxed{12} it is"),
    ("Question?", "Paris."),
]


def assert_tiles(sequence, segments):
    n = len(sequence)
    assert segments[0].start == 0 and segments[-1].end == n
    for a, b in zip(segments, segments[1:]):
        assert a.end == b.start and a.start < a.end  # no gaps, no overlaps, none empty
    assert [s.order for s in segments] == list(range(len(segments)))
    assert len({s.id for s in segments}) == len(segments)
    for seg in segments:
        roles = {t.role for t in sequence.tokens[seg.start:seg.end]}
        assert roles == {seg.role}  # never mixes template, prompt, reasoning and answer
        source = {"prompt": sequence.prompt, "reasoning": sequence.response, "answer": sequence.response}.get(seg.role)
        if source is not None:
            toks = sequence.tokens[seg.start:seg.end]
            assert seg.text == source[min(t.start for t in toks):max(t.end for t in toks)]
            assert seg.text == source[seg.char_start:seg.char_end]
    assert sum(s.role == "answer" for s in segments) == (1 if sequence.token_range("answer") else 0)


@pytest.mark.parametrize("chat", [True, False])
@pytest.mark.parametrize("prompt, response", TEXTS)
def test_segments_tile_every_family(tiny, prompt, response, chat):
    seq = build_sequence(tiny.tokenizer, prompt, response, chat_template=chat)
    segments = segment_sequence(seq)
    assert_tiles(seq, segments)
    for seg in segments:
        for pos in (seg.start, seg.end - 1):
            assert segment_at(segments, pos) == seg


@pytest.mark.slow
@pytest.mark.parametrize("prompt, response", TEXTS)
def test_segments_tile_smollm(smollm, prompt, response):
    seq = build_sequence(smollm.tokenizer, prompt, response)
    assert_tiles(seq, segment_sequence(seq))


@pytest.fixture(scope="module")
def tok():
    return default_tokenizer()


_PIECES = ["é", "東京", "🙂", "  ", "\n\n", "1. ", "- ", "Step 2: ", "Answer: ", "\\boxed{", "}", "<think>",
           "</think>", ". "]
_ALPHABET = st.sampled_from(list("ab xyz.,!?\n\t-*1234") + _PIECES)
_TEXT = st.lists(_ALPHABET, max_size=40).map("".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prompt=_TEXT.filter(str.strip), response=_TEXT.filter(str.strip), chat=st.booleans())
def test_segments_tile_random_text(tok, prompt, response, chat):
    seq = build_sequence(tok, prompt, response, chat_template=chat)
    assert_tiles(seq, segment_sequence(seq))


def _pieces(splitter, text):
    starts = splitter.starts(text, 0, len(text))
    return None if starts is None else [text[a:b].strip() for a, b in zip(starts, starts[1:] + [len(text)])]


def test_sentence_splitter():
    text = "Ann has 3.5 kg. Ben has 4! Why?\nNew line here. 東京です。次"
    assert _pieces(SentenceSplitter(), text) == ["Ann has 3.5 kg.", "Ben has 4!", "Why?", "New line here.",
                                                 "東京です。", "次"]


def test_step_splitter_numbered_bulleted_and_answer_lines():
    text = "Plan first.\n1. add 3 and 4\n   carry on\n2) double it\nStep 3: done\n- a bullet\nAnswer: 14"
    assert _pieces(StepSplitter(), text) == ["Plan first.", "1. add 3 and 4\n   carry on", "2) double it",
                                             "Step 3: done", "- a bullet", "Answer: 14"]
    assert StepSplitter().starts("just one line\n3.5 is a number", 0, 28) is None


def test_line_and_whole_splitters():
    text = "  first\n\n second \nthird"
    assert _pieces(LineSplitter(), text) == ["first", "second", "third"]
    assert LineSplitter(min_pieces=4).starts(text, 0, len(text)) is None
    assert _pieces(WholeSplitter(), text) == [text.strip()]


def test_default_rules(tok):
    prompt = "Tom has 2 cats. Each cat has 4 legs.\nHow many legs?"
    numbered = build_sequence(tok, prompt, "1. 2 cats.\n2. 4 legs each. So 8.\nAnswer: 8")
    texts = [(s.role, s.text.strip()) for s in segment_sequence(numbered) if s.role != "template"]
    assert texts == [("prompt", "Tom has 2 cats."), ("prompt", "Each cat has 4 legs."), ("prompt", "How many legs?"),
                     ("reasoning", "1. 2 cats."), ("reasoning", "2. 4 legs each. So 8."), ("reasoning", "Answer:"),
                     ("answer", "8")]
    lines = build_sequence(tok, prompt, "There are 2 cats. Each has 4 legs.\nSo 8 legs.\nAnswer: 8")
    steps = [s.text.strip() for s in segment_sequence(lines) if s.role == "reasoning"]
    assert steps == ["There are 2 cats. Each has 4 legs.", "So 8 legs.", "Answer:"]
    sentences = build_sequence(tok, prompt, "There are 2 cats. Each has 4 legs. So 8.\nAnswer: 8", chat_template=False)
    steps = [s.text.strip() for s in segment_sequence(sentences) if s.role == "reasoning"]
    assert steps == ["There are 2 cats.", "Each has 4 legs.", "So 8.", "Answer:"]


def test_leading_spaces_travel_with_their_word(tok):
    seq = build_sequence(tok, "One. Two. Three.", "ok", chat_template=False)
    segs = [s for s in segment_sequence(seq) if s.role == "prompt"]
    assert [s.text for s in segs] == ["One.", " Two.", " Three."]


def test_user_boundaries_replace_the_automatic_split(tok):
    seq = build_sequence(tok, "One. Two. Three.", "First.\nSecond.\nAnswer: 3", chat_template=False)
    first_response = seq.response_start
    segs = segment_sequence(seq, boundaries=[2, first_response + 1])
    assert_tiles(seq, segs)
    starts = [s.start for s in segs]
    assert 2 in starts and first_response + 1 in starts
    assert len([s for s in segs if s.role == "prompt"]) == 2  # only the user's cut inside the prompt
    answer = seq.token_range("answer")
    assert answer[0] in starts  # role changes always cut
    assert segment_sequence(seq, boundaries=[0, len(seq), 2, 2]) == segment_sequence(seq, boundaries=[2])


@pytest.mark.parametrize("bad, message", [([-1], "outside"), ([10**6], "outside"), (["3"], "integers"),
                                          ([1.5], "integers")])
def test_bad_user_boundaries(tok, bad, message):
    seq = build_sequence(tok, "One. Two.", "Answer: 3", chat_template=False)
    with pytest.raises(ValueError, match=message):
        segment_sequence(seq, boundaries=bad)


def test_boundary_inside_the_answer_is_refused(tok):
    seq = build_sequence(tok, "Q?", "Answer: 12345", chat_template=False)
    lo, hi = seq.token_range("answer")
    assert hi - lo > 1
    with pytest.raises(ValueError) as refused:
        segment_sequence(seq, boundaries=[lo + 1])
    assert str(refused.value) == (f"segment boundary {lo + 1} falls inside the answer (tokens {lo}..{hi - 1}), "
                                  "which is always one segment")


def test_custom_splitter_per_role(tok):
    seq = build_sequence(tok, "One. Two. Three.", "ok", chat_template=False)
    segs = segment_sequence(seq, splitters={"prompt": WholeSplitter()})
    assert [s.text for s in segs if s.role == "prompt"] == ["One. Two. Three."]


def test_segment_at_refuses_positions_outside_the_sequence(tok):
    seq = build_sequence(tok, "One. Two.", "Answer: 3", chat_template=False)
    segs = segment_sequence(seq)
    assert segment_at(segs, len(seq) - 1) == segs[-1]
    for pos in (-1, len(seq)):
        with pytest.raises(IndexError, match=f"^token {pos} is in no segment$"):
            segment_at(segs, pos)


def test_user_boundaries_at_the_first_token_and_where_the_answer_starts(tok):
    seq = build_sequence(tok, "One. Two. Three.", "Answer: 12345", chat_template=False)
    lo, _ = seq.token_range("answer")
    segs = segment_sequence(seq, boundaries=[1, lo])  # the answer starts a segment anyway: a cut there is allowed
    assert [(s.role, s.start) for s in segs] == [("prompt", 0), ("prompt", 1), ("reasoning", 6), ("answer", lo)]
    assert segs[0].text == "One"


def test_default_step_and_line_counts_and_the_first_rule_that_applies():
    assert _pieces(LineSplitter(), "one line only\nAnswer: 3") == ["one line only", "Answer: 3"]  # one line suffices
    assert LineSplitter().starts("Answer: 3", 0, 9) is None  # an "Answer:" line is no content of its own
    two = "Plan.\n1. add\n2. check"
    assert _pieces(StepSplitter(), two) == ["Plan.", "1. add", "2. check"]  # two steps suffice
    rule = FirstMatch(StepSplitter(), SentenceSplitter())
    assert _pieces(rule, two) == ["Plan.", "1. add", "2. check"]
    assert _pieces(rule, "No steps here. Only sentences.") == ["No steps here.", "Only sentences."]
    assert FirstMatch(StepSplitter()).starts("no steps", 0, 8) is None


def test_whitespace_before_the_first_piece_stays_with_it(tok):
    seq = build_sequence(tok, "\n\nOne. Two.", "\n1. add\n2. check\nAnswer: 3", chat_template=False)
    assert [(s.role, s.text) for s in segment_sequence(seq)] == [
        ("prompt", "\n\nOne."), ("prompt", " Two."), ("reasoning", "\n1. add\n"), ("reasoning", "2. check\n"),
        ("reasoning", "Answer: "), ("answer", "3")]


class _EveryCharacter:
    def starts(self, text, lo, hi):
        return list(range(lo, hi))


class _SentencesAndLines:
    """Two rules at once: the same start may come twice."""

    def starts(self, text, lo, hi):
        return sorted(SentenceSplitter().starts(text, lo, hi) + LineSplitter().starts(text, lo, hi))


def test_custom_rules_may_start_pieces_anywhere_and_twice(tok):
    seq = build_sequence(tok, "One. Two.\nThree", "\n1. add\nAnswer: 3", chat_template=False)
    every = segment_sequence(seq, splitters={"prompt": _EveryCharacter(), "reasoning": _EveryCharacter()})
    assert [s.n_tokens for s in every] == [1] * len(seq)  # every token starts a piece: one segment per token
    both = segment_sequence(seq, splitters={"prompt": _SentencesAndLines()})
    assert [s.text for s in both if s.role == "prompt"] == ["One.", " Two.\n", "Three"]


def test_splitters_start_pieces_at_their_first_non_space_character():
    assert WholeSplitter().starts("  first\nsecond", 0, 14) == [2]
    assert WholeSplitter().starts("x   ", 1, 4) == [1]  # only spaces: the piece starts where the text does
    assert StepSplitter().starts("1. a\n2. b", 0, 9) == [0, 5]  # no text before the first step: no piece for it
    assert StepSplitter().starts("So:\n1. a\n2. b", 0, 13) == [0, 4, 9]


def test_a_line_is_a_step_or_an_answer_line_by_its_own_text():
    text = "1. add\n***\n2. check\nFinal\nAnswer: 7"  # a rule line and a line "Final" are no steps
    assert _pieces(StepSplitter(), text) == ["1. add\n***", "2. check\nFinal", "Answer: 7"]
    assert _pieces(LineSplitter(), "Final\nAnswer: 7") == ["Final", "Answer: 7"]  # "Final" is content


def test_rules_read_only_their_own_range():
    text = "One line. Then more.\nnext line\nlast"
    hi = text.index("\n") + 1  # the first line and its newline
    assert LineSplitter(min_pieces=2).starts(text, 0, hi) is None  # the lines after `hi` do not count
    assert SentenceSplitter().starts(text, 0, hi) == [0, 10]


def test_a_text_that_starts_with_a_newline():
    assert LineSplitter().starts("\nonly line", 0, 10) == [1]  # the empty first line starts no piece
    assert LineSplitter(min_pieces=2).starts("\nonly line", 0, 10) is None  # and is no content
    assert SentenceSplitter().starts("\nOne. Two.\nThree", 0, 16) == [1, 6, 11]


def test_a_one_token_prompt_is_one_segment(tok):
    seq = build_sequence(tok, "x", chat_template=False)
    assert len(seq) == 1 and [(s.id, s.role, s.text) for s in segment_sequence(seq)] == [("P0", "prompt", "x")]


def test_segment_ids_number_each_role_from_zero(tok):
    seq = build_sequence(tok, "Tom has 2 cats. Each cat has 4 legs.\nHow many legs?",
                         "1. 2 cats.\n2. 4 legs each. So 8.\nAnswer: 8")
    assert [(s.id, s.role) for s in segment_sequence(seq)] == [
        ("T0", "template"), ("P0", "prompt"), ("P1", "prompt"), ("P2", "prompt"), ("T1", "template"),
        ("S0", "reasoning"), ("S1", "reasoning"), ("S2", "reasoning"), ("A", "answer")]
    segs = segment_sequence(seq)
    end = len(seq.response)
    assert [(s.char_start, s.char_end) for s in segs if s.role == "answer"] == [(end - 1, end)]  # "8"
    assert (segs[0].char_start, segs[0].char_end) == (None, None)  # the chat template is no user text
    assert segs[0].text == "".join(t.text for t in seq.tokens[:segs[0].end]) and "<|im_start|>" in segs[0].text
