"""How long an evaluation or a methods comparison will take, before it starts, and how long is left as it runs.

An example costs its recorded forward pass, each method's attribution and each method's deletion curve.
The attributions use the trace estimate's model (`flashtrace.engine.estimate`): FlashTrace with K hops,
IFR and attention as a hop 0 over the target rows; IG and segment ablation as the forward (and backward)
passes they run. A deletion curve of ``k`` steps is ``min(k, P) + 1`` scoring passes of the whole
sequence, and every method after the first shares the two end states (nothing deleted, everything
deleted). `Countdown` turns the estimate and what has finished into the time left, as one range that
narrows as the run goes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

from ..engine.estimate import RANGE_FACTOR, Speed, estimate, scoring_seconds, speed_of

if TYPE_CHECKING:
    from ..engine.models import LoadedModel
    from ..run.tracing import TargetSpec
    from .tasks import Example

IG_PASS_COST = 3.0  # one integrated-gradients step: a forward and a backward pass, in forward passes


@dataclass(frozen=True)
class ExampleSize:
    """What the cost of one example depends on: tokens, target rows, generated rows, prompt tokens, prompt
    segments."""

    n_tokens: int
    n_target: int
    n_generated: int
    n_prompt: int
    n_segments: int = 1


@dataclass
class RunEstimate:
    """Predicted seconds of a run: ``setup`` (model load, warm-up) and, per example, ``recording`` and per
    method ``(attribution, deletion)``."""

    setup: float = 0.0
    examples: list[dict] = field(default_factory=list)  # [{"recording": s, "methods": {name: (attr s, del s)}}]

    def example_seconds(self, i: int) -> float:
        """The estimated seconds of example `i`: its recording plus each method's attribution and deletion.

        Args:
            i: The example's index in ``examples``.

        Returns:
            The example's estimated seconds.
        """
        ex = self.examples[i]
        return ex["recording"] + sum(a + d for a, d in ex["methods"].values())

    @property
    def seconds(self) -> float:
        """The estimated seconds of the whole run (setup and every example)."""
        return self.setup + sum(self.example_seconds(i) for i in range(len(self.examples)))

    def range(self) -> tuple[float, float]:
        """The estimate as a (low, high) range of seconds.

        Returns:
            ``(low, high)`` seconds: the estimate divided and multiplied by `RANGE_FACTOR`.
        """
        return self.seconds / RANGE_FACTOR, self.seconds * RANGE_FACTOR


def deletion_states(n_prompt: int, k: int, first: bool) -> int:
    """Scoring passes a method's deletion curve needs: ``min(k, P) + 1`` distinct states, less the two end
    states when an earlier method of the example scored them (none when `k` is 0: no curves).

    Args:
        n_prompt: The example's prompt tokens (P), the deletable ones.
        k: The deletion curve's steps (0: no curves).
        first: Whether this is the example's first method (no earlier method scored the two end states).

    Returns:
        The number of scoring passes (sequences) the curve adds.
    """
    if k == 0:  # no deletion curves
        return 0
    states = min(k, max(n_prompt, 1)) + 1
    return states if first else max(states - 2, 0)


def attribution_seconds(loaded: LoadedModel, name: str, size: ExampleSize, speed: Speed, ig_steps: int = 16) -> float:
    """Predicted seconds of evaluation method `name` on an example of `size` (its recording already made).

    Args:
        loaded: The `LoadedModel` whose shape the estimate uses.
        name: The evaluation method (``ig``, ``perturbation``, ``flashtrace-kK``, ``flashtrace-kK-gen``, ...).
        size: What the example's cost depends on.
        speed: How fast runs go on this machine (`engine.estimate.speed_of`).
        ig_steps: Integrated-gradients steps (each a forward and a backward pass).

    Returns:
        The predicted seconds of the method's attribution.
    """
    if name == "ig":
        return scoring_seconds(loaded, size.n_tokens, IG_PASS_COST * ig_steps, speed)
    if name == "perturbation":
        return scoring_seconds(loaded, size.n_tokens, size.n_segments + 1, speed)
    hops, rows = 0, size.n_target
    if name.startswith("flashtrace-k"):
        hops = int(name[len("flashtrace-k")])
        rows = size.n_generated if "-gen" in name else size.n_target
    return estimate(loaded, size.n_tokens, hops, n_target=rows, n_recursive=size.n_generated, warm=True,
                    slowdown=speed.slow, threads=speed.threads).attribution_s


def example_estimate(loaded: LoadedModel, size: ExampleSize, methods: list[str], k: int = 20, ig_steps: int = 16,
                     speed: Speed | None = None, recorded: bool = False, score_speedup: float = 1.0) -> dict:
    """``{"recording": s, "methods": {name: (attribution s, deletion s)}}`` for one example.

    Args:
        loaded: The `LoadedModel` whose shape the estimate uses.
        size: What the example's cost depends on.
        methods: The evaluation methods to run, in order (the first scores the deletion curves' end states).
        k: The deletion curves' steps (0: no curves).
        ig_steps: Integrated-gradients steps.
        speed: How fast runs go on this machine (None: `engine.estimate.speed_of` now).
        recorded: Whether the example's forward pass is already made.
        score_speedup: How much faster the matrix products of the deletion curves' precision run than the
            model's own, `engine.models.scoring.speedup`.

    Returns:
        ``{"recording": seconds, "methods": {name: (attribution seconds, deletion seconds)}}``.
    """
    speed = speed or speed_of()
    forward = 0.0 if recorded else estimate(loaded, size.n_tokens, 0, warm=True, slowdown=speed.slow,
                                            threads=speed.threads).forward_s
    costs = {}
    for i, name in enumerate(methods):
        states = deletion_states(size.n_prompt, k, first=i == 0)
        costs[name] = (attribution_seconds(loaded, name, size, speed, ig_steps),
                       scoring_seconds(loaded, size.n_tokens, states, speed, matmul_speedup=score_speedup))
    return {"recording": forward, "methods": costs}


def sequence_size(loaded: LoadedModel, prompt: str, response: str, target: TargetSpec = "answer",
                  chat_template: bool = True) -> ExampleSize:
    """The `ExampleSize` of prompt + response, tokenised as the run will tokenise it (no model run).

    Args:
        loaded: The `LoadedModel` whose tokenizer tokenises the text.
        prompt: The prompt.
        response: The response that follows it.
        target: The target (`run.tracing.resolve_target`: ``answer``, ``value``, ``START:END``, a token range...).
        chat_template: Whether the prompt goes inside the tokenizer's chat template (when it has one).

    Returns:
        The example's tokens, target rows, generated rows, prompt tokens and prompt segments.
    """
    from ..analysis.segments import segment_sequence
    from ..engine.inputs import build_sequence
    from ..run.tracing import resolve_target

    seq = build_sequence(loaded.tokenizer, prompt, response, chat_template)
    lo, hi = resolve_target(seq, target)
    prompt_segments = sum(1 for s in segment_sequence(seq) if s.role == "prompt")
    return ExampleSize(len(seq), hi - lo, len(seq.positions("reasoning", "answer")), len(seq.positions("prompt")),
                       max(prompt_segments, 1))


def estimate_eval(loaded: LoadedModel, jobs: Iterable[tuple[str, Example, list[str]]], k: int = 20,
                  ig_steps: int = 16, target: str = "answer", speed: Speed | None = None,
                  score_speedup: float = 1.0) -> RunEstimate:
    """The `RunEstimate` of `flashtrace eval` over ``[(id, Example, methods to run)]`` (`runner.pending`) with
    a loaded model; ``examples[i]["id"]`` names each.

    Args:
        loaded: The loaded model (`LoadedModel`).
        jobs: ``[(id, Example, methods to run)]``, as `runner.pending` returns them.
        k: The deletion curves' steps.
        ig_steps: Integrated-gradients steps.
        target: The target of each example (`run.tracing.resolve_target`).
        speed: How fast runs go on this machine (None: `engine.estimate.speed_of` now).
        score_speedup: See `example_estimate`.

    Returns:
        The run's estimate, one entry per job in ``examples``.
    """
    speed = speed or speed_of()
    run = RunEstimate()
    for ex_id, example, methods in jobs:
        size = sequence_size(loaded, example.prompt, example.response, target)
        example_cost = example_estimate(loaded, size, methods, k, ig_steps, speed, score_speedup=score_speedup)
        run.examples.append({"id": ex_id, **example_cost})
    return run


class Countdown:
    """Time left in a run as one range: the estimate's remaining work, scaled by how fast the finished part
    went against its estimate; the range is the estimate's (÷/× `RANGE_FACTOR`) at the start and narrows to
    the extrapolation as the run nears its end."""

    def __init__(self, total_s: float):
        self.total_s = max(total_s, 1e-9)

    def left(self, done_s: float, elapsed_s: float) -> tuple[float, float]:
        """``(low, high)`` seconds left when work estimated at `done_s` has taken `elapsed_s`.

        Args:
            done_s: The estimated seconds of the work finished so far.
            elapsed_s: The seconds that work actually took.

        Returns:
            ``(low, high)`` seconds left.
        """
        done = min(max(done_s, 0.0), self.total_s)
        fraction = done / self.total_s
        pace = min(max(elapsed_s / done, 1 / RANGE_FACTOR ** 2), RANGE_FACTOR ** 2) if fraction > 0.05 else 1.0
        centre = (self.total_s - done) * pace
        spread = RANGE_FACTOR ** (1 - fraction)
        return centre / spread, centre * spread


__all__ = ["ExampleSize", "RunEstimate", "Countdown", "deletion_states", "attribution_seconds", "example_estimate",
           "sequence_size", "estimate_eval", "IG_PASS_COST"]
