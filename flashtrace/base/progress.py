"""Progress bars in a Jupyter kernel without ipywidgets.

transformers and huggingface_hub import `tqdm.auto`. In a Jupyter kernel without ipywidgets, that import
prints tqdm's "IProgress not found" warning and then uses plain text bars. `plain_bars_without_widgets`
imports it first with its warnings silenced (that one is the only warning it gives: without ipywidgets it
stops at that warning and takes the plain bars), so a notebook gets the plain bars without the warning; with
ipywidgets installed, or outside Jupyter, it changes nothing.
"""

import importlib.util
import warnings


def plain_bars_without_widgets() -> None:
    """Import `tqdm.autonotebook` quietly when ipywidgets is missing (plain text bars, no warning). Its choice of
    bar is made once per process: an import after the first changes nothing."""
    if importlib.util.find_spec("ipywidgets") is not None:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import tqdm.autonotebook  # noqa: F401 - imported for its choice of bar
