"""Acceptance walk of the Story (issue 27) in a real browser at 1280×720, for every gallery trace, in the
normal view stepping with the Next button and in the presenter view stepping with the keyboard; no page
makes a request to a host other than the app or raises a JavaScript error. At each step:

- the step is addressable by URL (``step=N``); in the normal view "Step N of 5" shows, the last step's Next
  is disabled, the evidence step highlights the prompt, and each step of one trace (needle) is saved as a
  screenshot to test-artifacts/;
- the panel's main content lies wholly inside the first screen, nothing scrolled: step 1's question,
  reasoning and answer (and none of them scrolls inside its box), later steps' every figure;
- no two visible labels of a figure (tick labels, legend entries) are identical;
- every claim a caption makes about the top prompt sentence holds when recomputed here from the trace
  file (hop contributions summed per prompt sentence, as shares of the prompt's): a named top leads by
  more than the 2-point margin, a change leads by more than it at both depths, a tie is within it;
- where the trace knows its evidence (gold), the evidence views show it: the sentence bars outline a gold
  bar, the highlighted prompt underlines gold tokens.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import pytest

from flashtrace.analysis.facts import MARGIN
from flashtrace.analysis.segments import is_step
from flashtrace.analysis.story import STEPS, TITLES, stored_check, story_panels
from flashtrace.analysis.text import pct, quote
from flashtrace.store.gallery import gallery_path, list_gallery, load_gallery_trace

from flashtrace.viz.story import panel_figures

from .browser import ROOT, external, settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]
WIDTH, HEIGHT = 1280, 720
GOLD_RGB = "rgb(184, 134, 11)"  # viz.colors.GOLD
ARTIFACTS = ROOT / "test-artifacts"

# Every plotly figure on the page: its rectangle and its visible tick labels and legend entries.
FIGURES = """() => [...document.querySelectorAll('.js-plotly-plot')].map((gd) => {
    const r = gd.querySelector('svg.main-svg').getBoundingClientRect();
    const texts = [...gd.querySelectorAll('.xtick text, .ytick text, .legend .traces text')]
        .filter((t) => { const b = t.getBoundingClientRect(); return b.width > 0 && b.height > 0; })
        .map((t) => t.textContent.trim()).filter((t) => t);
    const gold = [...gd.querySelectorAll('.barlayer path')].some((p) => (p.style.stroke || '') === '%s');
    return {view: (gd._fullLayout.meta || {}).view, top: r.top, bottom: r.bottom, left: r.left, right: r.right,
            labels: texts, gold: gold, meta_gold: ((gd._fullLayout.meta || {}).gold || []).length};
})""" % GOLD_RGB

# Step 1's text blocks: rectangle, and whether the text scrolls inside its box.
TEXTS = """() => [...document.querySelectorAll('.ft-question, .ft-reasoning, .ft-answer')].map((e) => {
    const r = e.getBoundingClientRect(), body = e.querySelector('.ft-text-body');
    return {cls: e.className, top: r.top, bottom: r.bottom, scrolls: body.scrollHeight > body.clientHeight + 1};
})"""

SCROLLED = """() => Math.max(window.scrollY, ...[...document.querySelectorAll(
    '[data-testid="stMain"], [data-testid="stAppViewContainer"]')].map((e) => e.scrollTop))"""


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


def check_step(page, step: str, doc: dict, claims: Claims, problems: list[str], where: str) -> None:
    """Record what is wrong with the step as drawn now."""
    assert page.evaluate(SCROLLED) == 0, where
    if step == "question":
        texts = page.evaluate(TEXTS)
        assert len(texts) == (3 if any(t["role"] == "reasoning" for t in doc["tokens"]) else 2), (where, texts)
        problems += [f"{where}: {t['cls']} not fully on screen ({t['top']:.0f}–{t['bottom']:.0f})"
                     for t in texts if t["top"] < 0 or t["bottom"] > HEIGHT]
        problems += [f"{where}: {t['cls']} scrolls inside its box" for t in texts if t["scrolls"]]
        return
    figures = page.evaluate(FIGURES)
    for fig in figures:
        if fig["top"] < 0 or fig["bottom"] > HEIGHT or fig["left"] < 0 or fig["right"] > WIDTH:
            problems.append(f"{where}: {fig['view']} at {fig['top']:.0f}–{fig['bottom']:.0f} px, not fully on screen")
        twins = sorted({t for t in fig["labels"] if fig["labels"].count(t) > 1})
        if twins:
            problems.append(f"{where}: {fig['view']} shows identical labels {twins}")
        if doc["extra"].get("gallery", {}).get("gold") and fig["view"] in ("story_direct_sentences", "story_evidence"):
            if not (fig["gold"] and fig["meta_gold"]):
                problems.append(f"{where}: {fig['view']} shows no gold bar")
    caption = page.locator(".st-key-story_caption").inner_text()
    if claims.check(step, caption) is None and step != "check":
        problems.append(f"{where}: no claim about the top sentence found in {caption!r}")


def open_edited_version(page, trace) -> None:
    """A failure's edited version opens from its Story's link, and its answer is the one the failure step names."""
    record = trace.extra["gallery"]["edit_result"]
    page.get_by_role("button", name=f"Open {record['name']}").click()
    page.get_by_role("heading", name=TITLES["question"]).wait_for(timeout=60_000)
    page.wait_for_function(f"() => location.search.includes('gallery%3A{record['name']}') || "
                           f"location.search.includes('gallery:{record['name']}')", timeout=30_000)
    answer = page.locator(".ft-answer .ft-text-body").inner_text().strip()
    assert record["answer"] in answer, (record, answer)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"story-edited-{record['name']}.png"))


def check_normal_view(page, trace, number: int, step: str, name: str, steps: int = len(STEPS)) -> None:
    """What the normal view shows at each step besides the panel: "Step N of M", a drawn bar chart where
    the step has one (a precomputed check is drawn with no model), the highlighted prompt on the evidence
    step; one trace's steps, and each failure step, are saved as screenshots."""
    assert page.get_by_text(f"Step {number} of {steps}").count() == 1
    if step == "failure":
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"story-{name}-failure.png"))
    if step in ("direct", "hops", "evidence") or (step == "check" and stored_check(trace)):
        page.locator(".js-plotly-plot .barlayer").first.wait_for(timeout=30_000)
    if step == "evidence":
        assert page.locator(".ft-tok").count() > 10  # the prompt, highlighted
    if name == "needle":
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"story-{number}-{step}.png"))


