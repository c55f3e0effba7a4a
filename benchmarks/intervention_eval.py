"""Interventions over the evaluation tasks (issue 32's committed benchmark): does removing FlashTrace's top
prompt sentence lower the answer's log-probability more than removing a random sentence, and how does it
compare with removing the gold sentences? And do step influence by intervention (each reasoning step removed,
teacher-forced) and by attribution (the hop graph's influence) rank the steps alike?

Usage: .venv/bin/python benchmarks/intervention_eval.py [--tasks all] [--n 20] [--length 150]
       [--hops 2] [--dtype float32] [--n-random 5] [--threads 1] [--out benchmarks/results/intervention_eval.json]

Each example (`flashtrace.evaluate.tasks.make_example`, seeds 0..n-1, visited seed by seed across the
tasks) is traced with SmolLM2-135M-Instruct (`attribute(..., hops, steps=True)`, its gold ranges stored
in ``extra["gold"]``), then `intervene` scores the unedited sequence, each reasoning step removed, the top
evidence sentence (`analyse(trace).evidence()`), `--n-random` seeded random sentences and all gold sentences
removed together. A drop is ``before - after`` in nats (summed over the answer tokens). The JSON is rewritten
after every example (a partial run survives; a rerun resumes). Intervals: 95 % percentile bootstrap over
examples (10,000 resamples, seeded). Rank correlations: Spearman between the steps' drops and their hop-graph
influence, over examples with at least 3 steps, once over every step before the answer and once without the
"Answer:" marker line (the reasoning segment holding only the marker before the answer tokens).

With ``--responses FOLDER`` (an ``flashtrace eval --protocol own`` output folder, issue 46 item 4) the examples are
that run's: the same tasks, seeds and lengths, each with the response its model wrote itself (read back from
``FOLDER/responses/``, never generated here), right and wrong answers both kept and marked (``correct``). The
model is the folder's. Each sentence removal (top, the first random one, gold) is also re-scored as an answer:
the reasoning is kept as written, the answer is re-generated greedily after the edit (at most 16 tokens) and
compared with the one written (``answer_changed``); the whole response is not re-generated (on a 2-core CPU a
1.5B model writes ~0.3 s a token).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results" / "intervention_eval.json"
MARKER = re.compile(r"\s*(?:final\s+)?answer\s*[:：]?\s*$", re.I)
BOOT = 10_000


def bootstrap(values, seed: int = 0) -> dict | None:
    """Mean and 95 % percentile-bootstrap interval of `values` (None when empty)."""
    x = np.asarray([v for v in values if v is not None], dtype=float)
    if len(x) == 0:
        return None
    means = np.random.default_rng(seed).choice(x, size=(BOOT, len(x)), replace=True).mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return {"mean": float(x.mean()), "lo": float(lo), "hi": float(hi), "n": int(len(x))}


def _rho(drops, graph) -> float | None:
    from flashtrace.analysis.compare import spearman

    return spearman(drops, graph) if len(drops) >= 3 else None


def example_record(loaded, task: str, seed: int, args, written=None) -> dict:
    """Trace one example (the task's templated one, or `written`: an example with the response its model wrote),
    run the standard interventions, and keep what the summary needs."""
    from flashtrace.analysis.facts import analyse
    from flashtrace.analysis.interventions import sentence_removal
    from flashtrace.evaluate.tasks import make_example
    from flashtrace.run.interventions import intervene
    from flashtrace.run.tracing import attribute, prepare

    start = time.perf_counter()
    ex = make_example(task, seed, args.length) if written is None else written
    trace = attribute(prepare(loaded, ex.prompt, ex.response), hops=args.hops, steps=True,
                      stop_tokens=args.stop_tokens)
    trace = trace.model_copy(update={"extra": {**trace.extra, "gold": [list(g) for g in ex.gold]}})
    traced = time.perf_counter() - start
    record = intervene(loaded, trace, n_random=args.n_random, seed=seed, batch_size=args.batch_size)
    trace = trace.model_copy(update={"interventions": record})
    removal = sentence_removal(trace)
    facts = analyse(trace)
    influence = facts.graph.influence if facts.graph is not None else {}
    text = {s.id: s.text for s in trace.segments}
    steps = [{"id": e.segments[0], "text": text[e.segments[0]][:80], "marker": bool(MARKER.match(text[e.segments[0]])),
              "drop": record.before - e.logprob, "graph": float(influence.get(e.segments[0], 0.0))}
             for e in record.edits if e.kind == "step"]
    content = [s for s in steps if not s["marker"]]
    return {
        "id": f"{task}-{seed}", "task": task, "seed": seed, "n_tokens": trace.n_tokens, "answer": ex.answer,
        "n_prompt_sentences": len(facts.pieces), "before": record.before,
        "top": {"id": removal.top[0], "drop": removal.top[1]} if removal and removal.top else None,
        "random": [{"id": i, "drop": d} for i, d in removal.randoms] if removal else [],
        "gold": {"ids": list(removal.gold[0]), "drop": removal.gold[1]} if removal and removal.gold else None,
        "top_is_gold": bool(removal and removal.top and removal.gold and removal.top[0] in removal.gold[0]),
        "top_text": text[removal.top[0]][:100] if removal and removal.top else None,
        "steps": steps, "has_graph": bool(influence),
        "spearman_all": _rho([s["drop"] for s in steps], [s["graph"] for s in steps]),
        "spearman_content": _rho([s["drop"] for s in content], [s["graph"] for s in content]),
        "top_step_is_marker": bool(steps) and max(steps, key=lambda s: s["drop"])["marker"],
        "trace_s": traced, "intervene_s": record.seconds, **_own_fields(loaded, trace, record, written),
        "total_s": time.perf_counter() - start,
    }


ANSWER_TOKENS = 16  # new tokens for a re-generated answer (the values are numbers or short names)


def _own_fields(loaded, trace, record, written) -> dict:
    """For a response the model wrote itself: whether it was right, and whether each sentence removal (top, the
    first random, gold) changes the answer re-generated after the kept reasoning (None: the templated examples)."""
    if written is None:
        return {}
    from flashtrace.evaluate.protocols import normal_answer

    lo, hi = trace.settings.target
    value = normal_answer("".join(t.text for t in trace.tokens[lo:hi]))
    firsts = {}
    for e in record.edits:
        if e.kind in ("top", "random", "gold") and e.kind not in firsts:
            firsts[e.kind] = e.segments
    changed = {kind: _answer_changed(loaded, trace, ids, value) for kind, ids in firsts.items()}
    return {"correct": bool(written.meta["protocol"]["correct"]), "answer_value": value, "answer_changed": changed}


def _answer_changed(loaded, trace, segment_ids, value: str) -> bool:
    """Remove `segment_ids`, keep everything before the answer's value as written, let the model write the value
    again (greedy): whether it differs from `value` (compared as the evaluation's checker compares answers)."""
    from flashtrace.engine.models.generation import generate_response
    from flashtrace.evaluate.protocols import normal_answer
    from flashtrace.run.interventions import edit_ids

    edited = edit_ids(trace, list(segment_ids))
    text = generate_response(loaded, list(edited.ids[:edited.target[0]]), max_new_tokens=ANSWER_TOKENS).text
    again = normal_answer(text)
    return not re.match(re.escape(value) + r"(?![\w.])", again) and again != value


def annotate_tops(examples: list[dict], length: int) -> None:
    """Fill in ``top_text`` (the top sentence's text) where an earlier version of this script did not store it,
    by segmenting the example again with the default model's tokenizer (no model run)."""
    missing = [e for e in examples if e.get("top") and "top_text" not in e]
    if not missing:
        return
    from transformers import AutoTokenizer

    from flashtrace.analysis.segments import segment_sequence
    from flashtrace.engine.inputs.sequence import build_sequence
    from flashtrace.engine.models.default_model import converted_dir
    from flashtrace.evaluate.tasks import make_example

    tok = AutoTokenizer.from_pretrained(converted_dir())
    for e in missing:
        ex = make_example(e["task"], e["seed"], length)
        seq = build_sequence(tok, ex.prompt, ex.response)
        seg = next(s for s in segment_sequence(seq) if s.id == e["top"]["id"])
        e["top_text"] = "".join(t.text for t in seq.tokens[seg.start: seg.end])[:100]


def _top_minus_random(ex: dict) -> float | None:
    if ex["top"] is None or not ex["random"]:
        return None
    return ex["top"]["drop"] - float(np.mean([r["drop"] for r in ex["random"]]))


def task_summary(examples: list[dict]) -> dict:
    """Per-task means with intervals (the table's row)."""
    rand = [float(np.mean([r["drop"] for r in e["random"]])) if e["random"] else None for e in examples]
    spread = [float(np.std([r["drop"] for r in e["random"]])) for e in examples if len(e["random"]) > 1]
    stepped = [e for e in examples if len(e["steps"]) >= 3]
    return {
        "n": len(examples),
        "tokens": float(np.mean([e["n_tokens"] for e in examples])),
        "before": bootstrap([e["before"] for e in examples]),
        "top": bootstrap([e["top"]["drop"] if e["top"] else None for e in examples]),
        "random": bootstrap(rand),
        "random_within_sd": float(np.mean(spread)) if spread else None,
        "gold": bootstrap([e["gold"]["drop"] if e["gold"] else None for e in examples]),
        "top_minus_random": bootstrap([_top_minus_random(e) for e in examples]),
        "top_is_gold": float(np.mean([e["top_is_gold"] for e in examples])),
        "top_is_question": float(np.mean([(e.get("top_text") or "").strip().startswith("Question:")
                                          for e in examples])),
        "steps_mean": float(np.mean([len(e["steps"]) for e in examples])),
        "spearman_all": bootstrap([e["spearman_all"] for e in stepped]),
        "spearman_content": bootstrap([e["spearman_content"] for e in examples]),
        "examples_3_steps": len(stepped),
        "marker_drop": bootstrap([s["drop"] for e in examples for s in e["steps"] if s["marker"]]),
        "marker_graph": bootstrap([s["graph"] for e in examples for s in e["steps"] if s["marker"]]),
        "content_max_drop": bootstrap([max(s["drop"] for s in e["steps"] if not s["marker"]) for e in examples
                                       if any(not s["marker"] for s in e["steps"])]),
        "content_max_graph": bootstrap([max(s["graph"] for s in e["steps"] if not s["marker"]) for e in examples
                                        if any(not s["marker"] for s in e["steps"])]),
        "top_step_is_marker": float(np.mean([e["top_step_is_marker"] for e in examples if e["steps"]] or [0.0])),
        **_recency_summary(examples),
        **_own_summary(examples),
    }


def _content_steps(ex: dict) -> list[dict]:
    return [s for s in ex["steps"] if not s["marker"]]


def _recency_summary(examples: list[dict]) -> dict:
    """A baseline the hop graph must beat: rank the steps by position (the later, the more influential) and
    correlate that with the removal costs, as the graph is (Spearman, content steps, examples with >= 3 of them);
    the paired difference graph − position; how often the costliest step is the last one before the answer, and
    how often the graph's most influential step is the costliest one."""
    rows = [steps for e in examples if len(steps := _content_steps(e)) >= 3]
    recency = [_rho([s["drop"] for s in steps], list(range(len(steps)))) for steps in rows]
    graph = [_rho([s["drop"] for s in steps], [s["graph"] for s in steps]) for steps in rows]
    costliest = [max(range(len(steps)), key=lambda i: steps[i]["drop"]) for steps in rows]
    return {
        "spearman_recency": bootstrap(recency),
        "graph_minus_recency": bootstrap([g - r if g is not None and r is not None else None
                                          for g, r in zip(graph, recency)]),
        "costliest_is_last": float(np.mean([c == len(s) - 1 for c, s in zip(costliest, rows)])) if rows else None,
        "graph_top_is_costliest": float(np.mean([max(range(len(s)), key=lambda i: s[i]["graph"]) == c
                                                 for c, s in zip(costliest, rows)])) if rows else None,
        "examples_3_content_steps": len(rows),
    }


def _own_summary(examples: list[dict]) -> dict:
    """For responses the model wrote itself: how many were right, ρ over the right ones alone, and how often each
    removal changed the re-generated answer (count of examples with that removal)."""
    if not any("correct" in e for e in examples):
        return {}
    right = [e for e in examples if e["correct"]]
    changed = {kind: [e["answer_changed"][kind] for e in examples if kind in e["answer_changed"]]
               for kind in ("top", "random", "gold")}
    return {"right": len(right),
            "spearman_content_right": bootstrap([e["spearman_content"] for e in right]),
            "answer_changed": {k: {"changed": int(sum(v)), "n": len(v)} for k, v in changed.items()}}


def _ci(cell: dict | None, digits: int = 2) -> str:
    if cell is None:
        return "—"
    return f"{cell['mean']:.{digits}f} [{cell['lo']:.{digits}f}, {cell['hi']:.{digits}f}]"


def table(summary: dict) -> str:
    """The Markdown table of `summary` ({task: task_summary})."""
    head = ("| task | n | tokens | log p(answer) | top sentence | random sentence | gold sentences | top − random "
            "| top is gold / the question | ρ all steps (n) | ρ without 'Answer:' (n) | 'Answer:' costs most |")
    lines = [head, "|" + "---|" * 12]
    for task, s in summary.items():
        rho_all = f"{_ci(s['spearman_all'])} ({s['spearman_all']['n'] if s['spearman_all'] else 0})"
        rho_c = f"{_ci(s['spearman_content'])} ({s['spearman_content']['n'] if s['spearman_content'] else 0})"
        lines.append(f"| {task} | {s['n']} | {s['tokens']:.0f} | {_ci(s['before'])} | {_ci(s['top'])} | "
                     f"{_ci(s['random'])} | {_ci(s['gold'])} | {_ci(s['top_minus_random'])} | "
                     f"{s['top_is_gold']:.0%} / {s['top_is_question']:.0%} | {rho_all} | {rho_c} | {s['top_step_is_marker']:.0%} |")
    return "\n".join(lines)


def marker_table(summary: dict) -> str:
    """The 'Answer:' marker line against the content steps: removal cost and hop-graph influence."""
    lines = ["| task | 'Answer:' removed | costliest other step removed | 'Answer:' graph influence | "
             "largest other step's graph influence |", "|---|---|---|---|---|"]
    for task, s in summary.items():
        lines.append(f"| {task} | {_ci(s['marker_drop'])} | {_ci(s['content_max_drop'])} | "
                     f"{_ci(s['marker_graph'], 3)} | {_ci(s['content_max_graph'], 3)} |")
    return "\n".join(lines)


def recency_table(summary: dict) -> str:
    """The hop graph against the step-position baseline (both correlated with the steps' removal costs)."""
    lines = ["| task | examples (>= 3 steps) | ρ hop graph | ρ step position | graph − position (paired) | "
             "costliest step is the last | graph's top step is the costliest |", "|---|---|---|---|---|---|---|"]
    for task, s in summary.items():
        if not s["examples_3_content_steps"]:
            continue
        lines.append(f"| {task} | {s['examples_3_content_steps']} | {_ci(s['spearman_content'])} | "
                     f"{_ci(s['spearman_recency'])} | {_ci(s['graph_minus_recency'])} | {s['costliest_is_last']:.0%} | "
                     f"{s['graph_top_is_costliest']:.0%} |")
    return "\n".join(lines)


def own_examples(folder: Path) -> dict:
    """The examples of an ``eval --protocol own`` folder, rebuilt as that run built them (its tasks, seeds,
    length; vartrack in words) with each response its model wrote read back from ``folder/responses/``:
    ``{"model", "length", "seeds", "examples": {id: Example}}``. Nothing is generated."""
    from flashtrace.evaluate.protocols import apply_protocol, write_responses
    from flashtrace.evaluate.tasks import TASKS, make_example

    settings = json.loads((folder / "settings.json").read_text())
    protocol = settings["protocol"]
    if protocol["name"] != "own":
        raise SystemExit(f"{folder} is a {protocol['name']!r} run; --responses reads an 'own' one")
    seeds = list(range(settings["seed"], settings["seed"] + settings["n"]))
    tasks = list(TASKS) if settings["source"] == "all" else settings["source"].split(",")
    examples = [(f"{t}-{seed:04d}", make_example(t, seed, length=settings["length"] or None,
                                                 **({"layout": "words"} if t == "vartrack" else {})))
                for seed in seeds for t in tasks]
    kept = {ex_id for ex_id, _ in examples if (folder / "responses" / f"{ex_id}.json").exists()}
    examples = [(ex_id, ex) for ex_id, ex in examples if ex_id in kept]
    written = write_responses(None, examples, folder, protocol["writer"], protocol["max_new_tokens"])
    applied = apply_protocol("own", examples, written)
    return {"model": settings["model"], "length": settings["length"], "seeds": seeds,
            "examples": dict(applied.examples)}


def own_table(summary: dict) -> str:
    """Right answers, ρ on them, and answer changes per removal (the own-reasoning runs)."""
    lines = ["| task | right / n | ρ without 'Answer:', right answers (n) | answer changed: top | random | gold |",
             "|---|---|---|---|---|---|"]
    for task, s in summary.items():
        if "right" not in s:
            continue
        rho = s["spearman_content_right"]
        ch = {k: f"{v['changed']} of {v['n']}" for k, v in s["answer_changed"].items()}
        lines.append(f"| {task} | {s['right']} / {s['n']} | {_ci(rho)} ({rho['n'] if rho else 0}) | {ch['top']} | "
                     f"{ch['random']} | {ch['gold']} |")
    return "\n".join(lines)


def report(summary: dict) -> str:
    """Every table of `summary`, as the script prints them (and the docs show them)."""
    tables = [table(summary), marker_table(summary), recency_table(summary)]
    if any("right" in s for s in summary.values()):
        tables.append(own_table(summary))
    return "\n\n".join(tables)


def summarise(examples: list[dict], tasks: list[str]) -> dict:
    return {t: task_summary(rows) for t in tasks if (rows := [e for e in examples if e["task"] == t])}


def _save(path: Path, settings: dict, examples: list[dict], tasks: list[str]) -> None:
    from flashtrace.base.fileio import atomic_write_text

    data = {"settings": settings, "summary": summarise(examples, tasks), "examples": examples}
    atomic_write_text(path, json.dumps(data, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="all")
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--length", type=int, default=150)
    parser.add_argument("--hops", type=int, default=2)
    parser.add_argument("--stop-tokens", default="paper",
                        help="stop-token preset of the traces (default paper: the committed runs were made with it, "
                             "before punctuation became the library's default)")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--n-random", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--responses", type=Path, default=None,
                        help="an `eval --protocol own` folder: its examples with the responses its model wrote")
    parser.add_argument("--report-only", action="store_true", help="print the table of an existing --out")
    args = parser.parse_args()
    from flashtrace.evaluate.tasks import TASKS

    own = own_examples(args.responses) if args.responses else None
    if own is not None:
        args.model, args.length = own["model"], own["length"]
    tasks = list(TASKS) if args.tasks == "all" else args.tasks.split(",")
    stored = json.loads(args.out.read_text()) if args.out.exists() else {}
    done = stored.get("examples", [])
    if not args.report_only:
        import torch

        from flashtrace.engine.models import load_model

        torch.set_num_threads(args.threads)
        settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "report_only"}
        settings.update(tasks=tasks, cpu_count=os.cpu_count(), load_start=os.getloadavg()[0],
                        interval="95% percentile bootstrap over examples, 10,000 resamples")
        have = {e["id"] for e in done}
        loaded = load_model(args.model, dtype=args.dtype)
        seeds = own["seeds"][:args.n] if own else range(args.n)
        for seed in seeds:
            for task in tasks:
                written = own["examples"].get(f"{task}-{seed:04d}") if own else None
                if f"{task}-{seed}" not in have and (own is None or written is not None):
                    done.append(example_record(loaded, task, seed, args, written))
                    _save(args.out, settings, done, tasks)
        settings["load_end"] = os.getloadavg()[0]
        _save(args.out, settings, done, tasks)
    elif done:
        annotate_tops(done, stored["settings"]["length"])
        _save(args.out, stored["settings"], done, tasks)  # the summary recomputed from the examples
    print(report(summarise(done, tasks)))


if __name__ == "__main__":
    main()
