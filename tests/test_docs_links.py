"""README.md and docs/*.md: every relative link and image resolves, and the README stays short.

Links are read from the Markdown outside fenced code blocks and inline code spans. A link to
`page.md#anchor` (or `#anchor` on the same page) must name a heading of that page, slugged the way
GitHub does it (lower case, punctuation dropped, spaces to hyphens, `-1`, `-2` for repeats).
"""

import re
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 250

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+).+?\1")
# [text](target) and ![alt](target); the target ends at the first space (a title may follow) or ")"
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks."""
    out, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, line))
    return out


def slug(heading: str) -> str:
    text = CODE_SPAN.sub(lambda m: m.group(0).strip("`"), heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading keeps its text
    text = text.strip().lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def links(path: Path) -> list[tuple[int, str]]:
    found = []
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        for match in LINK.finditer(CODE_SPAN.sub("", line)):
            found.append((number, match.group(1)))
    return found


def dead_links(path: Path) -> list[str]:
    """Every relative link or image of `path` whose file (or heading anchor) does not exist."""
    problems = []
    for number, target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / unquote(file_part)).resolve() if file_part else path
        where = f"{path.relative_to(ROOT)}:{number}: {target}"
        if not dest.exists():
            problems.append(f"{where} (no such file)")
        elif anchor and dest.suffix == ".md" and unquote(anchor) not in anchors(dest):
            problems.append(f"{where} (no heading #{anchor} in {dest.name})")
    return problems


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_image_resolves(path):
    assert dead_links(path) == []


def test_readme_is_short_and_links_every_docs_page():
    readme = ROOT / "README.md"
    n_lines = len(readme.read_text(encoding="utf-8").splitlines())
    assert n_lines <= README_MAX_LINES, f"README.md has {n_lines} lines; keep it at most {README_MAX_LINES}"
    linked = {(readme.parent / t.partition("#")[0]).resolve() for _, t in links(readme)}
    pages = sorted((ROOT / "docs").glob("*.md"))
    assert pages, "docs/ holds no pages"
    assert [p.name for p in pages if p.resolve() not in linked] == []


def test_checker_finds_dead_files_and_anchors(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "img.png").write_bytes(b"png")
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        "# Speed: FlashTrace vs IFR (SmolLM2-135M)\n\n## Memory\n\n## Memory\n\n"
        "![ok](../img.png) ![gone](../missing.png) [ok](#memory-1) [bad](#nowhere)\n"
        "[ok](#speed-flashtrace-vs-ifr-smollm2-135m) [web](https://example.org/x)\n"
        "`[in code](missing.md)`\n\n```\n[in a fence](missing.md)\n```\n",
        encoding="utf-8",
    )
    problems = dead_links(page)
    assert [p.split(": ", 1)[1] for p in problems] == [
        "../missing.png (no such file)",
        "#nowhere (no heading #nowhere in page.md)",
    ]
