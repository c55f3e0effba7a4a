"""Chat-messages prompts: which prompts are messages, the refusals a user reads, the traced prompt text, and where
each message's content lies inside the rendered conversation (what gives its tokens the prompt role)."""

import pytest

from flashtrace.engine.inputs.chat import (SEPARATOR, check_messages, content_pieces, is_messages, prompt_text,
                                           with_last_user_text)

SYSTEM = {"role": "system", "content": "You count apples."}
USER = {"role": "user", "content": "Ben has 2 pears. How many?"}


@pytest.mark.parametrize("prompt, expected", [
    ([USER], True),
    ((SYSTEM, USER), True),
    ([SYSTEM, USER], True),
    ("What is 2 + 2?", False),
    ([], False),
    ((), False),
    ([USER, "and a string"], False),
    (["just", "strings"], False),
    ({"role": "user", "content": "a dict alone"}, False),
    (None, False),
])
def test_which_prompts_are_chat_messages(prompt, expected):
    assert is_messages(prompt) is expected


def test_messages_come_back_as_plain_role_and_content_dicts():
    extra = {**USER, "name": "ben", "tool_calls": []}
    assert check_messages([SYSTEM, extra]) == [SYSTEM, USER]
    assert check_messages((SYSTEM, USER)) == [SYSTEM, USER]


@pytest.mark.parametrize("messages, words", [
    ([], "non-empty list"),
    ("a string", "non-empty list"),
    ([USER, "text"], "non-empty list"),
    ([{"role": "user"}], "message 0 needs a string 'role' and a string 'content' (text only), got ['role']"),
    ([SYSTEM, {"content": "hi"}], "message 1 needs a string 'role'"),
    ([{"role": "user", "content": [{"type": "image"}]}], "got ['content', 'role']"),
    ([{"role": 1, "content": "hi"}], "message 0 needs"),
    ([USER, {"role": "assistant", "content": "2"}], "the last message must be the user's (the model answers it), "
                                                     "not 'assistant'"),
    ([{"role": "User", "content": "hi"}], "not 'User'"),
    ([SYSTEM, USER, {"role": "assistant", "content": "2"}], "not 'assistant'"),
])
def test_malformed_messages_are_refused_saying_what_is_wrong(messages, words):
    with pytest.raises(ValueError) as raised:
        check_messages(messages)
    assert words in str(raised.value)


def test_a_prompt_that_is_not_a_list_of_dicts_is_refused_in_full_words():
    with pytest.raises(ValueError) as raised:
        check_messages([])
    assert str(raised.value) == "a chat prompt is a non-empty list of {'role': ..., 'content': ...} dicts"


def test_the_traced_prompt_text_joins_the_contents_with_a_blank_line():
    assert SEPARATOR == "\n\n"
    assert prompt_text([SYSTEM, USER]) == "You count apples.\n\nBen has 2 pears. How many?"
    assert prompt_text([USER]) == USER["content"]
    assert prompt_text("What is 2 + 2?") == "What is 2 + 2?"
    with pytest.raises(ValueError, match="last message"):
        prompt_text([USER, {"role": "assistant", "content": "2"}])


def test_replacing_the_last_user_text_keeps_the_rest_and_the_original():
    messages = [SYSTEM, {**USER, "name": "ben"}]
    changed = with_last_user_text(messages, "How many apples?")
    assert changed == [SYSTEM, {"role": "user", "content": "How many apples?", "name": "ben"}]
    assert messages[1]["content"] == USER["content"]  # the caller's list is not changed
    assert changed[0] is SYSTEM


def _render(messages):
    return "".join(f"<|{m['role']}|>\n{m['content']}<|end|>\n" for m in messages) + "<|assistant|>\n"


def _mapped(rendered, messages):
    text = prompt_text(messages)
    return [(rendered[r:r + n], text[p:p + n]) for r, p, n in content_pieces(rendered, messages)]


def test_each_content_maps_to_its_place_in_the_rendered_conversation_and_the_prompt_text():
    messages = [SYSTEM, USER]
    rendered = _render(messages)
    pieces = content_pieces(rendered, messages)
    assert pieces == [(rendered.index(SYSTEM["content"]), 0, len(SYSTEM["content"])),
                      (rendered.index(USER["content"]), len(SYSTEM["content"]) + 2, len(USER["content"]))]
    assert _mapped(rendered, messages) == [(m["content"], m["content"]) for m in messages]


def test_a_content_repeated_maps_each_message_to_its_own_occurrence():
    messages = [{"role": "system", "content": "Count."}, {"role": "user", "content": "Count."}]
    rendered = _render(messages)
    (first, p0, n0), (second, p1, n1) = content_pieces(rendered, messages)
    assert first == rendered.index("Count.") and second == rendered.rindex("Count.") and first < second
    assert (p0, p1, n0, n1) == (0, 8, 6, 6)


def test_a_later_content_that_contains_an_earlier_one_does_not_steal_it():
    messages = [{"role": "system", "content": "apples"}, {"role": "user", "content": "How many apples?"}]
    rendered = _render(messages)
    (first, _, _), (second, _, _) = content_pieces(rendered, messages)
    assert rendered[first:first + 6] == "apples" and first < rendered.index("How many")
    assert second == rendered.index("How many apples?")


def test_a_content_the_template_does_not_show_verbatim_or_an_empty_one_is_left_out():
    messages = [{"role": "system", "content": "  Be brief.  "}, {"role": "user", "content": ""},
                {"role": "user", "content": "How many?"}]
    rendered = "<|system|>\nBe brief.<|end|>\n<|user|>\n<|end|>\n<|user|>\nHow many?<|end|>\n"
    assert content_pieces(rendered, messages) == [(rendered.index("How many?"), len("  Be brief.  ") + 2 + 0 + 2, 9)]


def test_a_content_at_the_very_start_of_the_rendered_text_is_found():
    messages = [{"role": "user", "content": "Hi there"}]
    assert content_pieces("Hi there<|assistant|>", messages) == [(0, 0, 8)]


def test_only_the_last_of_several_messages_gets_the_new_text():
    last = {**USER, "name": "ben"}
    messages = [SYSTEM, {"role": "user", "content": "first question"}, {"role": "assistant", "content": "4"}, last]
    assert with_last_user_text(messages, "new") == [*messages[:3], {"role": "user", "content": "new", "name": "ben"}]
