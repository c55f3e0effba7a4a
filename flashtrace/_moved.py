"""Old module paths, kept for one release (0.2) after the package moved into floor folders.

``import flashtrace.schema`` (or ``flashtrace.models.loading``, ...) still works: a finder on
``sys.meta_path`` answers an old name with the module at its new path (the same object, not a copy),
with a `DeprecationWarning` naming the new path. Remove this table in the release after next.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings

MOVED = {  # old path -> new path (a package's submodules follow it)
    "flashtrace.errors": "flashtrace.base.errors",
    "flashtrace._lazy": "flashtrace.base.lazy",
    "flashtrace.fileio": "flashtrace.base.fileio",
    "flashtrace.models": "flashtrace.engine.models",
    "flashtrace.attribution": "flashtrace.engine.attribution",
    "flashtrace.inputs": "flashtrace.engine.inputs",
    "flashtrace.estimate": "flashtrace.engine.estimate",
    "flashtrace.schema": "flashtrace.analysis.schema",
    "flashtrace.limits": "flashtrace.analysis.limits",
    "flashtrace.segments": "flashtrace.analysis.segments",
    "flashtrace.graph": "flashtrace.analysis.graph",
    "flashtrace.compare": "flashtrace.analysis.compare",
    "flashtrace.story": "flashtrace.analysis.story",
    "flashtrace.library": "flashtrace.store.library",
    "flashtrace.library_index": "flashtrace.store.index",
    "flashtrace.gallery": "flashtrace.store.gallery",
    "flashtrace.app_files": "flashtrace.store.app_files",
    "flashtrace.tracing": "flashtrace.run.tracing",
    "flashtrace.batch": "flashtrace.run.batch",
    "flashtrace.distributed": "flashtrace.run.distributed",
    "flashtrace.bench": "flashtrace.run.bench",
    "flashtrace.notebook": "flashtrace.viz.notebook",
    "flashtrace.app_state": "flashtrace.app.state",
    "flashtrace.app_methods": "flashtrace.app.methods",
    "flashtrace.ui": "flashtrace.app.ui",
    "flashtrace.export_ui": "flashtrace.app.export",
    "flashtrace.glossary": "flashtrace.app.glossary",
    "flashtrace.commands": "flashtrace.cli.commands",
    "flashtrace.attribution.kernels": "flashtrace.engine.kernels.proximity",
    "flashtrace.models.softmax_cpu": "flashtrace.engine.kernels.softmax",
}


def new_name(old: str) -> str | None:
    """The current path of module `old`, or None when it did not move."""
    parts = old.split(".")
    for n in range(len(parts), 1, -1):
        prefix = ".".join(parts[:n])
        if prefix in MOVED:
            return ".".join([MOVED[prefix], *parts[n:]])
    return None


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finder and loader for the old paths: the module is the one at the new path."""

    def find_spec(self, fullname, path=None, target=None):
        new = new_name(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, loader_state=new)

    def create_module(self, spec):
        new = spec.loader_state
        warnings.warn(f"{spec.name} moved to {new}; the old path goes in the release after next",
                      DeprecationWarning, stacklevel=3)
        module = importlib.import_module(new)
        spec.loader_state = (new, module.__spec__)
        return module

    def exec_module(self, module):
        module.__spec__ = module.__spec__.loader_state[1]  # the import system set the old name's spec: undo


def install() -> None:
    """Put the finder on ``sys.meta_path`` once."""
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.insert(0, _Alias())  # before the path finder, which would load a second copy
