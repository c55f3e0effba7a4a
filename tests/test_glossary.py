"""The glossary: every term the app shows is defined once; help tooltips link to the Glossary page."""

import re
from pathlib import Path

import pytest

from flashtrace.app.glossary import BY_KEY, PAGE, TERMS, help_link

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


LINKED = {"pages/1_Trace.py": ("hop", "span"), "pages/2_Explore.py": ("hop",), "pages/3_Hop_graph.py": ("threshold",),
          "pages/4_Compare.py": ("rho",), "pages/6_Evaluation.py": ("rise", "mas", "recovery"),
          "pages/7_Story.py": ("hop", "rho", "deletion"), "flashtrace/app/ui.py": ("rho",)}


@pytest.mark.parametrize("path", sorted(LINKED))
def test_pages_link_their_terms_to_the_glossary(path):
    """Each page links the terms it shows to their glossary entries (help tooltips or a caption)."""
    source = (ROOT / path).read_text(encoding="utf-8")
    for key in LINKED[path]:
        assert re.search(rf'help_link\(\s*"{key}"', source) or (
            f'"{key}"' in source and "help_link(k)" in source), (path, key)
