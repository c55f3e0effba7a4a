"""What `flashtrace eval` shows while it runs: a bar over the examples, a bar over the methods of the example
running (each method's attribution, then its deletion curve by forward-pass layer), and the time left as
one range (`flashtrace.evaluate.estimate.Countdown`), updated as each part finishes."""

from __future__ import annotations

import time

from ..base.units import time_range
from ..evaluate.estimate import Countdown, RunEstimate


class EvalBars:
    """The two tqdm bars of an evaluation, fed by `run_eval`'s ``progress`` and ``on_example`` callbacks.
    With `plan` (the run's estimate), the methods bar also says how long is left in all."""

    def __init__(self, n_examples: int, n_methods: int, plan: RunEstimate | None = None, disable: bool = False):
        from tqdm import tqdm

        self.examples = tqdm(total=n_examples, desc="eval", unit="ex", disable=disable)
        self.methods = tqdm(total=n_methods, desc="methods", unit="method", leave=False, disable=disable,
                            position=1, bar_format="{desc} |{bar}| {n}/{total} methods")
        self.plan = {ex["id"]: ex for ex in plan.examples} if plan else {}
        self.countdown = Countdown(plan.seconds - plan.setup) if plan else None
        self.started, self.done_s, self.current, self.finished = time.perf_counter(), 0.0, None, set()

    def _left(self, partial_s: float = 0.0) -> str:
        if self.countdown is None:
            return ""
        lo, hi = self.countdown.left(self.done_s + partial_s, time.perf_counter() - self.started)
        return f"; {time_range(lo, hi)} left"

    def _estimate(self, ex_id: str, method: str) -> tuple[float, float]:
        return self.plan.get(ex_id, {}).get("methods", {}).get(method, (0.0, 0.0))

    def method_step(self, ex_id: str, method: str, phase: str, done: int, total: int) -> None:
        """Advance the method bar for one progress report of `method` on example `ex_id` (attribution or
        deletion phase, `done` of `total`).

        Args:
            ex_id: The id of the example being run.
            method: The attribution method reporting.
            phase: ``"attribution"`` or ``"deletion"``: which part of the method's work is reporting.
            done: How many steps of the phase are done.
            total: How many steps the phase has in all.
        """
        if ex_id != self.current:
            self.current, self.finished = ex_id, set()
            self.methods.reset()
            self.done_s += self.plan.get(ex_id, {}).get("recording", 0.0)
        attribution_s, deletion_s = self._estimate(ex_id, method)
        share = done / total if total else 1.0
        if phase == "deletion" and done >= total and method not in self.finished:
            self.finished.add(method)
            self.done_s += attribution_s + deletion_s
            self.methods.set_description_str(f"{ex_id} {method}: done{self._left()}", refresh=False)
            self.methods.update(1)
            return
        partial = 0.0 if phase == "attribution" else attribution_s + deletion_s * share
        what = phase if phase == "attribution" else f"deletion curve {share:.0%}"
        self.methods.set_description_str(f"{ex_id} {method}: {what}{self._left(partial)}", refresh=False)
        self.methods.update(0)  # redraws at most every tenth of a second

    def example_done(self, ex_id: str, record: dict) -> None:
        """Count example `ex_id` as done (or kept from an earlier run) and report a failure if it had one.

        Args:
            ex_id: The id of the example.
            record: The example's result record: its ``"error"`` when it failed, its ``"total_s"``; empty when
                the example was kept from an earlier run.
        """
        if "error" in record:
            self.examples.write(f"{ex_id}: failed: {record['error'].splitlines()[0][:300]}")
        if ex_id != self.current:  # kept, or run elsewhere (Ray): count its whole estimate now
            ex = self.plan.get(ex_id, {})
            self.done_s += ex.get("recording", 0.0) + sum(a + d for a, d in ex.get("methods", {}).values())
        self.examples.set_postfix_str((f"{ex_id} {record.get('total_s', 0):.1f}s" if record else f"{ex_id} (kept)")
                                      + self._left())
        self.examples.update(1)

    def close(self) -> None:
        """Close both progress bars."""
        self.methods.close()
        self.examples.close()


__all__ = ["EvalBars"]
