"""The gallery: precomputed traces shipped in ``assets/gallery/`` so the app works with no model loaded.

`GALLERY` lists what is built: one example of each task family, a free-form prompt, a long retrieval
trace of more than 2,000 tokens, and four examples where deeper hops visibly change the prompt
attribution (found by searching task seeds; each card says from the data whether hops change the
picture), all from SmolLM2-135M-Instruct with step-level attribution (for the hop graph) and 3 hops (for
the hop-depth comparison). Each trace also stores the Story page's faithfulness check. ``flashtrace
gallery`` rebuilds them; floats are rounded to 6 significant digits to keep the files small.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .app_files import bundled_gallery
from ..base.fileio import atomic_write_text
from ..analysis.schema import Trace

GALLERY_ENV = "FLASHTRACE_GALLERY"
INDEX = "index.json"
HOPS = 3
CHANGE_K = 10  # the index records the top-10 overlap between K=0 and K=HOPS
CHANGED_OVERLAP = 0.7  # at or below: "deeper hops change the picture"

FREE_FORM_PROMPT = ("A train leaves at 3 pm and the trip takes 2 hours. The café at the station closes at 6 pm. "
                    "Can a passenger on that train still get a coffee there after arriving?")
FREE_FORM_RESPONSE = ("<think>\nThe train leaves at 3 pm.\nThe trip takes 2 hours, so it arrives at 5 pm.\n"
                      "The café closes at 6 pm, which is after 5 pm.\nSo there is one hour left to get a coffee.\n"
                      "</think>\nYes: the train arrives at 5 pm and the café is open until 6 pm.")


@dataclass(frozen=True)
class GallerySpec:
    """How one gallery trace is made: a task example (`task`, `seed`, `length`, `options`) or a
    free-form `prompt` + `response`."""

    name: str
    title: str
    description: str
    task: str | None = None
    seed: int = 0
    length: int | None = None
    options: dict = field(default_factory=dict)
    prompt: str | None = None
    response: str | None = None


GALLERY: tuple[GallerySpec, ...] = (
    GallerySpec("arithmetic", "Arithmetic word problem", "A 3-step word problem among distractor quantities; "
                "gold = the numbers the answer depends on.", task="arithmetic", seed=3, length=220, options={"steps": 3}),
    GallerySpec("vartrack", "Variable tracking", "A chain of 4 variable assignments among distractor chains; "
                "the reasoning restates the chain, so hops carry the answer back to the first value.",
                task="vartrack", seed=1, length=300, options={"hops": 4}),
    GallerySpec("multihop", "Multi-hop facts", "Person → birth city → country → letter count over a small "
                "synthetic knowledge text.", task="multihop", seed=2, length=300, options={"kind": "count"}),
    GallerySpec("needle", "Needle in a haystack", "One special magic number hidden in 600 tokens of filler.",
                task="needle", seed=4, length=600, options={"variant": "single"}),
    GallerySpec("free-form", "Free-form: can I get a coffee?", "A hand-written prompt with <think> reasoning and "
                "a one-line answer.", prompt=FREE_FORM_PROMPT, response=FREE_FORM_RESPONSE),
    GallerySpec("long-vartrack", "Long trace: variable tracking in 2,000+ tokens", "A 6-assignment chain hidden "
                "in about 2,200 tokens of filler: the long-trace demo.", task="vartrack", seed=7, length=2200,
                options={"hops": 6}),
    *(GallerySpec(f"needle-values-{seed}", f"Three magic numbers for one key (seed {seed})",
                  "Three special magic numbers for the same key in a short text; the reasoning quotes each needle "
                  "sentence before the answer lists the numbers, so later hops pass attribution from the quotes "
                  "back to the needles.", task="needle", seed=seed, length=100, options={"variant": "multivalue"})
      for seed in (14, 18, 46, 74)),
)


@dataclass(frozen=True)
class GalleryItem:
    """A gallery card: what the home page lists without reading the trace itself."""

    name: str
    title: str
    description: str
    task: str
    model: str
    n_tokens: int
    hops: int
    size: int
    overlap: float | None = None  # top-10 prompt-token overlap between K=0 and K=max (`compare.depth_change`)
    top_segment_changed: bool | None = None  # whether the top prompt segment differs between K=0 and K=max
    top_segment_k0: str | None = None
    top_segment_kmax: str | None = None


def gallery_dir() -> Path:
    """``$FLASHTRACE_GALLERY``, or the checkout's ``assets/gallery`` (the wheel's copy when installed)."""
    env = os.environ.get(GALLERY_ENV)
    return Path(env) if env else bundled_gallery()


def _item(name: str, trace: Trace, size: int) -> GalleryItem:
    from ..analysis.compare import depth_change

    info = trace.extra.get("gallery", {})
    change = depth_change(trace, k=CHANGE_K)
    return GalleryItem(name=name, title=trace.title, description=str(info.get("description", "")),
                       task=str(info.get("task", "")), model=trace.model.name, n_tokens=trace.n_tokens,
                       hops=trace.settings.hops, size=size, overlap=change["overlap"],
                       top_segment_changed=change["top_segment_changed"], top_segment_k0=change["top_segment_k0"],
                       top_segment_kmax=change["top_segment_kmax"])


def change_note(change: dict) -> str:
    """One sentence for a gallery card: do deeper hops change the picture (top-k overlap at most
    `CHANGED_OVERLAP`, or another top prompt segment), or not?"""
    k, last, overlap = change["k"], change["max_hops"], change["overlap"]
    moved = (f"; the top prompt sentence moves from {change['top_segment_k0']} to {change['top_segment_kmax']}"
             if change["top_segment_changed"] else "; the top prompt sentence stays the same")
    if overlap <= CHANGED_OVERLAP or change["top_segment_changed"]:
        return f"Deeper hops change the picture: top-{k} prompt tokens at K=0 and K={last} overlap {overlap:.0%}{moved}."
    return f"Hops change little here: top-{k} prompt tokens at K=0 and K={last} overlap {overlap:.0%}{moved}."


def list_gallery(folder: Path | None = None) -> list[GalleryItem]:
    """The gallery's cards, from its index (or, without one, from the trace files themselves)."""
    folder = folder or gallery_dir()
    index = folder / INDEX
    if index.is_file():
        try:
            rows = json.loads(index.read_text(encoding="utf-8"))
            items = [GalleryItem(**row) for row in rows]
            if all((folder / f"{it.name}.json").is_file() for it in items):
                return items
        except (ValueError, TypeError):
            pass
    items = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        if path.name == INDEX:
            continue
        try:
            items.append(_item(path.stem, Trace.load(path), path.stat().st_size))
        except (ValueError, OSError):
            continue
    return items


