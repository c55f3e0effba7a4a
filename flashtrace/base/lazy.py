"""Package names that load on first use (PEP 562): a package's ``__init__`` can name what it offers
without importing torch, so light parts (the built-in model names, the method registry) load at once."""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Callable


def lazy_exports(package: str, where: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for `package`, whose name ``n`` lives in module ``where[n]``, written as
    in a relative import (``".span"``, ``"..kernels.proximity"``); a name, once loaded, is stored in the
    package so later lookups are plain attribute reads.

    Args:
        package: The package's dotted name (its ``__name__``).
        where: For each name the package offers, the module it lives in, written as in a relative import.

    Returns:
        The module-level ``__getattr__`` (raising `AttributeError` for a name not in `where`) and ``__dir__``
        to assign in the package's ``__init__``.
    """
    def __getattr__(name: str):
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where[name], package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__
