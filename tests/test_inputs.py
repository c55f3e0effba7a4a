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


def test_the_default_stop_set_is_the_default_preset():
    from flashtrace.engine.inputs import DEFAULT_STOP_TOKENS

    assert [is_stop_token(t) for t in TOKENS] == [is_stop_token(t, DEFAULT_STOP_TOKENS) for t in TOKENS]
    assert not is_stop_token(" ?", "paper") and is_stop_token(" .", "paper")  # the authors' set keeps a final "?"


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


def _bos_tokenizer():
    """A word-level tokenizer that, like Llama's and Gemma's, puts a BOS token before the text it encodes, with a
    chat template that writes that BOS itself (as those templates do)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    words = ["<s>", "<unk>", "[user]", "[system]", "[assistant]", "what", "is", "two", "plus", "?", "four", "be",
             "brief", "."]
    inner = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    inner.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    inner.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    template = ("<s> {% for m in messages %}[{{ m['role'] }}] {{ m['content'] }} {% endfor %}"
                "{% if add_generation_prompt %}[assistant] {% endif %}")
    return PreTrainedTokenizerFast(tokenizer_object=inner, bos_token="<s>", unk_token="<unk>", chat_template=template)


def test_one_bos_before_the_prompt_with_or_without_the_template_and_none_in_the_response():
    """A tokenizer that adds a BOS: the plain prompt gets it (the model expects it); a chat template that writes
    its own gets no second one; the response, which continues the sequence, gets none. The template is the
    user's turn then the assistant's header (the generation prompt), and only the user's words are the prompt."""
    tok = _bos_tokenizer()
    plain = build_sequence(tok, "what is two plus two ?", "four .", chat_template=False)
    assert [(t.text, t.role) for t in plain.tokens] == [
        ("<s>", "template"), ("what", "prompt"), ("is", "prompt"), ("two", "prompt"), ("plus", "prompt"),
        ("two", "prompt"), ("?", "prompt"), ("four", "answer"), (".", "answer")]
    chat = build_sequence(tok, "what is two plus two ?", "four .")
    assert chat.chat_template and [(t.text, t.role) for t in chat.tokens] == [
        ("<s>", "template"), ("[user]", "template"), ("what", "prompt"), ("is", "prompt"), ("two", "prompt"),
        ("plus", "prompt"), ("two", "prompt"), ("?", "prompt"), ("[assistant]", "template"), ("four", "answer"),
        (".", "answer")]
    assert [(t.start, t.end) for t in chat.tokens if t.role == "prompt"] == [(0, 4), (5, 7), (8, 11), (12, 16),
                                                                             (17, 20), (21, 22)]


def test_a_chat_messages_prompt_renders_every_message_and_keeps_the_list():
    tok = _bos_tokenizer()
    messages = [{"role": "system", "content": "be brief ."}, {"role": "user", "content": "what is two plus two ?"}]
    seq = build_sequence(tok, messages, "four")
    assert seq.messages == messages and seq.prompt == "be brief .\n\nwhat is two plus two ?"
    assert [t.text for t in seq.tokens if t.role == "template"] == ["<s>", "[system]", "[user]", "[assistant]"]
    assert "".join(seq.prompt[t.start:t.end] + " " for t in seq.tokens if t.role == "prompt") == \
        "be brief . what is two plus two ? "
    assert build_sequence(tok, "what is two ?", "four").messages is None
    with pytest.raises(ValueError) as refused:
        build_sequence(tok, messages, "four", chat_template=False)
    assert str(refused.value) == ("a chat-messages prompt needs the model's chat template (chat_template=True and a "
                                  "tokenizer that has one); pass a prompt string instead")


def test_the_tools_instruction_and_the_blank_line_before_it_are_template_not_prompt(tok):
    from flashtrace.engine.inputs.sequence import INSTRUCTION_SEPARATOR, REASONING_INSTRUCTION

    user = "What is 2 + 2?"
    seq = build_sequence(tok, user + INSTRUCTION_SEPARATOR + REASONING_INSTRUCTION, "4", chat_template=False)
    prompt_tokens = [t for t in seq.tokens if t.role == "prompt"]
    assert "".join(t.text for t in prompt_tokens) == user and all(t.end <= len(user) for t in prompt_tokens)
    rest = "".join(t.text for t in seq.tokens if t.source == "prompt" and t.role == "template")
    assert rest == INSTRUCTION_SEPARATOR + REASONING_INSTRUCTION


def test_a_character_range_maps_to_the_tokens_it_touches_and_nothing_else(tok):
    seq = build_sequence(tok, "Add them.", "one two three", chat_template=False)
    response = [(i, t.start, t.end) for i, t in enumerate(seq.tokens) if t.source == "response"]
    (i1, s1, e1), (i2, s2, e2) = response[1], response[2]
    assert seq.char_range_to_tokens((s2, e2)) == (i2, i2 + 1)  # starts where the token before it ends
    assert seq.char_range_to_tokens((s1, s2 + 1)) == (i1, i2 + 1)
    with pytest.raises(ValueError) as refused:
        seq.char_range_to_tokens((40, 50))
    assert str(refused.value) == "no response token covers characters 40:50"


def test_refusals_of_an_empty_prompt_and_bad_stop_tokens_say_what_is_wrong(tok):
    with pytest.raises(ValueError) as refused:
        build_sequence(tok, " \n ", "x")
    assert str(refused.value) == "the prompt is empty"
    with pytest.raises(ValueError) as refused:
        stop_rule([",", 3])
    assert str(refused.value) == "a stop-token list must hold strings"
    with pytest.raises(ValueError) as refused:
        parse_stop_tokens(" ")
    assert str(refused.value) == "--stop-tokens takes paper, punctuation, none or a whitespace-separated list of tokens"


def test_the_template_line_before_the_users_text_is_template_and_every_prompt_token_holds_text(tok):
    """SmolLM2's template puts the user's text right after ``user`` and a newline: that newline token ends where
    the prompt starts and is template; each prompt token spans at least one character of the prompt."""
    seq = build_sequence(tok, "Why is the sky blue?", "Rayleigh scattering.")
    first = seq.positions("prompt")[0]
    assert seq.tokens[first - 1].text == "\n" and seq.tokens[first - 1].role == "template"
    assert all(t.start < t.end for t in seq.tokens if t.role == "prompt")
    assert "".join(seq.prompt[t.start:t.end] for t in seq.tokens if t.role == "prompt") == "Why is the sky blue?"


def test_the_sequence_keeps_the_response_spans_it_was_given_or_found(tok):
    from flashtrace.engine.inputs import detect_spans
    from flashtrace.engine.inputs.spans import ResponseSpans

    response = "2 and 2 make 4.\nAnswer: 4"
    assert build_sequence(tok, "What is 2 + 2?", response).spans == detect_spans(response)
    given = ResponseSpans(reasoning=(0, 15), answer=(16, 25), rule="answer-line")
    seq = build_sequence(tok, "What is 2 + 2?", response, spans=given)
    assert seq.spans == given and seq.token_range("answer") == seq.char_range_to_tokens((16, 25))
