"""Guard: no page interpolates data into a Streamlit element that renders Markdown unless it goes through
`ui.plain` (literal text) or `ui.code_text` (inline code). Numbers pass when they carry a format spec
(``{n:,}``, ``{k:d}``); anything else a page writes into a caption, alert, header, link or widget label is
a finding. The browser half (a hostile trace shown literally, no outside request) is in test_browser_safety.py."""

import ast
from pathlib import Path

import pytest

from flashtrace.app.ui import WORD_JOINER, plain

ROOT = Path(__file__).resolve().parents[2]
FILES = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")),  # every page, and every module that draws
         *(p for p in sorted((ROOT / "flashtrace").rglob("*.py")) if "import streamlit" in p.read_text(encoding="utf-8"))]
# elements whose first argument is rendered as Markdown
BODY_SINKS = {"caption", "error", "warning", "info", "success", "markdown", "subheader", "header", "title", "toast",
              "expander", "status", "spinner", "button", "checkbox", "toggle", "radio", "selectbox", "multiselect",
              "slider", "select_slider", "text_input", "text_area", "number_input", "download_button",
              "form_submit_button", "segmented_control", "file_uploader", "tabs", "write"}
LABEL_KWARGS = {"label", "help", "text", "placeholder"}
SAFE_CALLS = {"plain", "code_text", "help_link"}  # help_link: a constant text and a glossary link


def _called(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        f = node.func
        return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
    return None


def _unsafe_parts(node: ast.AST) -> list[ast.AST]:
    """The parts of a string expression that may carry unescaped data."""
    if isinstance(node, ast.Constant):
        return []
    if isinstance(node, ast.JoinedStr):
        out = []
        for value in node.values:
            if (isinstance(value, ast.FormattedValue) and value.format_spec is None
                    and _called(value.value) not in SAFE_CALLS):
                out.append(value.value)
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _unsafe_parts(node.left) + _unsafe_parts(node.right)
    if isinstance(node, ast.IfExp):
        return _unsafe_parts(node.body) + _unsafe_parts(node.orelse)
    if _called(node) in SAFE_CALLS:
        return []
    if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
        return [node]
    return []


def findings(source: str, name: str) -> list[str]:
    """One line per unescaped part; a line marked ``# md-ok: <reason>`` (constants only) is exempt."""
    lines = source.splitlines()
    out = []
    for node in ast.walk(ast.parse(source)):
        sink = _called(node)
        if sink is None:
            continue
        args = []
        if sink in BODY_SINKS and node.args and sink != "tabs":
            if sink != "write" or isinstance(node.args[0], (ast.JoinedStr, ast.BinOp)):  # st.write(df) is fine
                args.append(node.args[0])
        if sink == "tabs" and node.args and isinstance(node.args[0], (ast.List, ast.Tuple)):
            args.extend(node.args[0].elts)
        args.extend(kw.value for kw in node.keywords if kw.arg in LABEL_KWARGS)
        for arg in args:
            for part in _unsafe_parts(arg):
                if "# md-ok" in lines[part.lineno - 1]:
                    continue
                out.append(f"{name}:{part.lineno}: {ast.unparse(part)} reaches st.{sink} unescaped")
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_pages_pass_data_to_markdown_only_escaped(path):
    assert findings(path.read_text(encoding="utf-8"), path.name) == []


def test_the_guard_finds_unescaped_data():
    bad = ('st.caption(f"model {trace.model.name}")\nst.error("Cannot: " + msg)\nc.page_link(p, label=entry.name)\n'
           'st.subheader(title)\nst.warning(f"{n:,} ok {ui.plain(x)}")\n')
    found = findings(bad, "x.py")
    assert [f.split(":")[1] for f in found] == ["1", "2", "3", "4"], found


@pytest.mark.parametrize("text", ["![x](http://127.0.0.1:1/leak.png)", "[Click here](https://evil.example/login)",
                                  ":red[alarm]", "<img src=x onerror=alert(1)>", "**bold** _it_ `code` $x^2$",
                                  "a.b@example.com www.example.com", "back\\slash &amp; :material/home: :smile:"])
def test_plain_escapes_every_markdown_character(text):
    escaped = plain(text)
    unescaped = escaped.replace(WORD_JOINER, "")
    i = 0
    while i < len(unescaped):  # every ASCII punctuation character is preceded by a backslash
        ch = unescaped[i]
        if ch == "\\":
            assert unescaped[i + 1] in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", escaped
            i += 2
            continue
        assert not (ch.isascii() and not ch.isalnum() and not ch.isspace()), (ch, escaped)
        i += 1
    assert unescaped.replace("\\", "") == text.replace("\\", "")


def test_plain_keeps_lines_and_indentation_literal():
    assert plain("a\n    # b\r\nc") == "a  \n\u00a0\u00a0\u00a0\u00a0\\# b  \nc"
