"""FlashTrace Studio: efficient, faithful multi-token attribution for reasoning LLMs.

Quick start::

    import flashtrace
    model = flashtrace.load_model("smollm2-135m")
    tr = flashtrace.trace(model, prompt="...", response="...", hops=1)
    tr.top_prompt_tokens(10)
"""

from .base.lazy import lazy_exports
from .base.errors import FlashTraceError
from .base.install import version as _version
from .analysis.schema import Trace, TraceValidationError, register_views

# torch and transformers load on first use of a name that needs them (the app's first page stays fast)
_LAZY = {"LoadedModel": ".engine.models", "ModelLoadError": ".engine.models", "UnsupportedModelError": ".engine.models",
         "load_model": ".engine.models", "record_forward": ".engine.models", "Prepared": ".run.tracing",
         "attribute": ".run.tracing", "prepare": ".run.tracing", "notebook_figures": ".viz.notebook"}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)


def _notebook_view(name: str):
    def view(*args, **kwargs):
        from .viz import notebook  # Plotly and pandas load when a trace is first drawn

        return getattr(notebook, name)(*args, **kwargs)

    view.__name__ = name
    return view


def _repr_line(trace: Trace) -> str:
    from .analysis.summary import trace_line  # numpy and the analysis load when a trace is first shown

    return trace_line(trace)


register_views(repr=_repr_line)
register_views(**{view: _notebook_view(function) for view, function in (
    ("html", "trace_html"), ("heatmap", "heatmap"), ("hop_graph", "hop_graph"), ("compare_depths", "compare_depths"),
    ("to_pandas", "to_pandas"), ("show", "show"))})


def trace(model, prompt, response=None, *, generate=False, max_new_tokens=256, chat_template=True,
          reasoning_instruction=False, do_sample=False, temperature=None, top_p=None, seed=None, generation_config=None,
          **options):
    """Prepare and attribute in one call (`flashtrace.run.tracing.trace`; imports the engine on first use).

    `model`: a `LoadedModel` or a name for `load_model`. `prompt`: a string, token ids (a tensor, array or list
    of ints), a chat-messages list, or a list of strings or messages lists (then `response` is a list too, or
    None to generate, and a list of Traces is returned).
    `generate=True` lets the model write the response (greedy, or sampled with ``do_sample=True`` and
    `temperature`, `top_p`, `seed`; at most `max_new_tokens`; any other setting of transformers' ``generate``
    as `generation_config` or as a keyword: ``top_k``, ``num_beams``, ...). `options` that `attribute` takes go
    to it: ``hops``, ``target``, ``method``, ``steps``, ``stop_tokens``, ``hop0``, ``title``, ``options``, ... ."""
    from .run.tracing import trace as run

    return run(model, prompt, response, generate=generate, max_new_tokens=max_new_tokens,
               chat_template=chat_template, reasoning_instruction=reasoning_instruction, do_sample=do_sample,
               temperature=temperature, top_p=top_p, seed=seed, generation_config=generation_config, **options)


__version__ = _version()  # from the installed metadata (pyproject.toml is the one source)
__all__ = ["FlashTraceError", "LoadedModel", "ModelLoadError", "UnsupportedModelError", "load_model", "record_forward", "Trace",
           "TraceValidationError", "Prepared", "attribute", "prepare", "trace", "notebook_figures", "__version__"]