def walk(page, url: str, name: str, present: bool, problems: list[str]) -> None:
    doc = json.loads(gallery_path(name).read_text(encoding="utf-8"))
    claims = Claims(doc)
    trace = load_gallery_trace(name)
    panels = story_panels(trace)  # the five steps, and a failure's sixth
    drawn = [len(panel_figures(trace, panel)) for panel in panels]  # figures each step draws
    keys = [p.key for p in panels]
    page.goto(f"{url}/Story?trace=gallery:{name}&step=1" + ("&present=1" if present else ""), timeout=90_000)
    for number, step in enumerate(keys, start=1):
        page.get_by_role("heading", name=TITLES[step]).wait_for(timeout=60_000)
        settle(page)
        bars = f"() => document.querySelectorAll('.js-plotly-plot .barlayer').length == {drawn[number - 1]}"
        page.wait_for_function(bars, timeout=30_000)
        assert f"step={number}" in page.url
        where = f"{name} step {number}{' (presenter)' if present else ''}"
        if not present:
            check_normal_view(page, trace, number, step, name, len(keys))
        check_step(page, step, doc, claims, problems, where)
        if step == "evidence" and not present and doc["extra"].get("gallery", {}).get("gold"):
            page.get_by_text("The whole prompt, highlighted").click()
            gold = page.locator(".ft-tokens .ft-gold").first
            gold.wait_for(timeout=30_000)
            gold.scroll_into_view_if_needed()
            if not gold.is_visible():
                problems.append(f"{where}: no gold token visible in the highlighted prompt")
            page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTo(0, 0)")
        if present:
            page.keyboard.press("ArrowRight")
        elif number < len(keys):
            page.get_by_role("button", name="Next").click()
        else:
            assert page.get_by_role("button", name="Next").is_disabled()
    if "failure" in keys and not present and "edit_result" in doc["extra"]["gallery"]:  # an original with its edit
        open_edited_version(page, trace)


# one test per gallery trace and view, so that pytest-xdist can share the walks between its workers
GALLERY = [item.name for item in list_gallery()]
WITH_GOLD = [name for name in GALLERY if load_gallery_trace(name).extra.get("gallery", {}).get("gold")]


