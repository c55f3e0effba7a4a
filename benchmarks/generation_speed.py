"""Generation speed against this machine's memory-bandwidth bound, measured in the same run.

Usage: .venv/bin/python benchmarks/generation_speed.py [--model qwen2.5-coder-1.5b] [--threads 1,2] [--rounds 3]
       [--new-tokens 64]

A generation step reads every weight once, so no step can be faster than the weights' bytes divided by the
machine's memory bandwidth. The bandwidth is measured here, between the generation runs: a copy of 1 GiB
(``dst.copy_(src)``, reported as bytes moved, read + written, per second, and as bytes copied per second) and a
read of 1 GiB (a sum), on 1 and 2 torch threads; the bound uses the best bytes-moved rate seen. Two bounds are
given: *all weights* (every parameter, the issue's definition) and *weights read* (the embedding table is gathered
one row per step, not read; a tied head reads it as the output projection).

Per thread count and round, interleaved: transformers' own ``model.generate`` and FlashTrace's ``generate``
(`flashtrace.engine.models.generation`, with the single-row kernel), greedy, on the README's word problem with the
reasoning instruction, up to ``--new-tokens`` tokens. Step times come from the streamer (the first token, which
includes the prompt's forward pass, is excluded); the median step per run, then the median over rounds.
Writes benchmarks/results/generation_speed_<model>.json and prints a table; state the machine's load beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from prepare_models import _cpu  # noqa: E402 - the processor facts, one definition

PROMPT = ("Tom has 12 marbles. He loses 4 and then finds 7 more. The school has 300 students. "
          "How many marbles does Tom have now?")
GIB = 2**30


def bandwidth(threads: int, repeats: int = 5) -> dict:
    """Best copy and read rates of 1 GiB on `threads` torch threads, in bytes per second."""
    src = torch.ones(GIB // 4)
    dst = torch.empty_like(src)
    copy, read = float("inf"), float("inf")
    with_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for _ in range(repeats):
            start = time.perf_counter()
            dst.copy_(src)
            copy = min(copy, time.perf_counter() - start)
            start = time.perf_counter()
            src.sum()
            read = min(read, time.perf_counter() - start)
    finally:
        torch.set_num_threads(with_threads)
    return {"threads": threads, "copy_bytes_copied_per_s": GIB / copy, "copy_bytes_moved_per_s": 2 * GIB / copy,
            "read_bytes_per_s": GIB / read}


def _steps(stamps: list[float]) -> list[float]:
    return [b - a for a, b in zip(stamps, stamps[1:])]


def run_plain(loaded, ids: list[int], n_new: int) -> tuple[list[float], str]:
    """transformers' generate as it is (greedy), timed per token through a streamer."""
    from flashtrace.engine.models.generation import TextStream

    stamps, text = [], []
    stream = TextStream(loaded.tokenizer, lambda t, n: (stamps.append(time.perf_counter()), text.append(t)))
    tensor = torch.tensor([ids])
    with torch.no_grad():
        loaded.model.generate(tensor, attention_mask=torch.ones_like(tensor), max_new_tokens=n_new, do_sample=False,
                              streamer=stream, pad_token_id=loaded.tokenizer.pad_token_id)
    return _steps(stamps), text[-1] if text else ""


def run_flashtrace(loaded, ids: list[int], n_new: int) -> tuple[list[float], str]:
    """FlashTrace's generation (the single-row kernel on the CPU), timed per token."""
    from flashtrace.engine.models.generation import generate_response

    stamps = []
    text = generate_response(loaded, ids, max_new_tokens=n_new,
                             on_text=lambda t, n: stamps.append(time.perf_counter())).text
    return _steps(stamps), text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--out", type=Path, default=None,
                        help="default: benchmarks/results/generation_speed_<model>.json")
    args = parser.parse_args()
    args.out = args.out or Path(__file__).parent / "results" / f"generation_speed_{args.model}.json"

    from flashtrace.engine.models import load_model
    from flashtrace.engine.models.generation import generation_ids

    loaded = load_model(args.model)
    info = loaded.info()
    all_bytes = info["n_params"] * 4
    embedding = info["vocab_size"] * info["hidden_size"] * 4
    tied = bool(getattr(loaded.model.config, "tie_word_embeddings", False))
    read_bytes = all_bytes if tied else all_bytes - embedding
    _, ids = generation_ids(loaded, PROMPT, args.new_tokens, chat_template=True, reasoning_instruction=True)
    load_before = os.getloadavg()
    rows, widths = [], []
    for threads in [int(t) for t in args.threads.split(",")]:
        runs = {"transformers generate": [], "flashtrace generate": []}
        texts = {}
        for _ in range(args.rounds):
            widths.append(bandwidth(threads))
            widths.append(bandwidth(2))
            for name, runner in (("transformers generate", run_plain), ("flashtrace generate", run_flashtrace)):
                torch.set_num_threads(threads)
                steps, texts[name] = runner(loaded, ids, args.new_tokens)
                runs[name].append(statistics.median(steps))
                print(f"{threads} thread(s) {name}: median step {runs[name][-1]:.3f} s", flush=True)
        for name, medians in runs.items():
            rows.append({"threads": threads, "mode": name, "step_s_per_round": [round(x, 4) for x in medians],
                         "step_s": round(statistics.median(medians), 4), "text": texts[name]})
    best_moved = max(w["copy_bytes_moved_per_s"] for w in widths)
    best_read = max(w["read_bytes_per_s"] for w in widths)
    rate = max(best_moved, best_read)
    for row in rows:
        row["bound_all_weights_s"] = round(all_bytes / rate, 4)
        row["bound_weights_read_s"] = round(read_bytes / rate, 4)
        row["ratio_all_weights"] = round(all_bytes / rate / row["step_s"], 3)
        row["ratio_weights_read"] = round(read_bytes / rate / row["step_s"], 3)
    report = {"created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "command": "python benchmarks/generation_speed.py " + " ".join(sys.argv[1:]), "machine": _cpu(),
              "model": info, "weights_bytes": all_bytes, "weights_read_bytes": read_bytes,
              "bandwidth_runs": widths, "best_bytes_moved_per_s": rate, "load_before": [round(x, 2) for x in load_before],
              "load_after": [round(x, 2) for x in os.getloadavg()], "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"\nbandwidth: best copy {best_moved / 1e9:.1f} GB/s moved ({best_moved / 2e9:.1f} copied), best read "
          f"{best_read / 1e9:.1f} GB/s; load {load_before[0]:.2f} -> {os.getloadavg()[0]:.2f}")
    print("| threads | generation | s/token | tokens/s | bound s/token (all weights / read) | ratio (all / read) |")
    print("|---:|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['threads']} | {r['mode']} | {r['step_s']:.3f} | {1 / r['step_s']:.2f} | "
              f"{r['bound_all_weights_s']:.3f} / {r['bound_weights_read_s']:.3f} | "
              f"{r['ratio_all_weights']:.2f} / {r['ratio_weights_read']:.2f} |")


if __name__ == "__main__":
    main()
