"""FlashTrace Studio: efficient, faithful multi-token attribution for reasoning LLMs.

Quick start::

    import flashtrace
    model = flashtrace.load_model("smollm2-135m")
    tr = flashtrace.trace(model, prompt="...", response="...", hops=1)
    tr.top_prompt_tokens(10)
"""

from .models import LoadedModel, ModelLoadError, UnsupportedModelError, load_model, record_forward
from .trace import Trace, TraceValidationError
from .tracing import Prepared, attribute, prepare, trace

__version__ = "0.1.0"
__all__ = ["LoadedModel", "ModelLoadError", "UnsupportedModelError", "load_model", "record_forward", "Trace",
           "TraceValidationError", "Prepared", "attribute", "prepare", "trace", "__version__"]
