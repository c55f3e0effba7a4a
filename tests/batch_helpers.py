"""Shared inputs for the batch tests."""

import json

import torch

from flashtrace.analysis.schema import Trace

PROMPTS = ["What is 2+3?", "Name a colour.", "Count to three.", "Which is larger, 7 or 9?",
           "Spell cat.", "What day follows Monday?", "Is ice cold?", "Add 10 and 5."]
RESPONSES = ["2 plus 3 is 5. The answer is 5.", "Blue.", "One, two, three.", "9 is larger than 7. So 9.",
             "C, A, T.", "Tuesday comes next. Tuesday.", "Yes, ice is cold. Yes.", "10 plus 5 is 15. 15."]


def write_input(path, n=8, extra_lines=()):
    lines = [json.dumps({"prompt": p, "response": r, "title": f"ex{i}", "hops": i % 3})
             for i, (p, r) in enumerate(zip(PROMPTS[:n], RESPONSES[:n]))]
    path.write_text("\n".join(list(lines) + list(extra_lines)) + "\n")
    return path


def traces(folder):
    """{file name: Trace} of the trace files in `folder`."""
    return {p.name: Trace.load(p) for p in sorted(folder.glob("*.json"))}


def assert_same_traces(a, b, atol=1e-6):
    assert a.keys() == b.keys() and a
    for name in a:
        ta, tb = a[name], b[name]
        assert [t.id for t in ta.tokens] == [t.id for t in tb.tokens]
        assert torch.allclose(torch.tensor(ta.scores.final), torch.tensor(tb.scores.final), atol=atol, rtol=0), name
        assert len(ta.hops) == len(tb.hops)
        for ha, hb in zip(ta.hops, tb.hops):
            assert torch.allclose(torch.tensor(ha.contribution), torch.tensor(hb.contribution), atol=atol, rtol=0)


class Flaky:
    """A light pool worker (no model): doubles numbers; its process exits on the job 'die'."""

    def __init__(self, device=None):
        self.device = device

    def __call__(self, job):
        import os

        if job == "die":
            os._exit(3)
        if job == "raise":
            raise RuntimeError("worker raised")
        return {"value": job * 2, "pid": os.getpid()}
