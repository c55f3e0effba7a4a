"""The gallery's synthetic benchmark traces and how they are built (``flashtrace gallery``): `GALLERY` lists one
example of each task family, a free-form prompt and a long retrieval trace of more than 2,000 tokens, all
SmolLM2-135M-Instruct reading reasoning templated by the task generators (the model did not write it), with
step-level attribution (for the hop graph) and `HOPS` hops (for the hop-depth comparison). The gallery's lead,
reasoning a built-in model wrote itself, is built from a spec file (`flashtrace.evaluate.gallery_spec`). Each
trace also stores the Story page's faithfulness check and the interventions (step influence by removal; top,
random and gold sentence removal). Floats are rounded to 6 significant digits to keep the files small.
`flashtrace.store.gallery` lists and opens what this writes.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..analysis.limits import GALLERY_HOP0, GALLERY_STOP_TOKENS
from ..analysis.schema import Trace
from ..store.gallery import GalleryItem, gallery_dir, write_index
from .tasks import make_example
from ..base.errors import InputError

if TYPE_CHECKING:
    from ..engine.models import LoadedModel

HOPS = 3

FREE_FORM_PROMPT = ("A train leaves at 3 pm and the trip takes 2 hours. The café at the station closes at 6 pm. "
                    "Can a passenger on that train still get a coffee there after arriving?")
FREE_FORM_RESPONSE = ("<think>\nThe train leaves at 3 pm.\nThe trip takes 2 hours, so it arrives at 5 pm.\n"
                      "The café closes at 6 pm, which is after 5 pm.\nSo there is one hour left to get a coffee.\n"
                      "</think>\nYes: the train arrives at 5 pm and the café is open until 6 pm.")


@dataclass(frozen=True)
class GallerySpec:
    """How one gallery trace is made: a task example (`task`, `seed`, `length`, `options`) or a
    free-form `prompt` + `response`; `hop0` is the span the gallery was built with (`GALLERY_HOP0`)."""

    name: str
    title: str
    description: str
    task: str | None = None
    seed: int = 0
    length: int | None = None
    options: dict = field(default_factory=dict)
    prompt: str | None = None
    response: str | None = None
    hop0: str = GALLERY_HOP0


GALLERY: tuple[GallerySpec, ...] = (
    GallerySpec("arithmetic", "Arithmetic word problem", "A 3-step word problem among distractor quantities; "
                "gold = the numbers the answer depends on.", task="arithmetic", seed=3, length=220, options={"steps": 3}),
    GallerySpec("vartrack", "Variable tracking", "A chain of 4 variable assignments among distractor chains; the "
                "reasoning restates the chain.", task="vartrack", seed=1, length=300, options={"hops": 4}),
    GallerySpec("multihop", "Multi-hop facts", "Person → birth city → country → letter count over a small "
                "synthetic knowledge text.", task="multihop", seed=2, length=300, options={"kind": "count"}),
    GallerySpec("needle", "Needle in a haystack", "One special magic number hidden in 600 tokens of filler.",
                task="needle", seed=4, length=600, options={"variant": "single"}),
    GallerySpec("free-form", "Free-form: can I get a coffee?", "A hand-written prompt with <think> reasoning and "
                "a one-line answer.", prompt=FREE_FORM_PROMPT, response=FREE_FORM_RESPONSE),
    GallerySpec("long-vartrack", "Long trace: variable tracking in 2,000+ tokens", "A 6-assignment chain hidden "
                "in about 2,200 tokens of filler: the long-trace demo.", task="vartrack", seed=7, length=2200,
                options={"hops": 6}),
)


def round_floats(value: Any, digits: int = 6) -> Any:
    """`value` (nested lists/dicts) with every float rounded to `digits` significant digits.

    Args:
        value: A float, or lists and dicts nesting them (other values pass unchanged), as JSON holds them.
        digits: The significant digits kept.

    Returns:
        A copy of `value` (new lists and dicts) with every float rounded.
    """
    if isinstance(value, float):
        return float(f"{value:.{digits}g}")
    if isinstance(value, list):
        return [round_floats(v, digits) for v in value]
    if isinstance(value, dict):
        return {k: round_floats(v, digits) for k, v in value.items()}
    return value


def build_trace(spec: GallerySpec, loaded: LoadedModel, progress: Callable[[int, int], None] | None = None) -> Trace:
    """Trace one gallery spec with `loaded` (teacher-forced, answer target, `HOPS` hops, step vectors), with
    its description (the card adds what the hops change, from the analysis), and the Story page's faithfulness
    check (answer log-probability after deleting the top 10 % of prompt tokens vs 10 % at random), and the
    interventions (each reasoning step removed; the top, 5 random and the gold prompt sentences removed).

    Args:
        spec: The gallery trace to make.
        loaded: The `LoadedModel` that reads the example.
        progress: Hears of the attribution's progress as (units done, units in all).

    Returns:
        The trace, floats rounded, with ``extra["gallery"]`` (task, description and, for a task example, its
        seed, length, options and gold), the faithfulness check and the interventions.
    """
    from ..run.interventions import intervene
    from ..run.tracing import attribute, prepare  # torch: only when building
    from .faithfulness import FAITHFULNESS_KEY, faithfulness_check

    extra = {"task": spec.task or "free-form", "description": spec.description}
    if spec.task:
        example = make_example(spec.task, spec.seed, spec.length, **spec.options)
        prompt, response = example.prompt, example.response
        extra.update(seed=spec.seed, length=spec.length, options=spec.options, gold=[list(g) for g in example.gold])
    else:
        prompt, response = spec.prompt, spec.response
    prepared = prepare(loaded, prompt, response)
    trace = attribute(prepared, target="answer", hops=HOPS, hop0=spec.hop0, stop_tokens=GALLERY_STOP_TOKENS,
                      steps=True, title=spec.title, progress=progress)
    data = round_floats(json.loads(trace.to_json()))
    data["extra"] = {"gallery": extra}
    rounded = Trace.from_dict(data)  # what ships: the check below reads exactly these numbers
    data["extra"][FAITHFULNESS_KEY] = round_floats(faithfulness_check(loaded, rounded))
    data["interventions"] = round_floats(intervene(loaded, rounded).model_dump())
    return Trace.from_dict(data)


def build_gallery(out: Path | None = None, model: str = "smollm2-135m", only: list[str] | None = None,
                  log: Callable[[str], None] = print) -> list[GalleryItem]:
    """Rebuild the gallery in `out` (default: `gallery_dir()`), writing each trace and the index.

    Args:
        out: The gallery folder (None: `gallery_dir()`).
        model: The model to load (a name or alias `load_model` takes).
        only: The names of the `GALLERY` entries to rebuild (None or empty: all); the index covers every trace
            in `out`.
        log: Hears one line per trace written (tokens, size, seconds).

    Returns:
        The index's items, as `store.gallery.write_index` writes them.

    Raises:
        InputError: When `only` names an entry `GALLERY` does not have.
    """
    from ..engine.models import load_model

    out = out or gallery_dir()
    specs = [s for s in GALLERY if not only or s.name in only]
    unknown = set(only or ()) - {s.name for s in GALLERY}
    if unknown:
        raise InputError(f"unknown gallery entries {sorted(unknown)}; known: {', '.join(s.name for s in GALLERY)}")
    loaded = load_model(model)
    for spec in specs:
        start = time.perf_counter()
        trace = build_trace(spec, loaded)
        path = trace.save(out / f"{spec.name}.json")
        log(f"{spec.name}: {trace.n_tokens} tokens, {path.stat().st_size / 1e3:.0f} kB, "
            f"{time.perf_counter() - start:.1f} s")
    return write_index(out, [s.name for s in GALLERY])


PRESETS = ("arithmetic", "vartrack", "multihop", "needle", "free-form")


def preset_text(name: str, seed: int = 0, length: int | None = None) -> tuple[str, str]:
    """``(prompt, response)`` of a preset: an example of a task family, or the free-form example.

    Args:
        name: One of `PRESETS`.
        seed: The task example's seed (the free-form example ignores it).
        length: The task example's length (None: the task's default; the free-form example ignores it).

    Returns:
        ``(prompt, response)``.

    Raises:
        InputError: When `name` is not a preset.
    """
    if name == "free-form":
        return FREE_FORM_PROMPT, FREE_FORM_RESPONSE
    if name not in PRESETS:
        raise InputError(f"unknown preset '{name}'; available: {', '.join(PRESETS)}")
    example = make_example(name, seed, length)
    return example.prompt, example.response
