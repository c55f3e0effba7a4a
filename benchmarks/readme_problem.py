"""Which built-in model `make app` prepares: each answers the README's word problem (greedy, with the reasoning
instruction), and the answer is checked.

Usage: .venv/bin/python benchmarks/readme_problem.py [--models qwen2.5-coder-1.5b,qwen2.5-coder-0.5b,smollm2-135m]

Per model: whether the detected answer holds the right number (15), the answer and the whole response, the tokens
written, the generation's wall time and its seconds per token. Writes benchmarks/results/readme_problem.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from prepare_models import _cpu  # noqa: E402

PROBLEM = ("Tom has 12 marbles. He loses 4 and then finds 7 more. The school has 300 students. "
           "How many marbles does Tom have now?")
RIGHT = 15


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="qwen2.5-coder-1.5b,qwen2.5-coder-0.5b,smollm2-135m")
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "readme_problem.json")
    args = parser.parse_args()

    import torch

    from flashtrace.engine.inputs import detect_spans
    from flashtrace.engine.models import load_model
    from flashtrace.engine.models.generation import generate

    rows = []
    for name in args.models.split(","):
        loaded = load_model(name)
        load = os.getloadavg()[0]
        started = time.perf_counter()
        out = generate(loaded, PROBLEM, max_new_tokens=args.max_new_tokens, reasoning_instruction=True)
        wall = time.perf_counter() - started
        spans = detect_spans(out.response)
        answer = out.response[spans.answer[0]:spans.answer[1]] if spans.answer else ""
        n_new = len(loaded.tokenizer(out.response, add_special_tokens=False)["input_ids"])
        numbers = [int(x) for x in re.findall(r"-?\d+", answer)]
        rows.append({"model": name, "correct": RIGHT in numbers, "answer": answer, "rule": spans.rule,
                     "response": out.response, "new_tokens": n_new, "wall_s": round(wall, 1),
                     "s_per_token": round(wall / max(n_new, 1), 3), "load_before": round(load, 2),
                     "threads": torch.get_num_threads()})
        print(f"{name}: {'right' if rows[-1]['correct'] else 'WRONG'} ({answer!r}), {n_new} tokens in {wall:.0f} s",
              flush=True)
        del loaded
    report = {"created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "command": "python benchmarks/readme_problem.py " + " ".join(sys.argv[1:]), "machine": _cpu(),
              "problem": PROBLEM, "right_answer": RIGHT, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
