"""Token ids as a prompt or a response, as transformers takes ``input_ids`` (issue 49 item 7): a tensor prompt
used to crash with ``'Tensor' object has no attribute 'strip'``."""

import numpy as np
import pytest
import torch

import flashtrace

PROMPT = "Ann has 3 apples and buys 4. How many?"
RESPONSE = "3 + 4 = 7.\nAnswer: 7"


@pytest.fixture(scope="module")
def tiny():
    return flashtrace.load_model("tiny-llama")


def _chat_ids(tiny) -> list[int]:
    rendered = tiny.tokenizer.apply_chat_template([{"role": "user", "content": PROMPT}], add_generation_prompt=True,
                                                  tokenize=False)
    return tiny.tokenizer(rendered, add_special_tokens=False)["input_ids"]


def test_ids_of_the_chat_prompt_trace_as_its_text_does(tiny):
    text = flashtrace.trace(tiny, PROMPT, RESPONSE, hops=1)
    response_ids = tiny.tokenizer(RESPONSE, add_special_tokens=False)["input_ids"]
    for prompt_ids in (torch.tensor([_chat_ids(tiny)]), np.array(_chat_ids(tiny)), _chat_ids(tiny)):
        ids = flashtrace.trace(tiny, prompt_ids, response_ids, hops=1)
        assert [t.id for t in ids.tokens] == [t.id for t in text.tokens]  # what the model read, token for token
        assert ids.scores.final == pytest.approx(text.scores.final, abs=1e-6)
        assert ids.response == RESPONSE and ids.prompt.endswith("assistant\n")  # no second template around them


def test_a_list_of_ints_is_one_prompt_and_a_list_of_strings_many(tiny):
    one = flashtrace.trace(tiny, _chat_ids(tiny), RESPONSE, hops=0)
    assert not isinstance(one, list)
    many = flashtrace.trace(tiny, [PROMPT, PROMPT], [RESPONSE, RESPONSE], hops=0)
    assert isinstance(many, list) and len(many) == 2


@pytest.mark.parametrize("ids, message", [
    (torch.tensor([[1, 2], [3, 4]]), r"one sequence \(shape \[N\] or \[1, N\]\), got shape \[2, 2\]"),
    ([10**9], r"must lie in 0\.\.49151"),
    (torch.tensor([], dtype=torch.long), "ids are empty"),
])
def test_ids_that_are_not_one_sequence_of_the_vocabulary_are_refused_in_words(tiny, ids, message):
    with pytest.raises(ValueError, match=message):
        flashtrace.trace(tiny, ids, RESPONSE)


def test_ids_that_do_not_come_back_from_their_text_are_refused(tiny):
    tok = tiny.tokenizer
    split = tok("appl", add_special_tokens=False)["input_ids"] + tok("es", add_special_tokens=False)["input_ids"]
    assert tok(tok.decode(split), add_special_tokens=False)["input_ids"] != split  # "apples" is not those pieces
    with pytest.raises(ValueError, match="the response ids do not come back from their text.*pass the text"):
        flashtrace.trace(tiny, PROMPT, split)


def test_a_traces_response_start_is_its_sequences(tiny):
    """One place says where the response starts: `Trace.response_start` agrees with the recorded sequence's,
    with a chat template and without (issue 47 item 4)."""
    for chat in (True, False):
        prepared = flashtrace.prepare(tiny, PROMPT, RESPONSE, chat_template=chat)
        trace = flashtrace.attribute(prepared, hops=0)
        assert trace.response_start == prepared.sequence.response_start
        assert trace.tokens[trace.response_start - 1].role != "reasoning" and trace.tokens[trace.response_start].role in ("reasoning", "answer")
