"""FlashTrace Studio: efficient, faithful multi-token attribution for reasoning LLMs.

Quick start::

    import flashtrace
    model = flashtrace.load_model("smollm2-135m")
    tr = flashtrace.trace(model, prompt="...", response="...", hops=1)
    tr.top_prompt_tokens(10)
"""

from typing import TYPE_CHECKING, Any, Sequence

from .base.lazy import lazy_exports
from .base.errors import FlashTraceError
from .base.install import version as _version
from .analysis.limits import DEFAULT_HOPS, DEFAULT_STOP_TOKENS
from .analysis.schema import Trace, TraceValidationError, register_views

# torch and transformers load on first use of a name that needs them (the app's first page stays fast)
_LAZY = {"LoadedModel": ".engine.models", "ModelLoadError": ".engine.models", "UnsupportedModelError": ".engine.models",
         "load_model": ".engine.models", "record_forward": ".engine.models", "Prepared": ".run.tracing",
         "attribute": ".run.tracing", "prepare": ".run.tracing", "notebook_figures": ".viz.notebook"}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)

if TYPE_CHECKING:  # for the annotations only: the engine loads on first use
    from transformers import GenerationConfig

    from .engine.models import LoadedModel


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


def trace(model: "LoadedModel | str", prompt: "str | list | Sequence[int]", response: "str | list | None" = None, *,
          hops: int = DEFAULT_HOPS, target: "str | tuple[int, int]" = "value", method: str = "flashtrace",
          steps: bool = False, stop_tokens: "str | list[str]" = DEFAULT_STOP_TOKENS, hop0: str = "answer",
          recursive: str = "reasoning+answer", threshold: float | None = None, title: str = "",
          options: dict | None = None, generate: bool = False, max_new_tokens: int = 256,
          chat_template: bool = True, reasoning_instruction: bool = False, do_sample: bool = False,
          temperature: float | None = None, top_p: float | None = None, seed: int | None = None,
          generation_config: "GenerationConfig | dict | None" = None, **generate_kwargs: Any) -> "Trace | list[Trace]":
    """Prepare and attribute in one call (`flashtrace.run.tracing.trace`; imports the engine on first use).

    Args:
        model: A `LoadedModel`, or a name for `load_model` (a built-in model, a tiny-<family> test model, a
            folder with config.json).
        prompt: A string, token ids (a tensor, array or list of ints), a chat-messages list, or a list of
            strings or messages lists (then `response` is a list too, or None to generate, and a list of
            Traces is returned).
        response: The text to explain, teacher-forced; None with ``generate=True``.
        hops: Recursive hops K (0-8): how far attribution is carried back through the reasoning. The default,
            0 (hop 0 alone), is the measured choice: on the Qwen models' own reasoning no K >= 1 was more faithful
            beyond its interval (docs/evaluation.md); ask for hops to follow the reasoning chain.
        target: What is explained: ``"value"`` (the answer's number or short phrase), ``"answer"`` (the answer
            line), ``"response"``, or token positions ``(start, end)``.
        method: A registered attribution method (``flashtrace``, ``ifr``, ``attention``, ``ig``, ...; captum's
            and inseq's names are aliases).
        steps: Also attribute every reasoning step (the hop graph's data).
        stop_tokens: A preset (``punctuation``, the default; ``paper``, the authors' set; ``none``) or a list of token
            texts given weight 0.
        hop0: ``answer`` (the target at hop 0, the paper's formulation) or ``generation`` (the whole response).
        recursive: Which generated tokens later hops re-attribute.
        threshold: The method's proximity threshold τ (None: off).
        title: A title stored in the trace.
        options: The method's declared options (checked before anything runs).
        generate: Let the model write the response.
        max_new_tokens: The most tokens generation may write.
        chat_template: Wrap the prompt in the model's chat template.
        reasoning_instruction: Ask for step-by-step reasoning and an "Answer:" line.
        do_sample: Sample instead of greedy decoding (with `temperature`, `top_p`, `seed`).
        temperature: Sampling temperature.
        top_p: Nucleus sampling mass.
        seed: Random seed of the sampling.
        generation_config: A transformers ``GenerationConfig`` (or dict) for ``generate``.
        **generate_kwargs: Any other setting of transformers' ``generate`` (``top_k``, ``num_beams``, ...),
            validated by transformers and recorded in the trace; `attribute`'s other keywords
            (``target_chars``, ``segment_boundaries``, ``progress``) go to it.

    Returns:
        A `Trace` (a list of them for a list of prompts).

    Raises:
        InputError: A bad argument (empty prompt, a target outside the response, hops outside 0-8, an unknown
            generation setting, ...), before the model runs.
        ResourceError: The sequence does not fit in memory (checked before the forward pass).
        ModelLoadError: `model` names a model that cannot be loaded.
    """
    from .run.tracing import trace as run

    return run(model, prompt, response, generate=generate, max_new_tokens=max_new_tokens,
               chat_template=chat_template, reasoning_instruction=reasoning_instruction, do_sample=do_sample,
               temperature=temperature, top_p=top_p, seed=seed, generation_config=generation_config,
               hops=hops, target=target, method=method, steps=steps, stop_tokens=stop_tokens, hop0=hop0,
               recursive=recursive, threshold=threshold, title=title, options=options, **generate_kwargs)


__version__ = _version()  # from the installed metadata (pyproject.toml is the one source)
__all__ = ["FlashTraceError", "LoadedModel", "ModelLoadError", "UnsupportedModelError", "load_model", "record_forward", "Trace",
           "TraceValidationError", "Prepared", "attribute", "prepare", "trace", "notebook_figures", "__version__"]
