"""The inputs of the parity benchmark (`benchmarks/parity_reference.py`) and the authors' package it compares
against: `build_venv` makes the reference's own virtualenv (`.parity-venv/`, also used by
`benchmarks/authors_speed.py`), `groups` lists the cases (short and long SmolLM2 inputs, tiny models of each
family, and the `quirk-*` cases that show one difference of the reference each).

Imports only the standard library at module level: the reference's process (in `.parity-venv/`, where
`flashtrace` is the authors' package) loads it through `parity_reference.py`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".parity-venv"
REFERENCE = "flashtrace==0.1.1"
HOPS = (0, 1, 2)

SHORT = [
    ("Ann has 3 red balls. Ben has 4 blue balls. How many balls do they have together?",
     "Ann has 3 balls.\nBen has 4 balls.\n3 + 4 = 7.\nAnswer: 7"),
    ("The Eiffel Tower is in Paris. Paris is the capital of France. In which country is the Eiffel Tower?",
     "The Eiffel Tower is in Paris, and Paris is in France.\nAnswer: France"),
]
QUIRK_PROMPT = ("a robot has 5 gears and buys 2 more. How many gears does it have now?",
                "It had 5 gears, then 2 more: 5 + 2 = 7.\nAnswer: 7")


def build_venv(venv: Path) -> Path:
    """The python of the reference's virtualenv `venv`, built first if missing: the authors' package with
    the torch and transformers versions of this environment."""
    python = venv / "bin" / "python"
    if python.exists():
        return python
    import torch
    import transformers

    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", REFERENCE, f"torch=={torch.__version__.split('+')[0]}",
                    f"transformers=={transformers.__version__}"], check=True)
    return python


def tiny_folder(family: str, zero_value_bias: bool) -> Path:
    """Save our deterministic tiny model (weights and tokenizer) where both sides can load it."""
    import torch

    from flashtrace.engine.models import load_model

    folder = VENV / "models" / (f"tiny-{family}" + ("-novbias" if zero_value_bias else ""))
    if not (folder / "config.json").exists():
        loaded = load_model(f"tiny-{family}")
        if zero_value_bias:
            with torch.no_grad():
                for name, param in loaded.model.named_parameters():
                    if name.endswith("v_proj.bias"):
                        param.zero_()
        loaded.model.save_pretrained(folder)
        loaded.tokenizer.save_pretrained(folder)
    return folder


def groups(quick: bool) -> list[dict]:
    from flashtrace.evaluate.tasks import make_example
    from flashtrace.engine.models.default_model import ensure_default_model

    smol = str(ensure_default_model())
    out = []

    def add(gid, path, prompt, response, template, group, aligned=True, **extra):
        spec = dict(id=gid, model_path=str(path), prompt=prompt, response=response, chat_template=template,
                    group=group, aligned=aligned, hops=list(HOPS), align_eps=True)
        out.append({**spec, **extra})

    for i, (p, r) in enumerate(SHORT):
        for template in (True, False):
            add(f"smollm2-short{i}-{'chat' if template else 'raw'}", smol, p, r, template, "SmolLM2 short")
    if quick:
        return out[:2]
    needle = make_example("needle", 0, length=1000)
    for template in (True, False):
        add(f"smollm2-long-{'chat' if template else 'raw'}", smol, needle.prompt, needle.response, template,
            "SmolLM2 ~1,000 tokens")
    for family in ("mistral", "qwen3"):
        add(f"tiny-{family}", tiny_folder(family, False), *SHORT[0], True, "tiny families")
    for family in ("llama", "qwen2"):
        add(f"tiny-{family}-novbias", tiny_folder(family, True), *SHORT[0], True, "tiny families")
    # not aligned on purpose: each shows one difference of the reference, explained in the report
    add("quirk-value-bias-llama", tiny_folder("llama", False), *SHORT[0], True, "explained", aligned=False)
    add("quirk-value-bias-qwen2", tiny_folder("qwen2", False), *SHORT[0], True, "explained", aligned=False)
    add("quirk-epsilon-1e-6", smol, *SHORT[0], True, "explained", aligned=False, align_eps=False)
    add("quirk-first-token-match", smol, *QUIRK_PROMPT, True, "explained", aligned=False)
    add("quirk-punctuation-preset", smol, *SHORT[0], True, "explained", aligned=False, stop_tokens="punctuation")
    add("quirk-sdpa", smol, *SHORT[0], True, "explained", aligned=False, attn="sdpa")
    out[-1]["hops"] = [1]
    return out
