"""The API reference (`make docs`): the site builds with no warning, and every public name has a docstring.

Public (docs/development.md, API reference): every module of the `flashtrace` package whose dotted path has
no part starting with `_`; in it, every function and class defined at the top level whose name does not start
with `_`, and every method and property of those classes whose name does not start with `_`; and every name
in `flashtrace.__all__`.
"""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import flashtrace

ROOT = Path(__file__).resolve().parents[1]
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def public_modules() -> list[Path]:
    out = []
    for path in sorted((ROOT / "flashtrace").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if not any(part.startswith("_") and part != "__init__" for part in parts):
            out.append(path)
    return out


def undocumented(path: Path) -> list[str]:
    """The public names in one module file without a docstring (the module itself as `<module>`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    missing = [] if ast.get_docstring(tree) else ["<module>"]
    for node in tree.body:
        if not isinstance(node, DEFINITIONS) or node.name.startswith("_"):
            continue
        if not ast.get_docstring(node):
            missing.append(node.name)
        if isinstance(node, ast.ClassDef):
            missing += [f"{node.name}.{member.name}" for member in node.body
                        if isinstance(member, DEFINITIONS) and not member.name.startswith("_")
                        and not ast.get_docstring(member)]
    return missing


def defined(path: Path) -> set[str]:
    return {node.name for node in ast.parse(path.read_text(encoding="utf-8")).body if isinstance(node, DEFINITIONS)}


def test_every_public_name_has_a_docstring():
    modules = public_modules()
    missing = {str(path.relative_to(ROOT)): names for path in modules if (names := undocumented(path))}
    assert not missing, f"public names without a docstring: {missing}"
    # each name of flashtrace.__all__ is defined in a public module (so checked above; torch is not imported)
    everywhere = set().union(*map(defined, modules))
    assert set(flashtrace.__all__) - {"__version__"} <= everywhere


def test_the_checker_finds_a_missing_docstring(tmp_path):
    source = tmp_path / "module.py"
    source.write_text('"""A module."""\n\ndef shown():\n    return 1\n\nclass Kept:\n    """A class."""\n\n'
                      '    def method(self):\n        pass\n\n    def _hidden(self):\n        pass\n\n'
                      'def _private():\n    pass\n')
    assert undocumented(source) == ["shown", "Kept.method"]


@pytest.mark.slow  # a whole mkdocs build: 7-12 s
def test_the_reference_builds_with_no_warning(tmp_path):
    """`mkdocs build --strict` (what `make docs` runs): a warning (a broken reference, a docstring
    mkdocstrings cannot read, a page missing from the nav) fails the build."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    site = tmp_path / "site" / "reference"
    page = (site / "flashtrace" / "index.html").read_text(encoding="utf-8")
    for name in ("flashtrace.trace", "flashtrace.Trace"):
        assert f'id="{name}"' in page, f"{name} is not in the API reference"
    for name, floor in (("flashtrace.engine.models.loading.load_model", "engine"),
                        ("flashtrace.run.tracing.attribute", "run")):  # documented once, linked from the first page
        assert f'id="{name}"' in (site / floor / "index.html").read_text(encoding="utf-8"), name
        assert f'href="../{floor}/#{name}"' in page, f"the flashtrace page does not link to {name}"


def _top_level_block(text: str, key: str) -> str:
    """The lines of the top-level YAML key `key` in `text` (its line and the indented lines under it)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{key}:"))
    end = next((i for i in range(start + 1, len(lines)) if lines[i] and not lines[i][0].isspace()
                and not lines[i].startswith("#")), len(lines))
    return "\n".join(lines[start:end])


def test_a_link_to_a_missing_heading_fails_the_strict_build_and_github_style_anchors_resolve(tmp_path):
    """With the site's own link validation and heading anchors: a link to a heading that does not exist fails
    `mkdocs build --strict`, and a link written with GitHub's anchor (``--`` where a "→" was) resolves."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "b.md").write_text("# B\n\n## Pages and Compare → Methods (issue 28)\n\ntext\n")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}

    def build(link: str) -> subprocess.CompletedProcess:
        (docs / "index.md").write_text(f"# A\n\nSee [there]({link}).\n")
        (tmp_path / "mkdocs.yml").write_text("site_name: t\nstrict: true\n" + _top_level_block(config, "validation")
                                             + "\n" + _top_level_block(config, "markdown_extensions") + "\n")
        return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)

    good = build("b.md#pages-and-compare--methods-issue-28")
    assert good.returncode == 0, good.stderr[-2000:]
    bad = build("b.md#no-such-heading")
    assert bad.returncode != 0 and "no-such-heading" in bad.stderr


def test_flashtrace_trace_names_attributes_options_with_the_same_defaults():
    """`flashtrace.trace` shows `hops`, `target` and the rest in its signature (not hidden in ``**options``), each
    with `attribute`'s own default and its generation keywords with `prepare`'s, and documents every one."""
    import inspect

    from flashtrace.run.tracing import attribute, prepare

    mine = inspect.signature(flashtrace.trace).parameters
    for source, names in ((attribute, ("hops", "target", "method", "steps", "stop_tokens", "hop0", "recursive",
                                       "threshold", "title", "options")),
                          (prepare, ("max_new_tokens", "chat_template", "reasoning_instruction", "do_sample",
                                     "temperature", "top_p", "seed"))):
        theirs = inspect.signature(source).parameters
        for name in names:
            assert mine[name].default == theirs[name].default, name
    documented = flashtrace.trace.__doc__
    assert all(f"        {name}:" in documented or name == "generate_kwargs" for name in mine)
    assert "Returns:" in documented and "Raises:" in documented
