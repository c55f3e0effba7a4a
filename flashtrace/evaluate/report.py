"""Summaries of an evaluation folder: mean ± std per task × method × metric (Markdown + JSON)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from ..base.fileio import NotAFileError, atomic_write_text, read_regular_file
from .protocols import correctness
from .stats import bootstrap_interval, paired_difference
from ..base.errors import InputError

METRICS = ("rise", "mas", "recovery", "seconds", "deletion_s")
LABELS = {"rise": "RISE ↓", "mas": "MAS ↓", "recovery": "Recovery@10% ↑", "seconds": "attribution s",
          "deletion_s": "deletion s"}
COMPARED = ("rise", "mas", "recovery")  # the metrics given intervals and paired tests
PARTS = ("recording", "attribution", "deletion", "other")  # where an example's time went (`time_parts`)


MAX_RECORD_BYTES = 64 * 2**20  # one example's record (a few kB in practice)
MAX_SETTINGS_BYTES = 2**20


def load_records(out: str | Path) -> list[dict]:
    """Every per-example record under ``out/examples``, sorted by id. Only regular files are read, each bounded
    (`read_regular_file`): a named pipe, device or link there is passed over, never waited on.

    Args:
        out: The evaluation folder.

    Returns:
        The records, as JSON objects, sorted by file name (the example id).
    """
    records = []
    for path in sorted((Path(out) / "examples").glob("*.json")):
        try:
            data = read_regular_file(path, MAX_RECORD_BYTES, "example record")
        except NotAFileError:
            continue
        records.append(json.loads(data))
    return records


def load_settings(out: str | Path) -> dict:
    """The run settings saved in ``out/settings.json`` ({} when missing, unreadable, not a regular file or
    over `MAX_SETTINGS_BYTES`).

    Args:
        out: The evaluation folder.

    Returns:
        The settings, or {}.
    """
    try:
        settings = json.loads(read_regular_file(Path(out) / "settings.json", MAX_SETTINGS_BYTES, "settings"))
    except (OSError, ValueError):
        return {}
    return settings if isinstance(settings, dict) else {}


def find_eval_folders(root: str | Path) -> list[Path]:
    """Folders under `root` (itself included) that hold ``examples/*.json`` from `flashtrace eval`, sorted.

    Args:
        root: The folder searched, at any depth.

    Returns:
        The evaluation folders, sorted ([] when `root` is not a folder).
    """
    root = Path(root)
    if not root.is_dir():
        return []
    found = {p.parent.parent for p in root.glob("**/examples/*.json")}
    return sorted(found)


def featured_first(folders: list[Path]) -> list[Path]:
    """`folders` with those whose settings say ``"featured": true`` (the current default run) first.

    Args:
        folders: Evaluation folders.

    Returns:
        The same folders, the featured ones first, each group in its given order.
    """
    return sorted(folders, key=lambda f: not load_settings(f).get("featured"))


def gold_token_mask(record: dict) -> list[bool] | None:
    """Which of the record's prompt tokens overlap a gold character range (None without gold).

    Newer records store it (``gold_tokens``); for older ones it is rebuilt from the token texts, which
    concatenate to the prompt (None if they do not).

    Args:
        record: An example's evaluation record.

    Returns:
        One flag per prompt token, or None.
    """
    if record.get("gold_tokens") is not None:
        return [bool(g) for g in record["gold_tokens"]]
    if not record.get("gold") or "".join(record["tokens"]) != record["prompt"]:
        return None
    mask, start = [], 0
    for text in record["tokens"]:
        end = start + len(text)
        mask.append(any(start < b and end > a for a, b in record["gold"]))
        start = end
    return mask


def _stats(values: list[float]) -> dict:
    values = [v for v in values if v is not None]
    if not values:
        return {"mean": None, "std": None, "n": 0}
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0
    return {"mean": mean, "std": std, "n": len(values)}


def recovery_cap(n_prompt: int, n_gold: int, fraction: float = 0.1) -> float | None:
    """Best achievable Recovery@10%: ``min(1, ceil(fraction·P) / |gold|)`` (None without gold).

    Args:
        n_prompt: The prompt tokens (P).
        n_gold: The gold tokens among them.
        fraction: The share of prompt tokens counted as the top.

    Returns:
        The cap, or None when `n_gold` is 0.
    """
    return min(1.0, math.ceil(fraction * n_prompt) / n_gold) if n_gold else None


def recovery_chance(n_prompt: int, fraction: float = 0.1) -> float:
    """Expected Recovery@10% of a random ranking: every gold token is in the top ``ceil(fraction·P)`` with
    probability ``ceil(fraction·P) / P``.

    Args:
        n_prompt: The prompt tokens (P).
        fraction: The share of prompt tokens counted as the top.

    Returns:
        The expected Recovery (0 when `n_prompt` is 0).
    """
    return min(1.0, math.ceil(fraction * n_prompt) / n_prompt) if n_prompt else 0.0


def _method_order(records: list[dict]) -> list[str]:
    names: list[str] = []
    for r in records:
        names += [m for m in r["methods"] if m not in names]
    return names


def _hop(method: str) -> int | None:
    """K of ``flashtrace-kK`` or ``flashtrace-kK-<variant>``; None for other methods."""
    return int(method[len("flashtrace-k"):].split("-")[0]) if method.startswith("flashtrace-k") else None


def _hop0(method: str) -> str:
    """The K = 0 method of the same FlashTrace variant (``flashtrace-k2-nostop`` -> ``flashtrace-k0-nostop``)."""
    rest = method[len("flashtrace-k"):].split("-", 1)
    return "flashtrace-k0" + (f"-{rest[1]}" if len(rest) > 1 else "")


def time_parts(record: dict) -> dict[str, float]:
    """Where one example's time went, in seconds: the recorded forward pass, every method's attribution,
    every method's deletion curve, and the rest (tokenising, metrics); they add up to ``total_s``.
    {} for records without the times (written before they were kept).

    Args:
        record: An example's evaluation record.

    Returns:
        ``{"recording", "attribution", "deletion", "other"}`` in seconds, or {}.
    """
    total, forward = record.get("total_s"), record.get("forward_s")
    methods = record.get("methods", {}).values()
    if total is None or forward is None or any("deletion_s" not in m for m in methods):
        return {}
    attribution = sum(m["seconds"] for m in methods)
    deletion = sum(m["deletion_s"] for m in methods)
    return {"recording": forward, "attribution": attribution, "deletion": deletion,
            "other": max(0.0, total - forward - attribution - deletion)}


def _values(rows: list[dict], method: str, metric: str) -> list:
    """`metric` of `method` on each record of `rows` that has the method."""
    return [r["methods"][method].get(metric) for r in rows if method in r["methods"]]


def _one_method(rows: list[dict], m: str) -> dict:
    """``{"hops", metric: stats}`` of method `m`; the compared metrics with their bootstrap interval."""
    stats = {"hops": _hop(m), **{k: _stats(_values(rows, m, k)) for k in METRICS}}
    for metric in COMPARED:
        stats[metric]["interval"] = bootstrap_interval(_values(rows, m, metric))
    return stats


def _against_k0(rows: list[dict], m: str, base: str) -> dict:
    """Method `m` against `base` (K = 0 of its variant) on the examples that have both: each compared metric
    paired (``vs_k0``, unless `m` is `base`) and the attribution mass reaching the prompt relative to it."""
    both = [r for r in rows if m in r["methods"] and base in r["methods"]]
    out = {"prompt_mass_vs_k0": _stats([sum(r["methods"][m]["scores"]) / sum(r["methods"][base]["scores"])
                                        for r in both if sum(r["methods"][base]["scores"]) > 0])}
    if m != base:
        out["vs_k0"] = {metric: paired_difference(_values(both, m, metric), _values(both, base, metric))
                        for metric in COMPARED}
    return out


def _method_stats(rows: list[dict]) -> dict[str, dict]:
    """``{method: {"hops", metric: stats, ["prompt_mass_vs_k0", "vs_k0"]}}`` over the records `rows` of one task."""
    per_method = {m: _one_method(rows, m) for m in _method_order(rows)}
    for m in per_method:  # FlashTrace against hop 0 of the same variant
        base = _hop0(m) if m.startswith("flashtrace-k") else None
        if base in per_method:
            per_method[m].update(_against_k0(rows, m, base))
    return per_method


def _mean_curves(rows: list[dict], methods) -> dict[str, list[float]]:
    """Each method's deletion curve, averaged over the examples that have the method."""
    k, curves = rows[0]["k"], {}
    for m in (methods if k else ()):  # k = 0: a run without deletion curves
        have = [r["methods"][m]["n"] for r in rows if m in r["methods"]]
        curves[m] = [sum(n[t] for n in have) / len(have) for t in range(k + 1)]
    return curves


def refusals(rows: list[dict]) -> dict[str, dict]:
    """The methods that refused examples of `rows` (`runner.evaluate_context`): per method how many, which
    examples and the first message. A refused example is left out of that method's statistics and of its
    paired comparisons.

    Args:
        rows: Per-example evaluation records.

    Returns:
        ``{method: {"n", "examples", "message"}}``, {} when no method refused.
    """
    out: dict[str, dict] = {}
    for r in rows:
        for method, message in (r.get("refused") or {}).items():
            entry = out.setdefault(method, {"n": 0, "examples": [], "message": message})
            entry["n"] += 1
            entry["examples"].append(r.get("id", "?"))
    return out


def group_of(record: dict) -> str:
    """The summary group of an example: its task, split by whether the model answered right when the model wrote
    its own reasoning (``"arithmetic (right)"``, ``"arithmetic (wrong)"``; `protocols.correctness`).

    Args:
        record: An example's evaluation record.

    Returns:
        The group's name.
    """
    split = correctness(record)
    return record["task"] if split is None else f"{record['task']} ({split})"


SHOWN_SETTINGS = ("model", "dtype", "score_dtype", "n", "length", "k", "ig_steps", "target", "threads", "seed")


def settings_line(settings: dict) -> str:
    """A run's settings in one line (``model = ... · n = 10 · ...``), with who wrote the reasoning under the paper
    or own protocol and how many of its answers were right and kept.

    Args:
        settings: The run's settings (`load_settings`); only `SHOWN_SETTINGS` and the protocol are shown.

    Returns:
        The line ("" when nothing is shown).
    """
    shown = {k: v for k, v in settings.items() if k in SHOWN_SETTINGS}
    protocol = settings.get("protocol") if isinstance(settings.get("protocol"), dict) else {}
    if protocol.get("name") in ("paper", "own"):
        shown["protocol"] = (f"{protocol['name']} (written by {protocol.get('writer')}: {protocol.get('right')} of "
                             f"{protocol.get('written')} right, {protocol.get('kept')} kept)")
    return " · ".join(f"{k} = {v}" for k, v in shown.items())


def summarise(records: list[dict], settings: dict | None = None) -> dict:
    """Nested summary: ``tasks[group][method][metric] = {mean, std, n}`` plus per-group example info; a group is
    a task, or a task's right or wrong answers under the ``own`` protocol (`group_of`).

    Args:
        records: The per-example records (`load_records`).
        settings: The run's settings, kept in the summary (None: {}).

    Returns:
        ``{"settings", "tasks"}``: per group its example count, per-method statistics (with bootstrap intervals
        and, for FlashTrace, the paired comparison against K = 0), mean deletion curves, tokens, times and the
        Recovery cap and chance, and the methods that refused examples (`refusals`, only when any did).
    """
    tasks: dict[str, dict] = {}
    for task in dict.fromkeys(group_of(r) for r in records):
        rows = [r for r in records if group_of(r) == task]
        per_method = _method_stats(rows)
        tasks[task] = {
            "n": len(rows), "methods": per_method, "mean_deletion_curve": _mean_curves(rows, per_method),
            "tokens": _stats([r["n_tokens"] for r in rows]), "prompt_tokens": _stats([r["n_prompt"] for r in rows]),
            "example_seconds": _stats([r.get("total_s") for r in rows]),
            "deletion_seconds": _stats([r.get("deletion_s") for r in rows]),
            "time_parts": {part: _stats([time_parts(r).get(part) for r in rows]) for part in PARTS},
            "recovery_cap": _stats([recovery_cap(r["n_prompt"], r["n_gold"]) for r in rows]),
            "recovery_chance": _stats([recovery_chance(r["n_prompt"]) for r in rows if r["n_gold"]]),
        }
        if refused := refusals(rows):
            tasks[task]["refused"] = refused
    return {"settings": settings or {}, "tasks": tasks}


def _fmt(stat: dict, digits: int = 3) -> str:
    if stat["mean"] is None:
        return "–"
    return f"{stat['mean']:.{digits}f} ± {stat['std']:.{digits}f}"


def _method_rows(methods: dict[str, dict]) -> list[str]:
    """The Markdown rows of one task's method table, the best mean of each metric in bold."""
    def best(m: str):
        means = [v[m]["mean"] for v in methods.values() if v[m]["mean"] is not None]
        return (max if m == "recovery" else min)(means, default=None)

    bests = {m: best(m) for m in ("rise", "mas", "recovery")}
    lines = []
    for name, v in methods.items():
        cells = []
        for m in METRICS:
            cell = _fmt(v[m], 2 if m in ("seconds", "deletion_s") else 3)
            cells.append(f"**{cell}**" if bests.get(m) is not None and v[m]["mean"] == bests[m] else cell)
        lines.append(f"| {name} | {'' if v['hops'] is None else v['hops']} | " + " | ".join(cells) + " |")
    return lines


def _paired_lines(methods: dict[str, dict]) -> list[str]:
    """One line per metric: each FlashTrace K > 0 minus K = 0 of the same variant on the same examples, with the
    bootstrap 95 % interval and the sign-flip p-value; a difference whose interval holds 0 is called a tie."""
    lines = []
    for metric in COMPARED:
        cells = []
        for name, v in methods.items():
            d = (v.get("vs_k0") or {}).get(metric)
            if d:
                lo, hi = d["interval"]
                cells.append(f"{name[len('flashtrace-'):].upper()} {d['mean']:+.3f} [{lo:+.3f}, {hi:+.3f}], "
                             f"p = {d['p']:.2f}{' (tie)' if d['tie'] else ''}")
        if cells:
            lines.append(f"{LABELS[metric]} against K = 0 of the same variant, paired (95 % bootstrap interval): "
                         + "; ".join(cells))
    return lines


def _task_markdown(task: str, info: dict) -> list[str]:
    tok, ex_s = info["tokens"], info["example_seconds"]
    lines = [f"### {task} (n = {info['n']}, {tok['mean']:.0f} ± {tok['std']:.0f} tokens, "
             f"{info['prompt_tokens']['mean']:.0f} prompt tokens; "
             f"{_fmt(ex_s, 1)} s per example, all methods + deletion; "
             f"Recovery@10%: best achievable {_fmt(info['recovery_cap'], 2)}, "
             f"random ranking {_fmt(info['recovery_chance'], 2)})\n",
             "| method | hops | " + " | ".join(LABELS[m] for m in METRICS) + " |",
             "|---|---|" + "---|" * len(METRICS), *_method_rows(info["methods"])]
    parts = info.get("time_parts", {})
    if all(parts.get(p, {}).get("mean") is not None for p in PARTS):
        lines.append("Time per example: " + " + ".join(f"{p} {parts[p]['mean']:.1f} s" for p in PARTS)
                     + f" = {sum(parts[p]['mean'] for p in PARTS):.1f} s (means)")
    for method, r in info.get("refused", {}).items():
        lines.append(f"{method} refused {r['n']} of {info['n']} examples ({', '.join(r['examples'])}: "
                     f"{r['message']}); its statistics leave them out")
    lines += _paired_lines(info["methods"])
    masses = {m: v["prompt_mass_vs_k0"] for m, v in info["methods"].items() if "prompt_mass_vs_k0" in v}
    if masses:
        lines.append("FlashTrace attribution mass on the prompt relative to K = 0: "
                     + ", ".join(f"{m[len('flashtrace-'):].upper()} {_fmt(v, 2)}" for m, v in masses.items()))
    return [*lines, ""]


def markdown(summary: dict) -> str:
    """One table per task: rows method (hops), columns RISE, MAS, Recovery@10%, attribution and deletion
    seconds; then where an example's time went.

    Args:
        summary: A summary (`summarise`).

    Returns:
        The Markdown text.
    """
    settings = summary.get("settings") or {}
    lines = ["Settings: " + ", ".join(f"{k} = {v}" for k, v in settings.items()) + "\n"] if settings else []
    for task, info in summary["tasks"].items():
        lines += _task_markdown(task, info)
    return "\n".join(lines)


def ci95(stat: dict) -> float:
    """Half-width of the normal-approximation 95 % interval of a mean.

    Args:
        stat: ``{"mean", "std", "n"}`` of a metric.

    Returns:
        The half-width (0 for fewer than 2 values or no std).
    """
    return 1.96 * stat["std"] / math.sqrt(stat["n"]) if stat.get("n", 0) > 1 and stat.get("std") is not None else 0.0


def write_report(out: str | Path, settings: dict | None = None) -> dict:
    """Summarise ``out/examples`` into ``summary.json`` and ``summary.md``; returns the summary (the charts
    are the presentation floor's: `flashtrace.viz.evaluation.write_charts`).

    Args:
        out: The evaluation folder.
        settings: The run's settings (None: those saved in ``out/settings.json``).

    Returns:
        The summary (`summarise`).

    Raises:
        InputError: When ``out/examples`` holds no per-example record.
    """
    out = Path(out)
    records = load_records(out)
    if not records:
        raise InputError(f"no per-example results under {out / 'examples'}")
    if settings is None:
        settings = load_settings(out)
    summary = summarise(records, settings)
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=1))
    atomic_write_text(out / "summary.md", markdown(summary))
    return summary


__all__ = ["load_records", "load_settings", "settings_line", "find_eval_folders", "gold_token_mask", "recovery_cap", "recovery_chance", "ci95", "time_parts", "refusals", "summarise", "markdown", "write_report"]
