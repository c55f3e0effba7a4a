"""Which dtype `flashtrace prepare` converts to by default: float32 and bfloat16 side by side on one model, the
same trace in each (speed of the recording, the attribution and a generation step; agreement of the scores).

Usage: .venv/bin/python benchmarks/dtype_choice.py [--model qwen2.5-coder-0.5b] [--threads 2] [--tokens 512]

The bfloat16 model is the float32 folder cast at load, which holds exactly the values a bfloat16 conversion writes
(tests/models/test_prepare.py checks that). The trace is the README's word problem teacher-forced on a response
padded with reasoning lines to about ``--tokens`` tokens, K = 1. Agreement: Pearson correlation of the prompt
scores and the overlap of their top 10. Writes benchmarks/results/dtype_choice.json.
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

sys.path.insert(0, str(Path(__file__).parent))
from generation_speed import PROMPT, run_flashtrace  # noqa: E402
from prepare_models import _cpu  # noqa: E402

STEP = "Tom starts with 12 marbles, loses 4 and has 8; then he finds 7 more, so he has 8 + 7 = 15."


def _response(loaded, n_tokens: int) -> str:
    lines = []
    while len(loaded.tokenizer("\n".join(lines + [STEP]))["input_ids"]) < n_tokens:
        lines.append(STEP)
    return "\n".join(lines) + "\nAnswer: 15"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "dtype_choice.json")
    args = parser.parse_args()

    import numpy as np
    import torch

    from flashtrace.engine.models import load_model
    from flashtrace.engine.models.generation import generation_ids
    from flashtrace.run.tracing import attribute, prepare

    torch.set_num_threads(args.threads)
    rows, scores = [], {}
    load_before = os.getloadavg()
    for dtype in ("float32", "bfloat16"):
        loaded = load_model(args.model, dtype=dtype)
        response = _response(loaded, args.tokens)
        record_s, attribute_s = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            prepared = prepare(loaded, prompt=PROMPT, response=response)
            record_s.append(time.perf_counter() - start)
            start = time.perf_counter()
            trace = attribute(prepared, target="answer", hops=1)
            attribute_s.append(time.perf_counter() - start)
        _, ids = generation_ids(loaded, PROMPT, 24, chat_template=True, reasoning_instruction=True)
        steps, _ = run_flashtrace(loaded, ids, 24)
        scores[dtype] = np.array(trace.scores.prompt)
        rows.append({"dtype": dtype, "n_tokens": len(trace.tokens), "record_s": round(statistics.median(record_s), 2),
                     "attribution_s": round(statistics.median(attribute_s), 3),
                     "generation_step_s": round(statistics.median(steps), 4)})
        print(rows[-1], flush=True)
        del loaded, prepared
    a, b = scores["float32"], scores["bfloat16"]
    top = lambda v: set(np.argsort(-v)[:10].tolist())  # noqa: E731
    agreement = {"pearson": round(float(np.corrcoef(a, b)[0, 1]), 4), "top10_overlap": len(top(a) & top(b)) / 10,
                 "max_abs_difference": round(float(np.abs(a - b).max()), 5)}
    report = {"created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "command": "python benchmarks/dtype_choice.py " + " ".join(sys.argv[1:]), "machine": _cpu(),
              "model": args.model, "threads": args.threads, "load_before": [round(x, 2) for x in load_before],
              "load_after": [round(x, 2) for x in os.getloadavg()], "rows": rows, "agreement": agreement}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(agreement))


if __name__ == "__main__":
    main()