@pytest.fixture(scope="module")
def screen(browser):
    """One 1280×720 page for the module's walks, each opening its trace by URL: a page's first load starts a
    renderer and compiles the app's scripts (seconds of CPU); a reload in the same tab reuses both. The walks only
    read gallery traces, so nothing one leaves behind changes the next."""
    page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    yield page
    page.close()


@pytest.fixture
def watched(screen):
    """`screen` (``.page``), with the requests it makes to another host (``.outside``) and its JavaScript errors
    (``.errors``) collected for one test; the collectors are removed afterwards."""
    outside, errors = [], []  # requests to another host, JavaScript errors

    def request(r):
        if external(r.url):
            outside.append(r.url)

    def error(e):
        errors.append(str(e))

    screen.on("request", request)
    screen.on("pageerror", error)
    yield SimpleNamespace(page=screen, outside=outside, errors=errors)
    screen.remove_listener("request", request)
    screen.remove_listener("pageerror", error)


def test_the_gallery_has_stories_to_walk():
    assert len(GALLERY) >= 6 and len(WITH_GOLD) >= 6, (GALLERY, WITH_GOLD)


@pytest.mark.parametrize("present", [False, True], ids=["normal", "presenter"])
@pytest.mark.parametrize("name", GALLERY)
def test_every_gallery_story_fits_the_screen_and_tells_the_truth(gallery_app, name, present, watched):
    problems: list[str] = []
    walk(watched.page, gallery_app, name, present, problems)
    assert problems == [], "\n".join(problems)
    assert watched.outside == []
    assert watched.errors == []


# A view's gold, as drawn: the figure's meta.gold, and marks stroked in gold (heatmap outlines, graph rings).
GOLD_DRAWN = """() => [...document.querySelectorAll('.js-plotly-plot')].map((gd) => ({
    view: (gd._fullLayout.meta || {}).view, listed: ((gd._fullLayout.meta || {}).gold || []).length,
    marks: [...gd.querySelectorAll('.shapelayer path, .scatterlayer .point')]
        .filter((p) => (p.style.stroke || '') === '%s' && p.getBoundingClientRect().width > 0).length}))""" % GOLD_RGB


def query(page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def gold_drawn(page, view: str) -> list[dict]:
    """Once `view`'s chart is drawn and the page settled: that chart's gold, as drawn."""
    page.wait_for_function(f"() => [...document.querySelectorAll('.js-plotly-plot')].some((gd) => "
                           f"gd.querySelector('.main-svg') && (gd._fullLayout.meta || {{}}).view === '{view}')",
                           timeout=60_000)
    settle(page)
    return [f for f in page.evaluate(GOLD_DRAWN) if f["view"] == view]


@pytest.mark.parametrize("name", WITH_GOLD)
def test_gold_is_visible_on_every_evidence_view(gallery_app, name, screen):
    """Explore's heatmap (outlined cells) and text view (underlined tokens) and the Hop graph (ringed nodes)
    of every gallery trace that knows its evidence show it, as the Story does (the walk above). The trace is
    opened once by URL on Explore; its text view and its Hop graph are reached from there as a reader does (the
    View control, the link to the Hop graph), without reloading the app."""
    problems: list[str] = []
    url, page = gallery_app, screen
    page.goto(f"{url}/Explore?trace=gallery:{name}", timeout=90_000)
    drawn = gold_drawn(page, "token_heatmap")
    if not (drawn and drawn[0]["listed"] and drawn[0]["marks"]):
        problems.append(f"{name}: Explore draws no gold ({drawn})")
    page.get_by_role("radio", name="text", exact=True).click()  # the View control
    page.locator(".ft-tokens").first.wait_for(timeout=60_000)
    settle(page)
    assert query(page) == {"trace": [f"gallery:{name}"], "view": ["text"]}, page.url
    underlined = page.locator(".ft-tokens .ft-gold")
    if not underlined.count() or not underlined.first.is_visible():
        problems.append(f"{name}: Explore's text view underlines no gold token")
    page.locator('a[href*="Hop_graph?trace="]').first.click()
    drawn = gold_drawn(page, "hop_graph")
    assert "/Hop_graph?" in page.url and query(page)["trace"] == [f"gallery:{name}"], page.url
    if not (drawn and drawn[0]["listed"] and drawn[0]["marks"]):
        problems.append(f"{name}: Hop graph draws no gold ({drawn})")
    assert problems == [], "\n".join(problems)
