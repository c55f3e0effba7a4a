"""The Story's claims about the top prompt sentence, checked against the trace file by hand (used by
`tests/test_story_gallery_claims.py` on every gallery trace, and by the browser walk on what it shows).

Each prompt sentence's share of the prompt attribution is recomputed from the file (hop contributions summed per
sentence); a named top must lead by more than the 2-point margin, a change must lead by more than it at both
depths, a tie must be within it, and a failure's numbers must be the file's.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

from flashtrace.analysis.facts import MARGIN
from flashtrace.analysis.segments import is_step
from flashtrace.analysis.text import pct, quote


def shares_by_hand(doc: dict, depth: int) -> dict[str, float]:
    """Each prompt sentence's share of the prompt attribution after hops 0..depth, from the file."""
    sums = {}
    for seg in doc["segments"]:
        if seg["role"] == "prompt":
            sums[seg["id"]] = sum(sum(h["contribution"][seg["start"]:seg["end"]]) for h in doc["hops"][:depth + 1])
    total = sum(sums.values())
    return {k: v / total for k, v in sums.items()}


class Claims:
    """The prompt sentences' shares of one trace file at every depth, computed by hand."""

    def __init__(self, doc: dict):
        self.text = {s["id"]: s["text"] for s in doc["segments"] if s["role"] == "prompt"}
        self.depths = [shares_by_hand(doc, k) for k in range(len(doc["hops"]))]
        self.first, self.last = self.depths[0], self.depths[-1]
        questions = {k for k, t in self.text.items() if t.strip().endswith("?")}
        if questions >= {k for k, t in self.text.items() if t.strip()}:
            questions = set()  # a prompt that is only a question is its own context
        # the evidence step ranks the context (what supplied the answer); the question's share is stated apart
        self.context = {k: v for k, v in self.last.items() if k not in questions}
        self.asked = sum(v for k, v in self.last.items() if k in questions) if questions else None
        # the hops' claims (a change, a tie, a kept top) rank the context too: the question apart
        self.ctx_first, self.ctx_last = ({k: v for k, v in d.items() if k not in questions}
                                         for d in (self.first, self.last))
        self.ctx_depths = [{k: v for k, v in d.items() if k not in questions} for d in self.depths]
        self.questions = questions
        self.doc = doc

    def key(self, quoted: str) -> str:
        """The sentence a caption quotes (shortened to 70, 50 or 40 characters)."""
        found = [k for k, t in self.text.items() if f"“{quoted}”" in {quote(t, n) for n in (70, 50, 40)}]
        assert len(found) == 1, (quoted, found)
        return found[0]

    def quoted(self, pattern: str, caption: str) -> list[str]:
        """The sentences quoted where `pattern` (with one ``Q`` per quote) matches."""
        found = re.search(pattern.replace("Q", "“([^”]*)”"), caption)
        assert found, (pattern, caption)
        return [self.key(q) for q in found.groups()]

    def top(self, shares: dict[str, float], n: int = 3) -> set[str]:
        return set(sorted(shares, key=lambda k: -shares[k])[:n])

    def check_swaps(self, caption: str) -> None:
        """"The hops brought into the top 3: X from 9th to 2nd, past Y; ...": X entered the top 3, Y left it,
        and each leads the other by more than the margin at its own depth."""
        found = re.search(r"The hops brought into the top 3: (.*?)\.(?: [A-Z]|$)", caption)
        swaps = found.group(1) if found else ""
        for entered, left in re.findall(r"“([^”]*)” from \w+ to \w+, past “([^”]*)”", swaps):
            x, y = self.key(entered), self.key(left)
            assert x in self.top(self.last) and x not in self.top(self.first), caption
            assert y in self.top(self.first) and y not in self.top(self.last), caption
            assert self.lead(self.first, y, x) > MARGIN and self.lead(self.last, x, y) > MARGIN, caption

    @staticmethod
    def lead(shares: dict[str, float], a: str, b: str | None = None) -> float:
        """How far `a` leads `b` (or the best other sentence)."""
        other = shares[b] if b else max(v for k, v in shares.items() if k != a)
        return shares[a] - other

    def check_failure(self, caption: str) -> str:
        """The failure step against the file: both answers, the parting step's number, the misleading sentence's
        share of that step's prompt attribution (its step vector summed per prompt sentence, the question apart)
        and of the answer's after all hops, and the edit's new answer."""
        record = self.doc["extra"]["gallery"]
        lo, hi = self.doc["settings"]["target"]
        answer = "".join(t["text"] for t in self.doc["tokens"][lo:hi]).strip()
        assert caption.startswith(f"The model answered “{answer}”; the right answer is “{record['right_answer']}”."), caption
        if "edit" not in record["spec"]:  # a failure no edit tests yet
            assert caption.endswith("The task records no sentence that misled it."), caption
            return "failure"
        sentence = record["spec"]["edit"]["sentence"]
        if "edited_from" in self.doc["extra"]:  # the edited version, still wrong: the sentence is gone
            assert not [k for k, t in self.text.items() if sentence in t]
            assert f"This is the edited version of “{self.doc['extra']['edited_from']['name']}”" in caption, caption
            return "failure"
        (key,) = [k for k, t in self.text.items() if sentence in t]
        found = re.search(r"at step (\d+) of (\d+)", caption)
        if found and "of that step's prompt attribution" in caption:
            steps = [s for s in self.doc["segments"] if is_step(SimpleNamespace(**s)) and s["end"] <= lo]
            assert len(steps) == int(found.group(2)), caption
            step = steps[int(found.group(1)) - 1]
            vector = self.doc["steps"]["vectors"][step["id"]]
            sums = {s["id"]: sum(vector[s["start"]:s["end"]]) for s in self.doc["segments"] if s["role"] == "prompt"}
            share = sums[key] / sum(sums.values())
            assert f"it holds {pct(share)} of that step's prompt attribution" in caption, (share, caption)
        assert f"{pct(self.last[key])} of the answer's prompt attribution" in caption, (self.last[key], caption)
        after = record["edit_result"]["answer"]
        assert f"answers “{after}”" in caption, caption
        assert ("the right answer" in caption.split(f"answers “{after}”")[1][:20]) == record["edit_result"]["correct"]
        return "failure"

    def check(self, step: str, caption: str) -> str | None:
        """Each claim about the top prompt sentence in `caption` (a Story step's) against the shares; returns
        which claim it was (None: the caption makes none)."""
        lead, eps = self.lead, 1e-9
        if step == "hops":
            self.check_swaps(caption)
        if step == "direct" and "tied at the top" in caption:
            a, b = self.quoted(r"tied at the top \(within [^)]*\): Q \([^)]*\) and Q", caption)
            assert lead(self.first, a) >= -eps and lead(self.first, b) >= -eps - MARGIN, caption
            assert abs(lead(self.first, a, b)) <= MARGIN + eps, caption
            return "tie at hop 0"
        if step == "direct" and re.search(r"The prompt (?:sentence|token) it reads most", caption):
            (a,) = self.quoted(r"The prompt (?:sentence|token) it reads most: Q", caption)
            assert lead(self.first, a) > MARGIN, caption
            return "top at hop 0"
        first, last = self.ctx_first, self.ctx_last
        if step == "hops" and "changed the top" in caption:
            a, b = self.quoted(r"changed the top (?:prompt|context) \w+ from Q .*? to Q", caption)
            assert lead(first, a) > MARGIN and lead(last, b) > MARGIN, caption
            return "change"
        if step == "hops" and "did not clearly change" in caption:
            a, b = self.quoted(r"did not clearly change the top (?:prompt|context) \w+: Q and Q", caption)
            assert lead(first, a) >= -eps and lead(last, b) >= -eps, caption
            assert min(lead(first, a, b), lead(last, b, a)) <= MARGIN + eps, caption
            return "no clear change"
        if step == "hops" and "at every depth" in caption:
            (a,) = self.quoted(r"The top (?:prompt|context) \w+ is Q at every depth", caption)
            assert all(lead(shares, a) > 0 for shares in self.ctx_depths), caption
            if "(leading the next by" in caption:
                assert lead(first, a) > MARGIN and lead(last, a) > MARGIN, caption
            return "same top"
        if step == "failure":
            return self.check_failure(caption)
        if step == "evidence" and "No prompt token" not in caption:
            (a,) = self.quoted(r"(?:the first is|one (?:prompt|context) \w+,) Q", caption)
            ahead = lead(self.context, a) if len(self.context) > 1 else 1.0
            assert ahead >= -eps and (ahead <= MARGIN) == ("call these two a tie" in caption), caption
            if self.asked is not None:
                assert f"holds {pct(self.asked)} of the prompt's attribution: it says what was asked" in caption
            return "final top"
        return None
