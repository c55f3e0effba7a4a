"""Floor 1: loading models, family specs, and the per-layer recording.

The names below load on first use (`flashtrace.base.lazy`): ``flashtrace.engine.models.aliases``, the built-in model
names, imports without torch and transformers, so the command line's help can list them at once.
"""

from ...base.lazy import lazy_exports
from ...base.progress import plain_bars_without_widgets

plain_bars_without_widgets()  # before transformers imports tqdm.auto: no "IProgress not found" in a notebook

_WHERE = {
    "FamilySpec": ".families", "UnsupportedModelError": ".families", "spec_for": ".families",
    "supported_families": ".families", "MODEL_ALIASES": ".aliases", "LoadedModel": ".loading",
    "ModelLoadError": ".loading", "load_model": ".loading", "wrap_model": ".loading", "ResourceError": ".memory",
    "LayerRecord": ".recording", "Recording": ".recording", "record_forward": ".recording",
}
__all__ = list(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
