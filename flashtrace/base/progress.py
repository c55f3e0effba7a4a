"""Progress bars in a Jupyter kernel without ipywidgets.

transformers and huggingface_hub import `tqdm.auto`. In a Jupyter kernel without ipywidgets, that import
prints tqdm's "IProgress not found" warning and then uses plain text bars. `plain_bars_without_widgets`
imports it first with that one warning silenced, so a notebook gets the plain bars without the warning;
with ipywidgets installed, or outside Jupyter, it changes nothing.
"""

import importlib.util
import sys
import warnings


def plain_bars_without_widgets() -> None:
    """Import `tqdm.autonotebook` quietly when ipywidgets is missing (plain text bars, no warning)."""
    if "tqdm.autonotebook" in sys.modules or importlib.util.find_spec("ipywidgets") is not None:
        return
    from tqdm import TqdmWarning

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="IProgress not found", category=TqdmWarning)
        import tqdm.autonotebook  # noqa: F401 - imported for its choice of bar, made once per process