def gallery_path(name: str, folder: Path | None = None) -> Path:
    folder = folder or gallery_dir()
    known = {it.name for it in list_gallery(folder)}
    if name not in known:
        raise ValueError(f"no gallery trace named '{name}'; the gallery has: {', '.join(sorted(known)) or 'nothing'}")
    return folder / f"{name}.json"


def load_gallery_trace(name: str, folder: Path | None = None) -> Trace:
    return Trace.load(gallery_path(name, folder))


def round_floats(value, digits: int = 6):
    """`value` (nested lists/dicts) with every float rounded to `digits` significant digits."""
    if isinstance(value, float):
        return float(f"{value:.{digits}g}")
    if isinstance(value, list):
        return [round_floats(v, digits) for v in value]
    if isinstance(value, dict):
        return {k: round_floats(v, digits) for k, v in value.items()}
    return value


def build_trace(spec: GallerySpec, loaded, progress: Callable[[int, int], None] | None = None) -> Trace:
    """Trace one gallery spec with `loaded` (teacher-forced, answer target, `HOPS` hops, step vectors), with
    a description that says whether deeper hops change the picture, and the Story page's faithfulness
    check (answer log-probability after deleting the top 10 % of prompt tokens vs 10 % at random)."""
    from ..analysis.compare import depth_change
    from ..evaluate.faithfulness import FAITHFULNESS_KEY, faithfulness_check
    from ..run.tracing import attribute, prepare

    extra = {"task": spec.task or "free-form", "description": spec.description}
    if spec.task:
        from ..evaluate.tasks import make_example

        example = make_example(spec.task, spec.seed, spec.length, **spec.options)
        prompt, response = example.prompt, example.response
        extra.update(seed=spec.seed, length=spec.length, options=spec.options, gold=[list(g) for g in example.gold])
    else:
        prompt, response = spec.prompt, spec.response
    prepared = prepare(loaded, prompt, response)
    trace = attribute(prepared, target="answer", hops=HOPS, steps=True, title=spec.title, progress=progress)
    data = round_floats(json.loads(trace.to_json()))
    data["extra"] = {"gallery": extra}
    rounded = Trace.from_dict(data)  # what ships: the checks below read exactly these numbers
    extra["description"] = f"{spec.description} {change_note(depth_change(rounded, k=CHANGE_K))}"
    data["extra"][FAITHFULNESS_KEY] = round_floats(faithfulness_check(loaded, rounded))
    return Trace.from_dict(data)


def build_gallery(out: Path | None = None, model: str = "smollm2-135m", only: list[str] | None = None,
                  log: Callable[[str], None] = print) -> list[GalleryItem]:
    """Rebuild the gallery in `out` (default: `gallery_dir()`), writing each trace and the index."""
    from ..engine.models import load_model

    out = out or gallery_dir()
    specs = [s for s in GALLERY if not only or s.name in only]
    unknown = set(only or ()) - {s.name for s in GALLERY}
    if unknown:
        raise ValueError(f"unknown gallery entries {sorted(unknown)}; known: {', '.join(s.name for s in GALLERY)}")
    loaded = load_model(model)
    for spec in specs:
        start = time.perf_counter()
        trace = build_trace(spec, loaded)
        path = trace.save(out / f"{spec.name}.json")
        log(f"{spec.name}: {trace.n_tokens} tokens, {path.stat().st_size / 1e3:.0f} kB, "
            f"{time.perf_counter() - start:.1f} s")
    order = {s.name: i for i, s in enumerate(GALLERY)}
    paths = sorted((p for p in out.glob("*.json") if p.name != INDEX), key=lambda p: (order.get(p.stem, 99), p.stem))
    items = [_item(p.stem, Trace.load(p), p.stat().st_size) for p in paths]
    atomic_write_text(out / INDEX, json.dumps([it.__dict__ for it in items], indent=1))
    return items


PRESETS = ("arithmetic", "vartrack", "multihop", "needle", "free-form")


def preset_text(name: str, seed: int = 0, length: int | None = None) -> tuple[str, str]:
    """``(prompt, response)`` of a preset: an example of a task family, or the free-form example."""
    if name == "free-form":
        return FREE_FORM_PROMPT, FREE_FORM_RESPONSE
    if name not in PRESETS:
        raise ValueError(f"unknown preset '{name}'; available: {', '.join(PRESETS)}")
    from ..evaluate.tasks import make_example

    example = make_example(name, seed, length)
    return example.prompt, example.response
