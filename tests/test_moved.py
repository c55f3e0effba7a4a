"""The package moved into floor folders (0.2): the old module paths keep working for one release, each
as the very module at its new path (not a copy), with a DeprecationWarning that names the new path."""

import importlib
import sys
import warnings

import pytest

from flashtrace._moved import MOVED, new_name


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_path_is_the_new_module_and_warns(old):
    sys.modules.pop(old, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])
    assert any(issubclass(w.category, DeprecationWarning) and MOVED[old] in str(w.message) for w in caught)


def test_a_moved_package_s_submodule_is_not_loaded_twice():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from flashtrace.models.families import spec_for as old
        from flashtrace.schema import Trace as old_trace
    from flashtrace.analysis.schema import Trace
    from flashtrace.engine.models.families import spec_for

    assert old is spec_for and old_trace is Trace
    assert sys.modules["flashtrace.engine.models.families"].__spec__.name == "flashtrace.engine.models.families"


def test_names_that_did_not_move_are_left_to_the_normal_import():
    assert new_name("flashtrace.viz.heatmap") is None and new_name("flashtrace.evaluate") is None
    assert new_name("flashtrace.models.loading") == "flashtrace.engine.models.loading"
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("flashtrace.models.no_such_module")
