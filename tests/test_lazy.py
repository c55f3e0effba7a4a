"""Names a package loads on first use (`flashtrace.base.lazy`): the right object, kept once loaded, listed by
dir(), and an unknown name refused with Python's usual message; every lazy name resolves, on a floor its package
may import (the import linter cannot see string imports)."""

import importlib

import pytest


def _fresh():
    """The package with its lazy names built again (as at a first import)."""
    return importlib.reload(importlib.import_module("flashtrace.engine.attribution"))


def test_a_lazy_name_is_the_real_object_and_is_kept():
    package = _fresh()
    from flashtrace.engine.attribution.span import span_aggregate

    package.__dict__.pop("span_aggregate", None)  # as if never used
    assert package.span_aggregate is span_aggregate
    assert package.__dict__["span_aggregate"] is span_aggregate  # later lookups are plain reads


def test_dir_lists_loaded_and_lazy_names_and_unknown_names_are_refused():
    package = _fresh()
    package.__dict__.pop("recursive_hops", None)  # not loaded yet: still listed
    names = dir(package)
    assert names == sorted(names) and {"span_aggregate", "recursive_hops", "__name__"} <= set(names)
    with pytest.raises(AttributeError, match=r"^module 'flashtrace.engine.attribution' has no attribute 'nope'$"):
        package.nope  # noqa: B018


def test_flashtrace_trace_takes_every_parameter_of_the_real_one_with_its_default():
    """The top-level `trace` (lazy: the engine loads on first use) names what `run.tracing.trace` names, with the
    same kinds and defaults; it also names `attribute`'s keywords the real one takes through ``**options``."""
    import inspect

    import flashtrace
    from flashtrace.run.tracing import trace as real

    mine = inspect.signature(flashtrace.trace).parameters
    for name, p in inspect.signature(real).parameters.items():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            assert any(q.kind is inspect.Parameter.VAR_KEYWORD for q in mine.values())
            continue
        assert (mine[name].kind, mine[name].default) == (p.kind, p.default), name


def _floors() -> list[set[str]]:
    """The layers of `.importlinter`'s floors contract, top first: each a set of package names."""
    import configparser
    from pathlib import Path

    config = configparser.ConfigParser()
    config.read(Path(__file__).resolve().parents[1] / ".importlinter")
    lines = config["importlinter:contract:floors"]["layers"].split("\n")
    return [{name.strip() for name in line.split("|")} for line in lines if line.strip()]


def _floor_of(module: str, floors: list[set[str]]) -> int | None:
    return next((i for i, layer in enumerate(floors) for p in layer if module == p or module.startswith(p + ".")),
                None)


def test_every_lazy_name_resolves_and_lives_on_its_packages_floor_or_below():
    """The import linter cannot see a name loaded by a string (`lazy_exports`): every such name is resolved
    here, and its module must be one the package may import under the floors contract (the root package, the
    public API above every floor, may name any)."""
    import ast
    from pathlib import Path

    floors, root, checked = _floors(), Path(__file__).resolve().parents[1], 0
    for init in sorted((root / "flashtrace").rglob("__init__.py")):
        tree = ast.parse(init.read_text())
        if "lazy_exports" not in init.read_text():
            continue
        package = ".".join(init.relative_to(root).parent.parts)
        mapping = next(ast.literal_eval(node.value) for node in ast.walk(tree) if isinstance(node, ast.Assign)
                       and isinstance(node.value, ast.Dict) and node.value.keys
                       and any(isinstance(t, ast.Name) and t.id in ("_WHERE", "_LAZY") for t in node.targets))
        module = importlib.import_module(package)
        for name, where in mapping.items():
            target = importlib.util.resolve_name(where, package)
            assert getattr(importlib.import_module(target), name) is getattr(module, name), (package, name)
            mine, theirs = _floor_of(package, floors), _floor_of(target, floors)
            assert mine is None or theirs >= mine, f"{package}.{name} loads {target}, a floor above it"
            checked += 1
    assert checked >= 30  # the root package's API and the engine's two packages
