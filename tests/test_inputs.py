"""Span detection and token sequences with roles and character offsets."""

import pytest

from flashtrace.engine.inputs import build_sequence, detect_spans, is_stop_token, parse_stop_tokens, stop_rule
from flashtrace.engine.models.loading import default_tokenizer


def _text(response, rng):
    return response[rng[0]:rng[1]] if rng else None


@pytest.mark.parametrize("response, reasoning, answer, rule", [
    ("<think>x is 3, so y is 4</think>\nThe answer is 4.", "x is 3, so y is 4", "The answer is 4.", "after-think"),
    ("<think>add them</think> so \\boxed{12} it is", "add them", "12", "boxed"),
    ("First 2+2=4.\nThen 4*2=8.\nAnswer: 8", "First 2+2=4.\nThen 4*2=8.", "8", "answer-line"),
    ("We compute \\boxed{\\frac{1}{2}}.", None, "\\frac{1}{2}", "boxed"),
    ("Step one.\nStep two.\nSo it is Paris.\n", "Step one.\nStep two.", "So it is Paris.", "last-line"),
    ("Paris.", None, "Paris.", "last-line"),
    ("4 * 8 = 32.\nThe answer is: Answer: 32", "4 * 8 = 32.", "32", "answer-line"),  # the last "Answer:" wins
    ("Answer: 3\nso... Final answer: 4 \n", "Answer: 3", "4", "answer-line"),
    ("Answer: 7\nAnswer:", None, "7", "answer-line"),  # a bare last mark is skipped
    ("Add them.\n\\boxed{12}", "Add them.", "12", "boxed"),  # the closing brace is the last character
    ("Add them.\n\\boxed{12}\nok", "Add them.", "12", "boxed"),
])
def test_detect_spans(response, reasoning, answer, rule):
    spans = detect_spans(response)
    assert (_text(response, spans.reasoning), _text(response, spans.answer), spans.rule) == (reasoning, answer, rule)


@pytest.fixture(scope="module")
def tok():
    return default_tokenizer()


@pytest.mark.parametrize("chat", [True, False])
def test_sequence_roles_and_offsets(tok, chat):
    prompt = "Ünïcödé prompt: café 東京 and   spaces\nnew line"
    response = "  Think: 東京 is a city.\nAnswer: Tokyo"
    seq = build_sequence(tok, prompt, response, chat_template=chat)
    roles = [t.role for t in seq.tokens]
    order = {"template": 0, "prompt": 0, "reasoning": 1, "answer": 2}
    assert [order[r] for r in roles] == sorted(order[r] for r in roles)
    for t in seq.tokens:
        source = {"prompt": prompt, "response": response}.get(t.source)
        if source is not None:
            assert 0 <= t.start <= t.end <= len(source)
    for source, text in (("prompt", prompt), ("response", response)):
        spans = [(t.start, t.end) for t in seq.tokens if t.source == source]
        assert [s for s, _ in spans] == sorted(s for s, _ in spans)  # in text order
        covered = set()
        for s, e in spans:  # a multi-byte character split over tokens is covered by each of them
            covered.update(range(s, e))
        assert covered == set(range(len(text)))
    answer = "".join(t.text for t in seq.tokens if t.role == "answer")
    assert answer.strip() == "Tokyo"
    if chat:
        assert roles[0] == "template" and "<|im_start|>" in seq.tokens[0].text


@pytest.mark.parametrize("response", ["We add them: \\boxed{12} so that is it",
                                      "<think>add them</think> so \\boxed{12} it is",
                                      "First 2+2=4.\nAnswer: 4\nHope this helps."])
