"""No test asserts a wall-clock time, in the fast suite or in the slow and browser tests `make test` runs: such
asserts fail at random on a busy machine (a "Cancel answered within 2 s" browser test did, in a fresh machine's
`make test`). Speed and memory targets are benchmark scripts under benchmarks/ (see docs/benchmarks.md).

The scan reads every test and flags
- an ordering comparison (<, <=, >, >=) in an `assert` on a clock read (`time.perf_counter()`,
  `time.monotonic()`, `time.time()`, ...) or on a name computed from one;
- a clock read inside a string the test runs (a subprocess script that prints its own timing), in the test
  itself, in a module-level constant it names or in a module-level helper it calls;
- an ordering comparison of something named like a duration (`seconds`, `elapsed`, a `*_s` key) with a
  positive number.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
CLOCKS = {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns", "process_time"}
CLOCK_TEXT = re.compile(r"\b(perf_counter|monotonic|process_time)(_ns)?\(|\btime\.time(_ns)?\(")
DURATION = re.compile(r"(^|_)(seconds|elapsed|duration)($|_)|_s$")
ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)

# (file relative to tests/, test name): why its clock read is not a speed claim
ALLOWED = {
    ("test_library_concurrency.py", "test_a_killed_writer_leaves_nothing_on_the_next_open"):
        "a 60 s guard against a hung subprocess while waiting for its signal file, not a speed claim",
}


def _is_clock(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr in CLOCKS and isinstance(func.value, ast.Name) and func.value.id == "time"
    return isinstance(func, ast.Name) and func.id in CLOCKS - {"time"}


def _reads_clock(node: ast.AST, tainted: set[str]) -> bool:
    return any(_is_clock(sub) or (isinstance(sub, ast.Name) and sub.id in tainted) for sub in ast.walk(node))


def _tainted_names(func: ast.AST) -> set[str]:
    """Names assigned (directly or through other such names) from a clock read."""
    tainted: set[str] = set()
    while True:
        before = len(tainted)
        for node in ast.walk(func):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                if _reads_clock(node.value, tainted):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    tainted |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if len(tainted) == before:
            return tainted


def _duration_like(node: ast.AST) -> bool:
    """A value named like a duration; a function's name does not count (`thread_wait_s(...)` computes one)."""
    called = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
    for sub in ast.walk(node):
        if id(sub) in called:
            continue
        label = (sub.id if isinstance(sub, ast.Name) else sub.attr if isinstance(sub, ast.Attribute)
                 else sub.value if isinstance(sub, ast.Constant) and isinstance(sub.value, str) else None)
        if label and DURATION.search(label):
            return True
    return False


def _positive_number(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(
        node.value, bool) and node.value > 0


def _compare_problems(test: ast.expr, tainted: set[str]) -> list[str]:
    found = []
    for cmp in (n for n in ast.walk(test) if isinstance(n, ast.Compare)):
        operands = [cmp.left, *cmp.comparators]
        for op, left, right in zip(cmp.ops, operands, operands[1:]):
            if not isinstance(op, ORDERING):
                continue
            if _reads_clock(left, tainted) or _reads_clock(right, tainted):
                found.append(f"line {cmp.lineno}: compares a clock reading")
            elif (_positive_number(right) and _duration_like(left)) or (_positive_number(left) and _duration_like(right)):
                found.append(f"line {cmp.lineno}: compares a duration with a number")
    return found


def _clock_strings(node: ast.AST) -> bool:
    return any(isinstance(s, ast.Constant) and isinstance(s.value, str) and CLOCK_TEXT.search(s.value)
               for s in ast.walk(node))


def _string_problems(func: ast.AST, tree: ast.Module) -> list[str]:
    """A clock read in a script the test runs: its own strings, module constants and helpers it names."""
    named = {n.id for n in ast.walk(func) if isinstance(n, ast.Name)}
    found = ["a script in the test reads the clock"] if _clock_strings(func) else []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            names = {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.FunctionDef) and not node.name.startswith("test_"):
            names = {node.name}
        else:
            continue
        if names & named and _clock_strings(node):
            found.append(f"{sorted(names & named)[0]} (line {node.lineno}) runs a script that reads the clock")
    return found


def _tests(tree: ast.Module):
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            yield node
        elif isinstance(node, ast.ClassDef):
            yield from (sub for sub in node.body if isinstance(sub, ast.FunctionDef) and sub.name.startswith("test_"))


def wall_clock_asserts(source: str, name: str = "<test>") -> list[str]:
    """Every wall-clock assert among the tests of one test module's source (whatever their marks)."""
    tree = ast.parse(source)
    problems = []
    for func in _tests(tree):
        tainted = _tainted_names(func)
        found = [p for a in ast.walk(func) if isinstance(a, ast.Assert) for p in _compare_problems(a.test, tainted)]
        found += _string_problems(func, tree)
        problems += [f"{name}::{func.name}: {p}" for p in found]
    return problems


def test_no_test_asserts_a_wall_clock_time():
    problems = []
    for path in sorted(set(TESTS.rglob("test_*.py")) - {Path(__file__).resolve()}):  # this file's samples aside
        rel = path.relative_to(TESTS).as_posix()
        found = wall_clock_asserts(path.read_text(), rel)
        problems += [p for p in found if (rel, p.split("::")[1].split(":")[0]) not in ALLOWED]
    assert not problems, "wall-clock asserts in the suite (move them to a benchmark):\n" + "\n".join(problems)


def test_every_allowed_clock_read_still_exists():
    """An exemption whose test no longer reads the clock is removed, so the list stays honest."""
    for (rel, name), _reason in ALLOWED.items():
        assert any(p.startswith(f"{rel}::{name}:") for p in wall_clock_asserts((TESTS / rel).read_text(), rel))


@pytest.mark.parametrize("body", [
    "start = time.perf_counter()\n    work()\n    assert time.perf_counter() - start < 1.0",
    "t0 = time.monotonic()\n    work()\n    elapsed = time.monotonic() - t0\n    assert elapsed < 10, elapsed",
    "start = perf_counter()\n    took = perf_counter() - start\n    ms = took * 1000\n    assert ok and ms <= 5",
    "assert table['seconds'] < 0.9",
    "assert result.elapsed_s >= 1.0",
    "out = run('import time; t = time.perf_counter(); print(time.perf_counter() - t)')\n    assert out",
    "assert run(SCRIPT)",
    "assert helper()",
])
def test_the_scan_finds_each_kind_of_wall_clock_assert(body):
    module = ("import pytest, time\nfrom time import perf_counter\n"
              "SCRIPT = 'import time; start = time.monotonic()'\n"
              "def helper():\n    return run('x = time.time()')\n")
    test = f"def test_it():\n    {body}\n"
    assert len(wall_clock_asserts(module + test)) == 1
    assert len(wall_clock_asserts(module + "@pytest.mark.slow\n" + test)) == 1  # slow and browser tests too
    assert len(wall_clock_asserts(module + "pytestmark = [pytest.mark.browser]\n" + test)) == 1


@pytest.mark.parametrize("body", [
    "assert estimate.seconds > other.seconds",  # estimates, not clocks
    "assert timings['steps_s'] > 0",  # measured at all
    "assert time.sleep(0) is None and deadline_met",
    "assert len(table) < 3",
    "assert thread_wait_s(30, threads=2) > 20",  # an estimate's function
])
def test_the_scan_leaves_other_asserts_alone(body):
    assert wall_clock_asserts(f"import time\ndef test_it():\n    {body}\n") == []
