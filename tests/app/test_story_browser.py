"""The Story page in a real browser (Debian's chromium, 1280×720): a step opens from its URL, the evidence
step exports as HTML and PNG, Back goes one step back, the keys step through the Story, and the whole Story
downloads as one offline file; no page makes a request to a host other than the app. (Every gallery trace
stepped through all five panels with Next, with screenshots of one: test_story_walk.py.)"""

from pathlib import Path

import pytest

from flashtrace.analysis.story import STEPS, TITLES

from .browser import external, settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_story_step_opens_from_its_url_and_exports_offline(gallery_app, browser):
    """Step 4 opened by URL shows the evidence panel; it exports as an offline HTML page and its chart as
    PNG; Back goes to step 3; the glossary opens at an entry. (Every gallery trace stepped through with
    Next: test_story_walk.py's normal walk.)"""
    url = gallery_app
    requests, errors = [], []
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.on("request", lambda r: requests.append(r.url) if external(r.url) else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        # a step opened from its URL shows that panel, and Back goes one step back
        page.goto(f"{url}/Story?trace=gallery:free-form&step=4", timeout=90_000)
        page.get_by_role("heading", name=TITLES["evidence"]).wait_for(timeout=60_000)
        settle(page)
        # export where you look: the evidence step as one offline HTML file, its chart as PNG
        with page.expect_download(timeout=60_000) as download:
            page.get_by_role("button", name="HTML (offline page)").click()
        exported = Path(download.value.path()).read_text(encoding="utf-8")
        assert len(exported.encode()) <= 1_500_000 and "http://" not in exported and "https://" not in exported
        assert TITLES["evidence"] in exported and exported.count("data-ft-figure=") == 1
        with page.expect_download(timeout=120_000) as download:
            page.get_by_role("button", name="PNG (main chart)").click()
        assert Path(download.value.path()).read_bytes()[:4] == b"\x89PNG"
        page.get_by_role("button", name="Back").click()
        page.get_by_role("heading", name=TITLES["hops"]).wait_for(timeout=60_000)
        # the glossary page every help tooltip links to
        page.goto(f"{url}/Glossary#rho", timeout=90_000)
        page.get_by_role("heading", name="ρ (rho)").wait_for(timeout=60_000)
        settle(page)
    finally:
        page.close()
    assert requests == []
    assert errors == []


def test_keys_step_through_the_story_and_leave_the_presenter_view(gallery_app, browser):
    url = gallery_app
    page = browser.new_page(viewport={"width": 1280, "height": 720})

    def press(key: str, number: int) -> None:
        page.keyboard.press(key)
        page.get_by_role("heading", name=TITLES[STEPS[number - 1]]).wait_for(timeout=60_000)
        settle(page)
        assert f"step={number}" in page.url, (key, page.url)

    try:
        page.goto(f"{url}/Story?trace=gallery:vartrack&step=1", timeout=90_000)
        page.get_by_role("heading", name=TITLES["question"]).wait_for(timeout=60_000)
        settle(page)
        for key, number in (("ArrowRight", 2), ("Space", 3), ("PageDown", 4), ("ArrowLeft", 3),
                            ("Shift+Space", 2), ("PageUp", 1), ("ArrowLeft", 1)):
            press(key, number)
        page.get_by_role("button", name="Present").click()
        page.get_by_role("button", name="Exit").wait_for(timeout=60_000)
        settle(page)
        assert "present=1" in page.url and not page.locator('[data-testid="stSidebar"]').is_visible()
        press("ArrowRight", 2)
        assert "present=1" in page.url
        page.keyboard.press("Escape")
        page.get_by_role("button", name="Present").wait_for(timeout=60_000)
        settle(page)
        assert "present=1" not in page.url and "step=2" in page.url
        assert page.locator('[data-testid="stSidebar"]').is_visible()
        page.get_by_role("combobox").first.focus()  # keys typed into a field move nothing
        page.keyboard.press("ArrowRight")
        settle(page)
        assert "step=2" in page.url
    finally:
        page.close()


def test_whole_story_download_is_small_and_opens_offline(gallery_app, tmp_path, browser):
    """The longest gallery trace's whole Story, downloaded from the page: at most 1.5 MB, and opened from disk
    every request it makes is recorded (and anything but the file itself refused): there is none."""
    url = gallery_app
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    offline = browser.new_context(viewport={"width": 1280, "height": 720}, offline=True)
    try:
        page.goto(f"{url}/Story?trace=gallery:long-vartrack&step=3", timeout=90_000)
        page.get_by_role("heading", name=TITLES["hops"]).wait_for(timeout=60_000)
        settle(page)
        with page.expect_download(timeout=120_000) as download:
            page.get_by_role("button", name="Whole story (offline HTML)").click()
        path = tmp_path / "story.html"
        download.value.save_as(path)
        assert path.stat().st_size <= 1_500_000
        requests, errors = [], []

        def record(route):
            requests.append(route.request.url)
            if route.request.url == path.as_uri():
                route.continue_()
            else:
                route.abort()

        offline.route("**/*", record)
        story = offline.new_page()
        story.on("pageerror", lambda e: errors.append(str(e)))
        story.goto(path.as_uri())
        story.wait_for_selector("body[data-ft-ready='1']", timeout=60_000)
        assert [story.locator(f"#step-{n} h2").inner_text() for n in range(1, 6)] == [
            f"{n}. {TITLES[key]}" for n, key in enumerate(STEPS, start=1)]
        assert story.locator(".js-plotly-plot .main-svg").count() >= 5  # every chart drawn, offline
        assert story.locator(".ft-gold").count() > 0  # the known evidence, underlined
    finally:
        offline.close()
        page.close()
    assert requests == [path.as_uri()]  # the file itself, nothing else
    assert errors == []