def test_text_after_the_answer_stays_out_of_the_reasoning_span(tok, response):
    """Response text after the answer: the reasoning span ends where the answer starts, so a
    reasoning target or span never contains the answer; the response target covers everything."""
    from flashtrace.run.tracing import resolve_target

    seq = build_sequence(tok, "What is 5 + 7?", response, chat_template=True)
    answer = seq.token_range("answer")
    reasoning = seq.token_range("reasoning")
    assert "".join(t.text for t in seq.tokens[slice(*answer)]).strip() in ("12", "4")
    assert reasoning[0] == seq.response_start and reasoning[1] == answer[0]
    assert resolve_target(seq, "reasoning") == reasoning
    assert resolve_target(seq, "response") == (seq.response_start, len(seq))
    assert seq.tokens[-1].role == "reasoning" and answer[1] < len(seq)  # the trailing text is still traced


def test_labels_come_from_ids_not_retokenisation(tok):
    seq = build_sequence(tok, "hello  world", "ok")
    assert [t.text for t in seq.tokens] == [tok.decode([t.id]) for t in seq.tokens]
    assert tok.decode(seq.ids).endswith("ok")


def test_empty_prompt_is_refused(tok):
    with pytest.raises(ValueError, match="prompt is empty"):
        build_sequence(tok, "   ", "x")


# Token texts as the tokenizers label them (leading-space and newline variants included).
TOKENS = [" ", "\n", "\n\n", ".", " .", ".\n", ",", " ,", "?", " ?", ":", "=", "...", "）", "!", " the", "4", "a.",
          "<|im_end|>"]
EXPECTED = {  # the stop tokens of each preset among TOKENS
    "paper": {" ", "\n", "\n\n", ".", " .", ".\n", ",", " ,"},
    "punctuation": {" ", "\n", "\n\n", ".", " .", ".\n", ",", " ,", "?", " ?", ":", "=", "...", "）", "!"},
    "none": set(),
}


@pytest.mark.parametrize("preset", sorted(EXPECTED))
def test_stop_token_presets(preset):
    assert {t for t in TOKENS if is_stop_token(t, preset)} == EXPECTED[preset]


def test_paper_is_the_default_stop_set():
    assert [is_stop_token(t) for t in TOKENS] == [is_stop_token(t, "paper") for t in TOKENS]
    assert not is_stop_token(" ?") and is_stop_token(" .")  # a question's final "?" keeps its score


def test_user_stop_list_matches_after_stripping_and_keeps_whitespace_stops():
    rule = stop_rule(["?", " :", "the"])
    assert {t for t in TOKENS if rule(t)} == {" ", "\n", "\n\n", "?", " ?", ":", " the"}


def test_stop_token_values_from_the_command_line():
    assert parse_stop_tokens("paper") == "paper" and parse_stop_tokens(" none ") == "none"
    assert parse_stop_tokens(", . ?") == [",", ".", "?"]
    for bad in ("", "   "):
        with pytest.raises(ValueError, match="stop-tokens"):
            parse_stop_tokens(bad)
    with pytest.raises(ValueError, match="paper, punctuation, none"):
        stop_rule("default")


def test_reasoning_is_the_first_think_block_whatever_tags_follow():
    """A model may echo a tag: the reasoning runs from the first <think> to the first </think>, and the answer
    is looked for only after that close."""
    cases = [
        ("<think>plan <think> more</think>\nAnswer: 1", "plan <think> more", "1"),
        ("<think>a</think>b</think>\nAnswer: 3", "a", "3"),
        ("<think>a</think>\nso <think> is a tag\nAnswer: 2", "a", "2"),
        ("x</think>\nAnswer: 4", "x", "4"),  # no opening tag: everything before the close
    ]
    for text, reasoning, answer in cases:
        spans = detect_spans(text)
        assert (text[slice(*spans.reasoning)], text[slice(*spans.answer)]) == (reasoning, answer), text


def test_a_multi_line_answer_keeps_the_reasoning_before_its_first_line():
    text = "Add them.\nSo \\boxed{7\nunits}\n"
    spans = detect_spans(text)
    assert text[slice(*spans.answer)] == "7\nunits" and text[slice(*spans.reasoning)] == "Add them."
    assert spans.reasoning[1] <= spans.answer[0]  # never overlapping the answer
