"""The test suite's map (issue 47 item 6): docs/development.md lists every test file with what it checks, and
no test file or test is named after a review round or a defect number (``test_r3_*``, ``test_defectNN_``)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_test_file_is_in_the_map_and_the_map_names_no_missing_file():
    doc = (ROOT / "docs" / "development.md").read_text()
    listed = set(re.findall(r"^\| `(tests/[^`]+\.py)` \|", doc, re.M))
    present = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py")}
    assert present - listed == set(), "add them to docs/development.md, Where the tests are"
    assert listed - present == set(), "the map names files that are gone"


def test_no_test_is_named_after_a_review_round():
    files = list((ROOT / "tests").rglob("test_*.py"))
    assert [p.name for p in files if re.match(r"test_r\d+_", p.name)] == []
    named = [f"{p.name}::{m}" for p in files for m in re.findall(r"def (test_defect\d+\w*)", p.read_text())]
    assert named == []


def test_fast_is_one_marker_expression_in_the_makefile_the_mutation_script_and_pyproject():
    makefile = (ROOT / "Makefile").read_text()
    make_fast = re.search(r'^test-fast:.*\n\t.*pytest .*-m "([^"]+)"', makefile, re.M).group(1)
    mutation = re.search(r'^FAST = \["-m", "([^"]+)"\]', (ROOT / "benchmarks" / "mutation_tests.py").read_text(), re.M)
    pyproject = re.search(r'pytest_add_cli_args_test_selection = \["tests", "-m", "([^"]+)"',
                          (ROOT / "pyproject.toml").read_text())
    assert make_fast == mutation.group(1) == pyproject.group(1)
    assert "not ray" in make_fast  # the local Ray cluster's minutes stay out of the fast suite
