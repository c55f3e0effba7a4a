"""Generation streamed as it goes (issue 28 item 3): the response handed over token by token, and a callback
that raises stops the model there."""

import pytest

from flashtrace.engine.models import load_model
from flashtrace.engine.models.generation import generate


@pytest.fixture(scope="module")
def llama():
    return load_model("tiny-llama")


def test_the_text_grows_one_token_at_a_time(llama):
    seen = []
    out = generate(llama, "Count to ten.", max_new_tokens=12, on_text=lambda text, n: seen.append((n, text)))
    assert [n for n, _ in seen] == list(range(1, len(seen) + 1)) and len(seen) == 12
    assert seen[-1][1] == out.response  # the last text handed over is the response returned
    plain = generate(llama, "Count to ten.", max_new_tokens=12)
    assert plain.response == out.response  # streaming changes nothing in what is generated


def test_a_callback_that_raises_stops_the_generation(llama):
    class Stop(Exception):
        pass

    calls = []

    def stop_at_three(text, n):
        calls.append(n)
        if n == 3:
            raise Stop

    with pytest.raises(Stop):
        generate(llama, "Count to ten.", max_new_tokens=200, on_text=stop_at_three)
    assert calls == [1, 2, 3]
