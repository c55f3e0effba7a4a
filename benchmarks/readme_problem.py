"""Which built-in model `make app` prepares: each answers the README's word problem and five more written for this
project, each with a quantity the answer does not need (greedy, with the reasoning instruction), and the answer is
checked.

Usage: .venv/bin/python benchmarks/readme_problem.py [--models qwen2.5-coder-1.5b,qwen2.5-coder-0.5b,smollm2-135m]

Per model and problem: whether the detected answer holds the right number, the answer and the whole response, the
tokens written, the generation's wall time and its seconds per token; per model, how many it got right and the
time in all. Writes benchmarks/results/readme_problem.json.
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
PROBLEMS = [  # (problem, right answer); the first is the README's
    (PROBLEM, RIGHT),
    ("A baker makes 24 muffins. She sells 9 in the morning and bakes 6 more at noon. Her shop opened in 2015. "
     "How many muffins does she have now?", 21),
    ("Lena reads 15 pages on Monday and twice as many on Tuesday. Her book has 300 pages and she is 12 years old. "
     "How many pages did she read on the two days together?", 45),
    ("A bus leaves with 30 passengers. At the first stop 8 get off and 5 get on; at the second stop 10 get off. "
     "The bus has 48 seats. How many passengers are on the bus now?", 17),
    ("Sam buys 3 packs of pencils with 12 pencils each and gives 7 pencils to his sister. The shop is 2 km away. "
     "How many pencils does Sam have left?", 29),
    ("A farmer has 5 rows of apple trees with 8 trees in each row. 6 trees are cut down. The farm is 40 years old. "
     "How many apple trees are left?", 34),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="qwen2.5-coder-1.5b,qwen2.5-coder-0.5b,smollm2-135m")
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--n", type=int, default=len(PROBLEMS), help="the first N problems (the README's first)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "readme_problem.json")
    args = parser.parse_args()

    import torch

    from flashtrace.engine.inputs import detect_spans
    from flashtrace.engine.models import load_model
    from flashtrace.engine.models.generation import generate

    rows, summary = [], []
    for name in args.models.split(","):
        loaded = load_model(name)
        for problem, right in PROBLEMS[: args.n]:
            load = os.getloadavg()[0]
            started = time.perf_counter()
            out = generate(loaded, problem, max_new_tokens=args.max_new_tokens, reasoning_instruction=True)
            wall = time.perf_counter() - started
            spans = detect_spans(out.response)
            answer = out.response[spans.answer[0]:spans.answer[1]] if spans.answer else ""
            n_new = len(loaded.tokenizer(out.response, add_special_tokens=False)["input_ids"])
            numbers = [int(x) for x in re.findall(r"-?\d+", answer)]
            rows.append({"model": name, "problem": problem, "right_answer": right, "correct": right in numbers,
                         "answer": answer, "rule": spans.rule, "response": out.response, "new_tokens": n_new,
                         "wall_s": round(wall, 1), "s_per_token": round(wall / max(n_new, 1), 3),
                         "load_before": round(load, 2), "threads": torch.get_num_threads()})
            print(f"{name}: {'right' if rows[-1]['correct'] else 'WRONG'} ({answer!r}), {n_new} tokens in {wall:.0f} s",
                  flush=True)
        mine = [r for r in rows if r["model"] == name]
        summary.append({"model": name, "right": sum(r["correct"] for r in mine), "of": len(mine),
                        "readme_problem_right": mine[0]["correct"], "wall_s": round(sum(r["wall_s"] for r in mine), 1),
                        "median_s_per_token": sorted(r["s_per_token"] for r in mine)[len(mine) // 2]})
        print(summary[-1], flush=True)
        del loaded
    report = {"created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "command": "python benchmarks/readme_problem.py " + " ".join(sys.argv[1:]), "machine": _cpu(),
              "summary": summary, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
