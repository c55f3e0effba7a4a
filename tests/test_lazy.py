"""Names a package loads on first use (`flashtrace.base.lazy`): the right object, kept once loaded, listed by
dir(), and an unknown name refused with Python's usual message."""

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


def test_flashtrace_trace_has_the_real_signature():
    import inspect

    import flashtrace
    from flashtrace.run.tracing import trace as real

    def shape(function):
        return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]

    assert shape(flashtrace.trace) == shape(real)
