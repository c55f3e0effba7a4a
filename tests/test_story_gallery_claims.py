"""Every claim the Story's captions make about the top prompt sentence holds, for every gallery trace and
every step, when recomputed by hand from the trace file (`tests.story_claims`): a named top leads by more than
the 2-point margin, a change leads by more than it at both depths, a tie is within it, a failure's numbers are
the file's. No browser: the captions are `story_panels`' (the browser walk, `tests/app/test_story_walk.py`,
checks the same claims on the captions it shows, and the layout)."""

from __future__ import annotations

import json
import re

import pytest

from flashtrace.analysis.story import story_panels
from flashtrace.analysis.text import quote
from flashtrace.store.gallery import gallery_path, list_gallery, load_gallery_trace

from .story_claims import Claims

GALLERY = [item.name for item in list_gallery()]




def checked_claims(name: str) -> tuple[Claims, dict]:
    """The trace file's hand-made shares, and its Story panels by key."""
    claims = Claims(json.loads(gallery_path(name).read_text(encoding="utf-8")))
    return claims, {panel.key: panel for panel in story_panels(load_gallery_trace(name))}


@pytest.mark.parametrize("name", GALLERY)
def test_every_story_caption_of_a_gallery_trace_tells_the_truth(name):
    claims, panels = checked_claims(name)
    made = {key: claims.check(key, panel.caption) for key, panel in panels.items()}
    silent = [key for key, claim in made.items() if claim is None and key not in ("question", "check")]
    assert silent == [], f"{name}: no claim about the top sentence in the captions of {silent}"


def test_a_caption_naming_a_top_that_does_not_lead_fails_the_check():
    """The checker fails a caption that names the weakest prompt sentence as the one the model reads most (so
    the test above can fail)."""
    named = [n for n in GALLERY if re.search(r"sentence it reads most: “", checked_claims(n)[1]["direct"].caption)]
    assert named, "no gallery Story names a top sentence at hop 0"
    claims, panels = checked_claims(named[0])
    caption = panels["direct"].caption
    assert claims.check("direct", caption) == "top at hop 0"
    weakest = min(claims.first, key=claims.first.get)
    lie = re.sub(r"sentence it reads most: “[^”]*”",
                 lambda _: f"sentence it reads most: {quote(claims.text[weakest], 70)}", caption)
    with pytest.raises(AssertionError):
        claims.check("direct", lie)
