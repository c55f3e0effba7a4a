"""Every third-party package the installed code imports is declared in pyproject.toml with bounds (a
lower and an upper one, or a pin), so a wheel installed without a checkout has what it imports."""

import ast
import importlib.metadata as metadata
import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
# imported only where the package is there by construction
NOT_DECLARED = {"IPython": "imported only inside a running Jupyter kernel (ipykernel brings it)"}


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _requirements(with_dev: bool = False) -> list[Requirement]:
    project = _project()
    extras = {k: v for k, v in project["optional-dependencies"].items() if with_dev or k != "dev"}
    return [Requirement(r) for r in project["dependencies"] + sum(extras.values(), [])]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _imported_modules() -> set[str]:
    files = [*(ROOT / "flashtrace").rglob("*.py"), ROOT / "app.py", *(ROOT / "pages").glob("*.py")]
    found = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m not in ("flashtrace", "__future__")}


def test_every_imported_package_is_declared():
    declared = {_norm(r.name) for r in _requirements()}
    owners = metadata.packages_distributions()
    missing = {}
    for module in sorted(_imported_modules() - set(NOT_DECLARED)):
        dists = {_norm(d) for d in owners.get(module, [module])}
        if not dists & declared:
            missing[module] = sorted(dists)
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"


def test_every_requirement_has_bounds_the_environment_meets():
    for req in _requirements(with_dev=True):
        if req.name == "flashtrace-studio":
            continue
        ops = {spec.operator for spec in req.specifier}
        assert "==" in ops or ({">=", "<"} <= ops), f"{req} needs a lower and an upper bound (or a pin)"
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            version = metadata.version(req.name)
            assert req.specifier.contains(version, prereleases=True), f"{req}: this environment has {version}"
