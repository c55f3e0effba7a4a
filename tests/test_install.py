"""What is installed (`flashtrace.base.install`) and progress bars in a notebook (`flashtrace.base.progress`)."""

import importlib.machinery
import importlib.util
import sys
import tomllib
import types
import warnings
from importlib import metadata
from pathlib import Path

import tqdm.std

import flashtrace
from flashtrace.base import install
from flashtrace.base.progress import plain_bars_without_widgets

ROOT = Path(__file__).resolve().parents[1]


def test_the_version_is_the_one_the_project_declares():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert install.version() == declared == flashtrace.__version__


def test_a_checkout_never_installed_reads_as_unknown_version(monkeypatch):
    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    assert install.version() == "0+unknown"


def test_the_hint_names_the_wheel_of_this_version_with_the_extra(monkeypatch):
    monkeypatch.setattr(install, "version", lambda: "1.2.3")
    hint = install.extra_hint("ray")
    assert hint == ("install the wheel again with the ray extra: "
                    "pip install 'flashtrace_studio-1.2.3-py3-none-any.whl[ray]' (README, Install)")


def _in_a_kernel_without_widgets(monkeypatch, widgets: bool = False):
    """What tqdm.autonotebook sees in a Jupyter kernel (ipykernel's shell loaded), ipywidgets present or not;
    tqdm's notebook modules not imported yet."""
    monkeypatch.setitem(sys.modules, "ipykernel.zmqshell", types.ModuleType("ipykernel.zmqshell"))
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: None))
    for name in ("tqdm.autonotebook", "tqdm.notebook"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    find_spec = importlib.util.find_spec
    spec = importlib.machinery.ModuleSpec("ipywidgets", None)
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: (spec if widgets else None) if name == "ipywidgets" else find_spec(name, *a))


def _iprogress_warnings(call) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught if "IProgress not found" in str(w.message)]


def test_a_kernel_without_ipywidgets_gets_plain_bars_and_no_iprogress_warning(monkeypatch):
    _in_a_kernel_without_widgets(monkeypatch)
    assert _iprogress_warnings(lambda: __import__("tqdm.autonotebook")), "the setup reproduces tqdm's warning"
    _in_a_kernel_without_widgets(monkeypatch)
    assert _iprogress_warnings(plain_bars_without_widgets) == []
    assert sys.modules["tqdm.autonotebook"].tqdm is tqdm.std.tqdm  # plain text bars chosen once for the process


def test_with_ipywidgets_the_bars_are_left_to_tqdm(monkeypatch):
    _in_a_kernel_without_widgets(monkeypatch, widgets=True)
    plain_bars_without_widgets()
    assert "tqdm.autonotebook" not in sys.modules  # tqdm picks its widget bars itself later
