"""Synthetic libraries for index tests and benchmarks: many valid variants of one real trace."""

from __future__ import annotations

import json
from pathlib import Path

from ...analysis.schema import Trace
from ...base.errors import InputError

MODELS = ("tiny-llama", "smollm2-135m", "qwen3-8b")
TASKS = ("needle", "arithmetic", "multihop", "vartrack")
WORDS = ("apples", "rivers", "planets", "engines", "violins", "glaciers", "lanterns")


def synthetic_library(folder: str | Path, n: int, base: Trace) -> list[str]:
    """Write `n` traces into `folder`: `base` with varied title, model name, task, hops-free metadata,
    creation time and metrics (trace ``i`` has model ``MODELS[i % 3]``, task ``TASKS[i % 4]`` and the word
    ``WORDS[i % 7]`` in its title).

    Args:
        folder: The folder written (created when missing).
        n: How many traces.
        base: The real trace varied.

    Returns:
        The names written (``syn-000000``, ...).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    data = json.loads(base.to_json())
    names = []
    for i in range(n):
        data["id"] = f"syn{i:06d}"
        data["title"] = f"synthetic {i} about {WORDS[i % len(WORDS)]}"
        data["model"]["name"] = MODELS[i % len(MODELS)]
        data["created"] = f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00+00:00"
        data["extra"] = {"task": TASKS[i % len(TASKS)], "metrics": {"rise": round((i % 100) / 100, 2)}}
        name = f"syn-{i:06d}"
        (folder / f"{name}.json").write_text(json.dumps(data), encoding="utf-8")
        names.append(name)
    return names


def synthetic_trace_data(n_tokens: int, hops: int = 1, n_steps: int = 0, seed: int = 0) -> dict:
    """A valid trace as JSON data; for load and memory benchmarks. Scores are random (6 significant digits, like
    the gallery).

    Args:
        n_tokens: How many tokens (the last tenth the response: reasoning steps, then a 4-token answer).
        hops: How many hops.
        n_steps: With a positive count, that many reasoning steps with step vectors.
        seed: Seeds the random words, ids and scores.

    Returns:
        The trace's JSON data.

    Raises:
        InputError: When `n_tokens` is too few for the response.
    """
    import random

    rng = random.Random(seed)
    n_response = max(n_tokens // 10, n_steps + 4, 5)
    prompt_end = n_tokens - n_response
    if prompt_end < 1:
        raise InputError("too few tokens for the response")
    words = [f" w{rng.randrange(10_000)}" for _ in range(n_tokens)]
    roles = ["prompt"] * prompt_end + ["reasoning"] * (n_response - 4) + ["answer"] * 4
    tokens = _synthetic_tokens(words, roles, prompt_end, rng)
    prompt = list(range(prompt_end))

    def vector(positions):
        out = [0.0] * n_tokens
        for i in positions:
            out[i] = float(f"{rng.random():.6g}")
        return out

    records = []
    for k in range(hops + 1):
        contribution = vector(prompt)
        records.append({"k": k, "rho": 0.5, "weights": vector(range(prompt_end, n_tokens)),
                        "raw": list(contribution), "contribution": contribution})
    final = [float(f"{sum(h['contribution'][i] for h in records):.6g}") for i in range(n_tokens)]
    for i in prompt:  # rounding: make the final score exactly the sum of the parts
        records[0]["contribution"][i] = final[i] - sum(h["contribution"][i] for h in records[1:])
    total = sum(final[i] for i in prompt)
    data = {"schema_version": 2, "id": f"syn{seed}", "title": f"synthetic {n_tokens} tokens", "prompt": "".join(words[:prompt_end]),
            "response": "".join(words[prompt_end:]),
            "model": {"name": "synthetic", "family": "llama", "n_layers": 2, "n_heads": 2, "n_kv_heads": 2,
                      "hidden_size": 8, "vocab_size": 50_000, "n_params": 1000, "dtype": "float32"},
            "settings": {"method": "flashtrace", "hops": hops, "target": [n_tokens - 4, n_tokens]},
            "tokens": tokens, "spans": {"prompt": [0, prompt_end], "reasoning": [prompt_end, n_tokens - 4],
                                        "answer": [n_tokens - 4, n_tokens]},
            "scores": {"final": final, "prompt": [final[i] / total if i < prompt_end else 0.0 for i in range(n_tokens)]},
            "hops": records}
    if n_steps:
        data.update(_synthetic_steps(n_tokens, prompt_end, n_steps, vector))
    return data


def _synthetic_tokens(words: list[str], roles: list[str], prompt_end: int, rng) -> list[dict]:
    """Token records with character offsets into the prompt, then (from 0 again) into the response."""
    tokens, at = [], 0
    for i, (word, role) in enumerate(zip(words, roles)):
        at = 0 if i == prompt_end else at
        tokens.append({"text": word, "role": role, "id": rng.randrange(50_000), "start": at, "end": at + len(word)})
        at += len(word)
    return tokens


def _synthetic_steps(n_tokens: int, prompt_end: int, n_steps: int, vector) -> dict:
    """Segments (one prompt sentence, `n_steps` reasoning steps, the answer) and their step vectors."""
    bounds = [prompt_end + (n_tokens - 4 - prompt_end) * i // n_steps for i in range(n_steps + 1)]
    segments = [{"id": "P0", "role": "prompt", "text": "prompt", "start": 0, "end": prompt_end, "order": 0}]
    for i in range(n_steps):
        segments.append({"id": f"S{i}", "role": "reasoning", "text": f"step {i}", "start": bounds[i],
                         "end": bounds[i + 1], "order": i + 1})
    segments.append({"id": "A", "role": "answer", "text": "answer", "start": n_tokens - 4, "end": n_tokens,
                     "order": n_steps + 1})
    vectors = {seg["id"]: vector(range(seg["start"])) for seg in segments[1:]}
    return {"segments": segments, "steps": {"vectors": vectors, "seconds": 0.1}}


AMPLIFIERS = ("extra_floats", "extra_ints", "stop_tokens", "timings")


def amplified_trace_data(base: dict, kind: str, size: int) -> dict:
    """`base` grown to about `size` bytes of JSON by millions of tiny values in one field: the shapes that made
    loading take 25-41 times a file's size (issue 30, defect 3).

    Args:
        base: A valid trace's data (not changed).
        kind: One of `AMPLIFIERS`: floats or integers in ``extra``, a stop-token list, named timings.
        size: About how many bytes of JSON the result has.

    Returns:
        A grown copy of `base`.

    Raises:
        InputError: When `kind` is not one of `AMPLIFIERS`.
    """
    data = json.loads(json.dumps(base))
    room = max(size - len(json.dumps(base, separators=(",", ":"))), 1000)
    if kind == "extra_floats":
        data["extra"]["junk"] = [i * 1.25e-3 for i in range(room // 9)]
    elif kind == "extra_ints":
        data["extra"]["junk"] = [i % 10 for i in range(room // 2)]
    elif kind == "stop_tokens":
        data["settings"]["stop_tokens"] = [f"{i % 100:02d}" for i in range(room // 5)]
    elif kind == "timings":
        data["timings"] = {f"t{i}": 0 for i in range(room // 10)}
    else:
        raise InputError(f"unknown amplifier {kind!r}; one of {', '.join(AMPLIFIERS)}")
    return data


def long_reasoning_trace(n_tokens: int, n_steps: int, sentence_tokens: int = 1, seed: int = 0) -> dict:
    """A valid trace of `n_tokens` with `n_steps` one-token reasoning steps and a one-token answer after a prompt
    of sentences of `sentence_tokens` tokens: the shape of a long chain of thought.
    Every step and the answer has a step vector over the tokens before it (random, decaying with distance,
    rounded to 6 digits as traces are stored), so the hop graph has an edge from every earlier segment.

    Args:
        n_tokens: How many tokens (a template token, the prompt, the steps, the answer).
        n_steps: How many one-token reasoning steps.
        sentence_tokens: How many tokens each prompt sentence has.
        seed: Seeds the random scores and step vectors.

    Returns:
        The trace, as a JSON-ready dict.

    Raises:
        InputError: When `n_tokens` does not exceed `n_steps` + 2.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    n_prompt = n_tokens - n_steps - 2  # the template token, the prompt, the steps, the answer
    if n_prompt < 1:
        raise InputError("n_tokens must exceed n_steps + 2")
    texts = ["<|im_start|>"] + [f" w{i}" for i in range(n_prompt)] + [f"\ns{i}" for i in range(n_steps)] + ["\n7"]
    roles = ["template"] + ["prompt"] * n_prompt + ["reasoning"] * n_steps + ["answer"]
    bounds = [(0, 1)] + [(lo, min(lo + sentence_tokens, 1 + n_prompt)) for lo in range(1, 1 + n_prompt, sentence_tokens)]
    bounds += [(i, i + 1) for i in range(1 + n_prompt, n_tokens)]
    segments, vectors = [], {}
    for order, (lo, hi) in enumerate(bounds):
        role = roles[lo]
        sid = {"template": "T", "prompt": "P", "reasoning": "S", "answer": "A"}[role] + (str(order) if role != "answer" else "")
        segments.append({"id": sid, "role": role, "text": "".join(texts[lo:hi]), "start": lo, "end": hi, "order": order})
        if role in ("reasoning", "answer"):
            vec = np.zeros(n_tokens)
            vec[:lo] = rng.random(lo) * np.exp(-np.arange(lo)[::-1] / max(lo / 4, 1.0))  # nearer tokens weigh more
            vectors[sid] = [float(f"{v:.6g}") for v in vec / vec.sum()]
    scores = [0.0] + [float(f"{v:.6g}") for v in rng.random(n_prompt) / n_prompt] + [0.0] * (n_steps + 1)
    raw = [float(f"{v:.6g}") for v in rng.random(n_tokens)]
    target = [0.0] * (n_tokens - 1) + [1.0]
    prompt_sum = sum(scores)
    return {
        "prompt": "".join(texts[1:1 + n_prompt]), "response": "".join(texts[1 + n_prompt:]),
        "model": {"name": "synthetic", "family": "llama", "n_layers": 1, "n_heads": 1, "n_kv_heads": 1,
                  "hidden_size": 4, "vocab_size": 10, "n_params": 1, "dtype": "float32"},
        "settings": {"method": "flashtrace", "hops": 0, "target": [n_tokens - 1, n_tokens]},
        "tokens": [{"text": t, "role": r, "id": 1} for t, r in zip(texts, roles)],
        "spans": {"prompt": [1, 1 + n_prompt], "reasoning": [1 + n_prompt, n_tokens - 1],
                  "answer": [n_tokens - 1, n_tokens], "rule": "last-line"},
        "scores": {"final": scores, "prompt": [v / prompt_sum for v in scores]},
        "hops": [{"k": 0, "rho": 0.5, "weights": target, "raw": raw, "contribution": scores}],
        "segments": segments, "steps": {"vectors": vectors, "seconds": 0.0},
    }
