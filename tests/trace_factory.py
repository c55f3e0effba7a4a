"""Hand-made traces for tests of the analysis layer: prompt sentences, reasoning steps and an answer split
into word tokens, and hop vectors given per token. ρ, weights and contributions follow METHOD.md §4
written out here with plain loops (not the engine's code), so the analysis is checked against an
independent reading of the method."""

from __future__ import annotations

from flashtrace.analysis.schema import Trace

MODEL = {"name": "hand-made", "family": "llama", "n_layers": 1, "n_heads": 1, "n_kv_heads": 1, "hidden_size": 4,
         "vocab_size": 10, "n_params": 1, "dtype": "float32"}
TEMPLATE = "<|im_start|>user\n"


def _words(text: str, offset: int) -> list[tuple[str, int, int]]:
    out, pos = [], 0
    for i, word in enumerate(text.split(" ")):
        piece = word if i == 0 else " " + word
        out.append((piece, offset + pos, offset + pos + len(piece)))
        pos += len(piece)
    return out


def layout(prompt: list[str], steps: list[str], answer: str):
    """Tokens (text, role, start, end), segments (id, role, text, start, end) and the prompt/response text."""
    tokens = [(TEMPLATE, "template", None, None)]
    segments = [("T0", "template", TEMPLATE, 0, 1)]
    prompt_text = " ".join(prompt)
    offset = 0
    for i, sentence in enumerate(prompt):
        lo = len(tokens)
        for text, a, b in _words(sentence, offset):
            if i and a == offset:  # the space between sentences travels with the next word
                text, a = " " + text, a - 1
            tokens.append((text, "prompt", a, b))
        segments.append((f"P{i}", "prompt", sentence, lo, len(tokens)))
        offset += len(sentence) + 1
    response = "\n".join([*steps, answer])
    offset = 0
    for i, part in enumerate([*steps, answer]):
        role, sid = ("answer", "A") if i == len(steps) else ("reasoning", f"S{i}")
        lo = len(tokens)
        words = _words(part, offset)
        for j, (text, a, b) in enumerate(words):
            if i and j == 0:
                text, a = "\n" + text, a - 1
            tokens.append((text, role, a, b))
        segments.append((sid, role, part, lo, len(tokens)))
        offset += len(part) + 1
    return tokens, segments, prompt_text, response


def make_trace(prompt: list[str], steps: list[str], answer: str, raws: list[list[float]],
               recursive: str = "reasoning+answer", step_vectors: dict[str, list[float]] | None = None,
               extra: dict | None = None, hop0: str = "answer") -> Trace:
    """A valid trace whose hop k has raw vector ``raws[k]`` (one value per token)."""
    tokens, segments, prompt_text, response = layout(prompt, steps, answer)
    n = len(tokens)
    roles = [t[1] for t in tokens]
    answer_at = [i for i, r in enumerate(roles) if r == "answer"]
    reasoning_at = [i for i, r in enumerate(roles) if r == "reasoning"]
    g = [i for i, r in enumerate(roles) if r in (("reasoning", "answer") if recursive == "reasoning+answer"
                                                   else ("reasoning",))]
    target = [1.0 if i in answer_at else 0.0 for i in range(n)]
    weights = [w / sum(target) for w in target]
    hops, final, rho_prev = [], [0.0] * n, 1.0
    for k, raw in enumerate(raws):
        assert len(raw) == n, f"hop {k}: {len(raw)} values for {n} tokens"
        total, on_g = sum(raw), sum(raw[i] for i in g)
        rho = rho_prev * on_g / total
        contribution = [raw[i] * rho_prev if roles[i] == "prompt" else 0.0 for i in range(n)]
        final = [a + b for a, b in zip(final, contribution)]
        hops.append({"k": k, "rho": rho, "weights": weights, "raw": list(raw), "contribution": contribution})
        weights = [raw[i] / on_g if i in g else 0.0 for i in range(n)]
        rho_prev = rho
    prompt_total = sum(final[i] for i in range(n) if roles[i] == "prompt")
    data = {
        "prompt": prompt_text, "response": response, "model": MODEL,
        "settings": {"method": "flashtrace", "hops": len(raws) - 1, "target": [answer_at[0], answer_at[-1] + 1],
                     "recursive": recursive, "hop0": hop0},
        "tokens": [{"text": t, "role": r, "id": 1, "start": a, "end": b} for t, r, a, b in tokens],
        "spans": {"prompt": [1, 1 + sum(r == "prompt" for r in roles)],
                  "reasoning": [reasoning_at[0], reasoning_at[-1] + 1] if reasoning_at else None,
                  "answer": [answer_at[0], answer_at[-1] + 1], "rule": "last-line"},
        "scores": {"final": final, "prompt": [v / prompt_total for v in final]},
        "hops": hops,
        "segments": [{"id": s, "role": r, "text": t, "start": lo, "end": hi, "order": o}
                     for o, (s, r, t, lo, hi) in enumerate(segments)],
        "extra": extra or {},
    }
    if step_vectors is not None:
        data["steps"] = {"vectors": step_vectors, "seconds": 0.0}
    return Trace.from_dict(data)


def vector(prompt: list[str], steps: list[str], answer: str, values: dict[str, float]) -> list[float]:
    """A per-token vector for the layout of (prompt, steps, answer) that puts ``values[segment id]`` on each
    segment, split evenly over its tokens (segments not named get 0)."""
    tokens, segments, _p, _r = layout(prompt, steps, answer)
    out = [0.0] * len(tokens)
    for sid, _role, _text, lo, hi in segments:
        for i in range(lo, hi):
            out[i] = values.get(sid, 0.0) / (hi - lo)
    return out


def unread(trace: Trace) -> Trace:
    """`trace` with every hop's contribution zero: no prompt token has any attribution (not revalidated)."""
    return trace.model_copy(update={"hops": [h.model_copy(update={"contribution": [0.0] * trace.n_tokens})
                                             for h in trace.hops]})
