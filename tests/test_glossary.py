"""The glossary: every term the app shows is defined once; help tooltips link to the Glossary page."""

import re
from pathlib import Path

import pytest

from flashtrace.glossary import BY_KEY, PAGE, TERMS, help_link

ROOT = Path(__file__).resolve().parents[1]
REQUIRED = {"rho": "ρ", "hop": "Hop", "span": "Span", "threshold": "Threshold", "rise": "RISE", "mas": "MAS",
            "recovery": "Recovery@10 %", "of-row-max": "of row max", "segment": "T"}


def test_required_terms_are_defined_once():
    assert len({t.key for t in TERMS}) == len(TERMS) and len({t.name for t in TERMS}) == len(TERMS)
    for key, shown in REQUIRED.items():
        assert shown in BY_KEY[key].name and len(BY_KEY[key].text) > 60
    assert "never written ρ" in BY_KEY["spearman"].text  # one symbol, one meaning


def test_help_link_points_at_the_term_anchor():
    assert help_link("rho", "Share left.") == f"Share left. [Glossary: ρ (rho)]({PAGE}#rho)"
    with pytest.raises(KeyError):
        help_link("no-such-term")


def test_pages_link_their_terms_to_the_glossary():
    """A page that shows a glossary term links it (help_link) somewhere on the page."""
    for page in ("7_Story.py",):
        source = (ROOT / "pages" / page).read_text(encoding="utf-8")
        assert re.search(r"help_link\(", source), page
