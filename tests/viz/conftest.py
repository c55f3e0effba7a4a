import pytest

import flashtrace

HOSTILE_PROMPT = 'Keep <script>alert(1)</script> and " onmouseover="x" safe.\nTom has 3 cats & 2 dogs. How many pets?'
RESPONSE = "He has 3 cats.\nHe has 2 dogs, so 3 + 2 = 5.\nAnswer: 5"


@pytest.fixture(scope="session")
def small_trace():
    """A real two-hop trace from the tiny Llama whose prompt holds HTML-like text."""
    model = flashtrace.load_model("tiny-llama")
    return flashtrace.trace(model, prompt=HOSTILE_PROMPT, response=RESPONSE, hops=2)
