"""Which URL query parameters each page's script reads, so that a browser test visits a page once per
distinct set of the values it reads: a parameter no script reads cannot change what the page does (the
script sees the URL only through ``st.query_params``), and each visit is a fresh session.

`READS` is written out by hand; `reads_in_code` finds the reads in the app's code, and
tests/app/test_url_params.py checks the two agree, so a page that starts reading a new parameter fails
that test instead of silently escaping the browser tests' crafted URLs."""

from __future__ import annotations

import ast
from pathlib import Path
from urllib.parse import parse_qsl

ROOT = Path(__file__).resolve().parents[2]

EVERY_PAGE = {"details"}  # ui.page_setup's Details toggle, on every page
# The parameters a page reads besides EVERY_PAGE, by its URL path ("" is the home page).
READS: dict[str, set[str]] = {
    "": set(),
    "Trace": set(),
    "Explore": {"trace", "hop", "view", "scale", "tokens", "at"},  # ui.trace_page, ui.synced, ui.heatmap_window
    "Hop_graph": {"trace", "keep", "inputs", "node"},  # ui.trace_page, ui.synced, query_params
    "Compare": {"trace"},  # ui.trace_page
    "Library": set(),
    "Evaluation": {"run", "task"},  # ui.synced
    "Story": {"trace", "step", "present"},  # ui.trace_picker / ui.url_trace, query_params
    "Glossary": set(),
}
FILES = {"": "app.py", "Trace": "pages/1_Trace.py", "Explore": "pages/2_Explore.py",
         "Hop_graph": "pages/3_Hop_graph.py", "Compare": "pages/4_Compare.py", "Library": "pages/5_Library.py",
         "Evaluation": "pages/6_Evaluation.py", "Story": "pages/7_Story.py", "Glossary": "pages/8_Glossary.py"}
# ui's helpers that read ``?trace=``, and what ui.heatmap_window reads when called without `param`
TRACE_HELPERS = {"trace_page", "trace_picker", "url_trace"}
HEATMAP_DEFAULT = "at"


def read_values(page: str, query: str) -> tuple:
    """The part of `query` (``?a=1&b=2`` or "") that page `page` reads, in a comparable form."""
    wanted = READS[page] | EVERY_PAGE
    return tuple(sorted((k, v) for k, v in parse_qsl(query.lstrip("?"), keep_blank_values=True) if k in wanted))


def runs_apart(page: str, queries: list[str]) -> list[str]:
    """The first of `queries` for each distinct set of values `page` reads (the others run it the same)."""
    seen: dict[tuple, str] = {}
    for query in queries:
        seen.setdefault(read_values(page, query), query)
    return list(seen.values())


def _name(node: ast.AST) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _constant(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def reads_in_code(path: Path, generic: tuple[str, ...] = ()) -> tuple[set[str], set[str], list[str]]:
    """In one source file: the parameter names read through ``st.query_params`` (get, [], in), ui.synced and
    ui.heatmap_window; the names of the functions it calls; and the reads whose name is not a constant or
    that take the whole ``query_params`` (outside the `generic` functions, ui's readers of a parameter
    their caller names), as ``line N``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names, calls, unknown = set(), set(), []
    skipped = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name in generic
               for n in ast.walk(f)}

    def found(value: str | None, node: ast.AST) -> None:
        if value is not None:
            names.add(value)
        elif id(node) not in skipped:
            unknown.append(f"line {node.lineno}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _name(node.value) == "query_params":
            found(_constant(node.slice), node)
        elif isinstance(node, ast.Compare) and any(_name(c) == "query_params" for c in node.comparators):
            found(_constant(node.left), node)
        elif isinstance(node, ast.Attribute) and _name(node.value) == "query_params" and node.attr != "get":
            found(None, node)  # to_dict(), clear(), ...: every parameter at once
        elif isinstance(node, ast.Call):
            func = _name(node.func)
            calls.add(func)
            keywords = {k.arg: k.value for k in node.keywords}
            if func == "get" and _name(node.func.value) == "query_params":
                found(_constant(node.args[0]) if node.args else None, node)
            elif func == "synced":
                found(_constant(node.args[2] if len(node.args) > 2 else keywords.get("param")), node)
            elif func == "heatmap_window":
                param = node.args[3] if len(node.args) > 3 else keywords.get("param", ast.Constant(HEATMAP_DEFAULT))
                if not (isinstance(param, ast.Constant) and param.value is None):
                    found(_constant(param), node)
    return names, calls, unknown
