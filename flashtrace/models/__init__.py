"""Floor 1: loading models, family specs, and the per-layer recording."""

from .families import FamilySpec, UnsupportedModelError, spec_for, supported_families
from .loading import MODEL_ALIASES, LoadedModel, ModelLoadError, load_model, wrap_model
from .memory import ResourceError
from .recording import LayerRecord, Recording, record_forward

__all__ = ["FamilySpec", "UnsupportedModelError", "spec_for", "supported_families", "MODEL_ALIASES",
           "LoadedModel", "ModelLoadError", "ResourceError", "load_model", "wrap_model", "LayerRecord", "Recording",
           "record_forward"]
