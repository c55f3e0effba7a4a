"""The test run's warning rules (issue 47): a DeprecationWarning raised from flashtrace's own code fails the
test that meets it; one from a library is not ours to fix and is ignored. The package keeps no shims for old
module paths (it is unreleased)."""

import importlib
import warnings

import pytest


def test_a_deprecation_from_flashtrace_code_is_an_error_in_the_test_run():
    with pytest.raises(DeprecationWarning, match="old name"):
        warnings.warn_explicit("old name", DeprecationWarning, "units.py", 1, module="flashtrace.base.units")


def test_a_deprecation_from_a_library_is_ignored():
    warnings.warn_explicit("old name", DeprecationWarning, "module.py", 1, module="torch.nn.modules")


@pytest.mark.parametrize("old", ["flashtrace.schema", "flashtrace.models", "flashtrace.tracing"])
def test_old_module_paths_are_gone(old):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)
