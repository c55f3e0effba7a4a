"""The floors are code, not prose: import-linter's contracts (`.importlinter`: a lower floor never imports
a higher one, analysis and storage are torch-free, only viz and app draw, no import cycles) hold, and the
limits and choices the command line offers come from `flashtrace.analysis.limits`."""

import subprocess
import sys
from pathlib import Path

import pytest

from flashtrace.analysis import limits
from flashtrace.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    lint = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run([str(lint), "--config", str(ROOT / ".importlinter")], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


def _option(command: str, flag: str):
    parser = build_parser(only=command)
    sub = parser.commands[command]
    return next(a for a in sub._actions if flag in a.option_strings)


@pytest.mark.parametrize("command", ["trace", "batch"])
def test_cli_choices_are_the_limits_choices(command):
    assert tuple(_option(command, "--recursive").choices) == limits.RECURSIVE_SPANS
    assert tuple(_option(command, "--hop0").choices) == limits.HOP0_SPANS
    assert f"0-{limits.MAX_HOPS}" in _option(command, "--hops").help


def test_export_refuses_a_graph_threshold_the_graph_would_refuse(tmp_path, capsys):
    # threshold 1 drops every edge: refused by the command, with one line, before the file is read
    code = main(["export", str(tmp_path / "missing.json"), "--html", str(tmp_path / "x.html"), "--threshold", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "--threshold" in err and "below 1" in err and err.count("\n") == 1
    with pytest.raises(ValueError):
        limits.check_graph_threshold(1.0)
    assert limits.check_graph_threshold(0.0) == 0.0


# --- short functions ----------------------------------------------------------------------------------
MAX_COMPLEXITY = 15
MAX_LINES = 60
FLOORS = ("base", "engine", "analysis", "store")  # the floors held to the limits (issue 26 item 6)


def _docstring_lines(source: str) -> dict[int, int]:
    """``{line of a def: lines its docstring takes}``: documentation does not count against a function's length."""
    import ast

    out = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and ast.get_docstring(node) is not None:
            doc = node.body[0]
            out[node.lineno] = doc.end_lineno - doc.lineno + 1
    return out


def _long_or_complex() -> set[str]:
    from radon.complexity import cc_visit
    from radon.visitors import Class

    found = set()
    for floor in FLOORS:
        for path in sorted((ROOT / "flashtrace" / floor).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            docs = _docstring_lines(source)
            for block in cc_visit(source):
                functions = list(block.methods) if isinstance(block, Class) else [block]
                for f in functions:
                    lines = f.endline - f.lineno + 1 - docs.get(f.lineno, 0)
                    if f.complexity > MAX_COMPLEXITY or lines > MAX_LINES:
                        found.add(f"{path.relative_to(ROOT).as_posix()}:{f.name}")
    return found


def test_functions_in_the_lower_floors_are_short_and_simple():
    found = _long_or_complex()
    assert found == set(), f"over {MAX_LINES} lines or complexity {MAX_COMPLEXITY}: {sorted(found)}"


def test_xenon_passes_on_every_floor_and_the_app_pages():
    """No function above rank C (cyclomatic complexity 20), no module above B, average A: the whole package,
    app.py and pages/, nothing excluded (issue 47 item 5)."""
    xenon = Path(sys.executable).with_name("xenon")
    targets = [ROOT / "flashtrace", ROOT / "app.py", ROOT / "pages"]
    out = subprocess.run([str(xenon), "--max-absolute", "C", "--max-modules", "B", "--max-average", "A",
                          *map(str, targets)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_app_table_goes_through_ui_table_so_missing_values_read_as_a_dash():
    """Streamlit prints a missing value as "None"; `ui.table` shows "—" (issue 45's polish list)."""
    import re

    root = Path(__file__).resolve().parents[1]
    direct = [f"{p.relative_to(root)}:{i}" for p in [root / "app.py", *sorted((root / "pages").glob("*.py")),
                                                     *sorted((root / "flashtrace" / "app").glob("*.py"))]
              for i, line in enumerate(p.read_text().splitlines(), 1)
              if re.search(r"\bst\.dataframe\(", line) and p.name != "ui.py"]
    assert direct == []
