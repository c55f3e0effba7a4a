"""The API reference documents every public function in full (issue 49 item 6): a typed signature, and a
Google-style docstring whose Args name every parameter (and nothing else), with Returns (or Yields) unless it
returns None and Raises when the function raises an error itself.

Public as in `tests/test_api_reference.py`: every top-level function and every method of a top-level class (names
not starting with ``_``; properties are attributes), of every module whose dotted path has no part starting with ``_``. The docstrings are parsed by griffe, the parser mkdocstrings
renders docs/reference/ with, statically (nothing is imported).
"""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest

from tests.test_api_reference import ROOT, public_modules

SECTIONS = {"parameters": "Args", "returns": "Returns", "yields": "Yields", "raises": "Raises"}


def _raises_itself(node: ast.FunctionDef) -> bool:
    """Whether the body raises a named error (not a bare re-raise), outside any function defined inside it."""
    stack = list(node.body)
    while stack:
        item = stack.pop()
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(item, ast.Raise) and item.exc is not None:
            return True
        stack.extend(ast.iter_child_nodes(item))
    return False


def _yields(node: ast.FunctionDef) -> bool:
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(node))


def _decorators(node: ast.FunctionDef) -> list[str]:
    return [ast.unparse(d) for d in node.decorator_list]


def _parameters(node: ast.FunctionDef, method: bool = False) -> list[ast.arg]:
    """The parameters a caller passes: a method's first (self or cls) is not one, unless it is a staticmethod."""
    a = node.args
    named = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    if method and "staticmethod" not in _decorators(node):
        named = named[1:]
    if a.vararg:
        named.append(a.vararg)
    if a.kwarg:
        named.append(a.kwarg)
    return named


def _public_functions(tree: ast.Module) -> list[tuple[str, ast.FunctionDef, bool]]:
    """``(name, node, is a method)`` of every public top-level function and every public method of a public class
    (properties are attributes: their docstring says what they hold)."""
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            out.append((node.name, node, False))
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for member in node.body:
                if (isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and not member.name.startswith("_")
                        and not any(d == "property" or d.endswith((".setter", "cached_property"))
                                    for d in _decorators(member))):
                    out.append((f"{node.name}.{member.name}", member, True))
    return out


def _sections(docstring: str) -> dict[str, list[str]]:
    """``{section kind: names}`` of a Google-style docstring (griffe's parser, its warnings silenced)."""
    from griffe import Docstring

    logging.getLogger("griffe").setLevel(logging.ERROR)
    out: dict[str, list[str]] = {}
    for section in Docstring(docstring, parser="google").parse():
        kind = section.kind.value
        values = section.value if isinstance(section.value, list) else [section.value]
        out.setdefault(kind, []).extend(str(getattr(v, "name", "") or "").lstrip("*") for v in values)
    return out


def problems(path: Path) -> list[str]:
    """What the public functions and methods of one module file miss, one line each (empty when complete)."""
    out = []
    for name, node, method in _public_functions(ast.parse(path.read_text(encoding="utf-8"))):
        params = _parameters(node, method)
        untyped = [p.arg for p in params if p.annotation is None]
        if untyped:
            out.append(f"{name}: parameters without a type: {', '.join(untyped)}")
        if node.returns is None:
            out.append(f"{name}: no return type")
        sections = _sections(ast.get_docstring(node) or "")
        documented = sections.get("parameters", [])
        missing = [p.arg for p in params if p.arg not in documented]
        if missing:
            out.append(f"{name}: Args misses {', '.join(missing)}")
        stale = sorted(set(documented) - {p.arg for p in params})
        if stale:
            out.append(f"{name}: Args names {', '.join(stale)}, not a parameter")
        returns_none = isinstance(node.returns, ast.Constant) and node.returns.value is None
        if _yields(node):
            if "yields" not in sections:
                out.append(f"{name}: no Yields section")
        elif not returns_none and "returns" not in sections:
            out.append(f"{name}: no Returns section")
        if _raises_itself(node) and "raises" not in sections:
            out.append(f"{name}: raises but has no Raises section")
    return out


@pytest.mark.parametrize("path", public_modules(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_public_function_has_a_typed_signature_and_args_returns_raises(path):
    assert problems(path) == []


def test_the_checker_names_what_a_docstring_misses(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('''
def good(a: int, *rest: str, flag: bool = False) -> int:
    """Add.

    Args:
        a: The number.
        *rest: More.
        flag: A switch.

    Returns:
        The sum.

    Raises:
        ValueError: When negative.
    """
    if a < 0:
        raise ValueError(a)
    return a


def bad(a, b: int):
    """Prose only, naming `a` and `b`."""
    raise ValueError(b)


def stale(a: int) -> None:
    """Do.

    Args:
        a: One.
        gone: Removed.
    """


class Box:
    """A box."""

    def put(self, item: str) -> None:
        """Put one in.

        Args:
            item: What.
        """

    @staticmethod
    def make(size) -> "Box":
        """Make one."""

    @property
    def full(self) -> bool:
        """Whether it is full."""
        return True


def gen(n: int) -> "Iterator[int]":
    """Count.

    Args:
        n: How many.
    """
    yield from range(n)
''')
    assert problems(module) == [
        "bad: parameters without a type: a", "bad: no return type", "bad: Args misses a, b",
        "bad: no Returns section", "bad: raises but has no Raises section",
        "stale: Args names gone, not a parameter", "Box.make: parameters without a type: size",
        "Box.make: Args misses size", "Box.make: no Returns section", "gen: no Yields section"]
