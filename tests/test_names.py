"""Issue 18 item 8: no public name hides a module of its package or a `typing` name.

`flashtrace.trace` is the function (the Trace schema lives in `flashtrace.analysis.schema`), `attribution.proximity` is
the function (its module was merged into `kernels`), and the token sequence class is `TokenSequence`.
"""

import importlib
import pkgutil
import sys
import typing

import flashtrace


def _modules() -> list[str]:
    names = ["flashtrace"]
    for info in pkgutil.walk_packages(flashtrace.__path__, "flashtrace."):
        names.append(info.name)
    return names


def _submodules(package) -> set[str]:
    return {info.name for info in pkgutil.iter_modules(package.__path__)}


def test_trace_is_the_function_and_the_schema_module_has_its_own_name():
    schema = importlib.import_module("flashtrace.analysis.schema")
    assert callable(flashtrace.trace) and not isinstance(flashtrace.trace, type(schema))
    assert flashtrace.trace.__module__ == "flashtrace"
    assert flashtrace.Trace is schema.Trace and flashtrace.TraceValidationError is schema.TraceValidationError
    assert "trace" not in _submodules(flashtrace)  # no module under the function's name
    from flashtrace import Trace  # the documented import keeps working

    assert Trace is schema.Trace


def test_no_package_attribute_shadows_one_of_its_submodules():
    shadowed = []
    for name in _modules():
        module = importlib.import_module(name)
        if not hasattr(module, "__path__"):
            continue
        for info in pkgutil.iter_modules(module.__path__):
            full = f"{name}.{info.name}"
            importlib.import_module(full)
            if getattr(module, info.name) is not sys.modules[full]:
                shadowed.append(full)
    assert shadowed == []


def test_no_exported_name_is_a_typing_name():
    clashes = []
    for name in _modules():
        module = importlib.import_module(name)
        for public in getattr(module, "__all__", []):
            if hasattr(typing, public):
                clashes.append(f"{name}.{public}")
    assert clashes == []
    import flashtrace.engine.inputs as inputs

    assert not hasattr(inputs, "Sequence") and inputs.TokenSequence.__name__ == "TokenSequence"
    import flashtrace.engine.attribution as attribution

    assert callable(attribution.proximity) and "proximity" not in _submodules(attribution)
