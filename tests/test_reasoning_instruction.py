"""Generation says what it adds (issue 27 item 5): the reasoning instruction is an explicit option, off by
default in the API; when used, its tokens are template text, so no evidence, share or Recovery counts them."""

import pytest

import flashtrace
from flashtrace.analysis.facts import analyse
from flashtrace.analysis.story import story_panels
from flashtrace.cli import main
from flashtrace.engine.inputs import REASONING_INSTRUCTION, build_sequence, scaffold_range
from flashtrace.engine.models import generation

PROMPT = "Tom has 3 cats and 2 dogs. How many pets does Tom have?"


@pytest.fixture(scope="module")
def model():
    return flashtrace.load_model("tiny-llama")


def test_generation_adds_nothing_by_default(model, monkeypatch):
    seen = []
    real = generation.generate_response
    monkeypatch.setattr(generation, "generate_response", lambda loaded, ids, **kw: seen.append(ids) or real(loaded, ids, **kw))
    tr = flashtrace.trace(model, PROMPT, generate=True, max_new_tokens=6, hops=1)
    assert tr.prompt == PROMPT and REASONING_INSTRUCTION not in tr.prompt
    assert seen[-1] == build_sequence(model.tokenizer, PROMPT, "").ids  # the model saw the prompt alone
    assert generation.generate(model, PROMPT, max_new_tokens=4).prompt == PROMPT


def test_with_the_instruction_its_tokens_are_template_and_never_evidence(model):
    tr = flashtrace.trace(model, PROMPT, generate=True, max_new_tokens=6, hops=1, reasoning_instruction=True)
    lo, hi = scaffold_range(tr.prompt)
    assert tr.prompt[lo:].strip() == REASONING_INSTRUCTION
    added = [t for t in tr.tokens if t.start is not None and t.start >= lo and t.role != "reasoning" and
             t.role != "answer" and t.end is not None and t.end <= hi]
    assert added and all(t.role == "template" for t in added)
    user = [t for t in tr.tokens if t.role == "prompt"]
    assert user and all(t.end <= lo for t in user)  # every prompt token is the user's own text
    facts = analyse(tr)
    assert all(p.end <= min(i for i, t in enumerate(tr.tokens) if t in added) for p in facts.pieces)
    assert all("Think step by step" not in p.text for p in facts.pieces)
    assert sum(tr.scores.prompt[i] for i, t in enumerate(tr.tokens) if t in added) == 0  # no share on the instruction
    question = story_panels(tr)[0]
    assert question.data["question"] == PROMPT and "not counted as evidence" in question.caption


def test_a_prompt_that_already_asks_gets_no_instruction():
    class Tok:
        chat_template = "no thinking mode"

    asked = "How many pets? Think step by step."
    assert generation.prompt_for_generation(Tok(), asked, reasoning_instruction=True) == asked
    assert generation.prompt_for_generation(Tok(), "How many pets?") == "How many pets?"  # off by default
    assert generation.prompt_for_generation(Tok(), "How many pets?", True).endswith(REASONING_INSTRUCTION)


def test_the_command_line_asks_only_with_the_flag(tmp_path):
    out = tmp_path / "t.json"
    args = ["trace", "--model", "tiny-llama", "--prompt", PROMPT, "--generate", "--max-new-tokens", "6", "--json",
            str(out), "--no-progress"]
    assert main(args) == 0
    assert REASONING_INSTRUCTION not in flashtrace.Trace.load(out).prompt
    assert main(args + ["--reasoning-instruction"]) == 0
    tr = flashtrace.Trace.load(out)
    assert REASONING_INSTRUCTION in tr.prompt and scaffold_range(tr.prompt) is not None
