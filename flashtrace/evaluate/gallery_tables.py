"""The gallery's tables as Markdown rows, from the shipped gallery through the analysis layer (no model): one
row per trace (who wrote the reasoning, its answer against the right one, tokens, reasoning steps, what the hops
change) and one row per trace of its stored interventions (step influence by removal against the hop graph; the
top, random and gold sentence removals). docs/app.md holds exactly these rows (`benchmarks/gallery_tables.py`
prints them; `tests/test_gallery.py` compares).
"""

from __future__ import annotations

from ..analysis.interventions import intervention_facts
from ..analysis.segments import steps_before_target
from ..analysis.text import quote
from ..store.gallery import list_gallery, load_gallery_trace

CHANGED = {"changed": "yes", "same": "no", "tie": "no clear change (a tie)"}
GALLERY_HEADER = ("| name | title | reasoning by | answer (right answer) | tokens | steps | top-10 overlap K=0 vs K=3 | "
                  "top context sentence changes |\n|---|---|---|---|---|---|---|---|")
INTERVENTION_HEADER = ("| trace | steps | rank correlation (verdict) | top step: by removal / by the graph | top sentence "
                       "drop (verdict) | random drops, mean (range) | gold drop |\n|---|---|---|---|---|---|---|")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def gallery_rows() -> list[str]:
    """One Markdown row per gallery trace, in the index's order.

    Returns:
        The rows (under `GALLERY_HEADER`): name, title, who wrote the reasoning, the answer (against the right
        one), tokens, reasoning steps, the top-10 overlap of hop 0 and hop 3 and whether the top context
        sentence changes.
    """
    rows = []
    for item in list_gallery():
        trace = load_gallery_trace(item.name)
        steps = len(steps_before_target(trace))
        by = f"{item.model} itself" if item.written else f"template ({item.model} reads it)"
        if item.right_answer is None:
            answer = quote(item.answer, 30)
        else:
            answer = f"{quote(item.answer, 30)} ({'right' if item.correct else 'wrong; right: ' + quote(item.right_answer, 20)})"
        rows.append(f"| {item.name} | {_cell(item.title)} | {by} | {_cell(answer)} | {item.n_tokens:,} | {steps} | "
                    f"{item.overlap} | {CHANGED.get(item.change, item.change)} |")
    return rows


def intervention_rows() -> list[str]:
    """One Markdown row per gallery trace with stored interventions.

    Returns:
        The rows (under `INTERVENTION_HEADER`), in the index's order: the steps' rank correlation between removal
        and the hop graph, the top step by each, and the top, random and gold sentence removals' drops.
    """
    rows = []
    for item in list_gallery():
        trace = load_gallery_trace(item.name)
        facts = intervention_facts(trace)
        if facts is None:
            continue
        s, r = facts.steps, facts.removal
        labels = dict(zip(s.ids, s.labels)) if s else {}
        rho = "—" if s is None or s.spearman is None else f"{s.spearman:+.2f}"
        top = (f"{s.top}: {quote(labels.get(s.top_drop, ''), 40)} / {quote(labels.get(s.top_graph, ''), 40)}"
               if s and s.top != "none" else "—")
        top_drop = (f"{r.top[1]:.2f} ({r.check.verdict if r.check else '—'})" if r and r.top else "—")
        randoms = [d for _, d in r.randoms] if r else []
        spread = (f"{sum(randoms) / len(randoms):.2f} ({min(randoms):.2f} to {max(randoms):.2f})" if randoms else "—")
        gold = f"{r.gold[1]:.2f}" if r and r.gold else "—"
        rows.append(f"| {item.name} | {len(s.ids) if s else 0} | {rho} ({s.verdict if s else '—'}) | {_cell(top)} | "
                    f"{top_drop} | {spread} | {gold} |")
    return rows


__all__ = ["GALLERY_HEADER", "INTERVENTION_HEADER", "gallery_rows", "intervention_rows"]
