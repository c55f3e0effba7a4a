"""The tracing API: prompt (+ response) → recording → attribution with hops → `Trace`.

`prepare` runs the model's one forward pass; `attribute` can then be called any number of times on
the same `Prepared` (other targets, hop counts, methods) without running the model again.
"""

from __future__ import annotations

import inspect
import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import torch

from ..engine.attribution import get_method, recursive_hops
from ..engine.attribution.registry import Method, Source
from ..engine.attribution.steps import range_weights, step_attributions
from ..engine.estimate import check_run
from ..engine.inputs.chat import Prompt, is_messages, prompt_text
from ..engine.inputs.ids import is_token_ids, texts_of_ids
from ..base.errors import InputError, AnswerGuessedWarning
from ..engine.inputs import (DEFAULT_STOP_TOKENS, StopTokens, TokenSequence, answer_guess, answer_value, build_sequence,
                             detect_spans, stop_rule)
from ..analysis.compare import HopDepthComparison, compare_depths
from ..analysis.limits import DEFAULT_HOPS, HOP0_SPANS, check_options
from .prechecks import check_text_size
from ..engine.models import LoadedModel, Recording, load_model, record_forward
from ..engine.models.borrow import in_use
from ..engine.models.generation import Sampling, generate as generate_text, generation_options
from ..analysis.segments import segment_sequence
from ..analysis.schema import (HopRecord, ModelInfo, Scores, SegmentRecord, Settings, Spans, StepRecord, TokenRecord, Trace,
                    normalised)

if TYPE_CHECKING:
    from transformers import GenerationConfig

TargetSpec = str | tuple[int, int]


@dataclass
class Prepared:
    """A tokenised sequence and its recording: everything attributions need."""

    loaded: LoadedModel
    sequence: TokenSequence
    recording: Recording
    timings: dict
    generation: dict | None = None  # how the response was generated and ended (`Generated.record`), None when given


def _loaded(model: LoadedModel | str) -> LoadedModel:
    return load_model(model) if isinstance(model, str) else model


def prepare(model: LoadedModel | str, prompt: Prompt, response: str | None = None, *, generate: bool = False,
            max_new_tokens: int = 256, chat_template: bool = True, reasoning_instruction: bool = False,
            check_memory: bool = True, on_estimate: Callable | None = None, hops: int = DEFAULT_HOPS,
            do_sample: bool = False, temperature: float | None = None, top_p: float | None = None,
            seed: int | None = None, on_text: Callable[[str, int], None] | None = None,
            generation_config: GenerationConfig | dict[str, Any] | None = None,
            **generate_options: Any) -> Prepared:
    """Tokenise prompt + response (or generate the response first) and record one forward pass.

    With `generate`, the response is the model's: greedy, or sampled with ``do_sample=True``, at most
    `max_new_tokens` tokens; these settings are recorded in ``trace.extra["generation"]``. Any other setting of
    transformers' ``generate`` is accepted too, as a `generation_config` or as keywords: checked by transformers,
    passed to ``generate`` and recorded likewise.

    Args:
        model: A loaded model, or a name to load (alias, local folder or Hugging Face id).
        prompt: A string, token ids (a tensor, array or list of ints, taken as the model reads them: no chat
            template is added; they must tokenise back from their text, `inputs.ids`) or a chat-messages list
            (``[{"role": "user", "content": ...}, ...]``, rendered with the model's chat template; the trace's
            prompt is the contents joined by a blank line, the list is kept in ``trace.extra["messages"]``).
        response: The response to teacher-force; None with `generate`.
        generate: The model writes the response.
        max_new_tokens: The most tokens generated.
        chat_template: Render the prompt with the model's chat template.
        reasoning_instruction: Off by default; appends `REASONING_INSTRUCTION` to the prompt before generating, for
            models without a thinking mode; its tokens get the template role, so evidence, shares and Recovery
            never count what the tool itself wrote.
        check_memory: Refuse (`ResourceError`) a sequence whose predicted peak memory exceeds what is available,
            before the model runs.
        on_estimate: `on_estimate(Estimate)` sees the prediction first.
        hops: The hops the prediction is made for, over the generated tokens (the hops the caller will attribute
            with).
        do_sample: Sample the response instead of greedy decoding.
        temperature: The sampling temperature (with `do_sample`).
        top_p: The nucleus-sampling mass (with `do_sample`).
        seed: Makes the sampling repeatable.
        on_text: `on_text(text, n_new_tokens)` sees the response as it grows (one call per new token; it may
            raise to stop).
        generation_config: Other settings of ``generate``: a transformers ``GenerationConfig`` or a dict.
        **generate_options: Other settings of ``generate`` as keywords (``top_k=50``, ``num_beams=1``,
            ``repetition_penalty=1.1``, ...).

    Returns:
        The tokenised sequence and its recording, ready for `attribute`.

    Raises:
        InputError: When generation settings are given without `generate`, the response is empty, or the
            prompt or response is too long for the model.
        ResourceError: With `check_memory`, when the predicted peak memory exceeds what is available.
    """
    sampling = Sampling(do_sample, temperature, top_p, seed, generation_options(generation_config, **generate_options))
    if not generate and sampling != Sampling():
        raise InputError("do_sample, temperature, top_p, seed and other generation settings apply only with "
                         "generate=True")
    loaded = _loaded(model)
    prompt, response, chat_template = texts_of_ids(loaded.tokenizer, prompt, response, chat_template)
    check_text_size(loaded, prompt_text(prompt), None if generate else response)  # before tokenising
    timings: dict[str, float] = {}
    generation = None
    if generate:
        with in_use(loaded.model):  # eval mode for the generation, the model's training flags put back after
            generated = generate_text(loaded, prompt, max_new_tokens=max_new_tokens, chat_template=chat_template,
                                      reasoning_instruction=reasoning_instruction, sampling=sampling, on_text=on_text)
        prompt, response, timings["generate_s"] = generated.prompt, generated.response, generated.seconds
        generation = generated.record(sampling, max_new_tokens)
    if not response or not response.strip():
        raise InputError("the response is empty: pass a response to teacher-force, or generate one")
    sequence = build_sequence(loaded.tokenizer, prompt, response, chat_template)
    predicted = check_run(loaded, len(sequence), hops=hops, n_target=len(sequence) - sequence.response_start,
                          n_recursive=len(sequence.positions("reasoning", "answer")), memory=check_memory)
    if on_estimate:
        on_estimate(predicted)
    recording = record_forward(loaded, sequence.ids)
    timings["forward_s"] = recording.forward_seconds
    return Prepared(loaded, sequence, recording, timings, generation)


def resolve_target(sequence: TokenSequence, target: TargetSpec = "answer",
                   target_chars: tuple[int, int] | None = None) -> tuple[int, int]:
    """Token range ``[start, end)`` of a target.

    Args:
        sequence: The tokenised sequence.
        target: 'value', 'answer', 'response', 'reasoning', 'START:END' or a tuple of token positions. 'value' is
            the answer's value when the answer line restates the question ("Tom has 15 marbles now." gives "15";
            `inputs.answer_value`), else the whole answer, as 'answer'.
        target_chars: A character range in the response; used instead of `target` when given.

    Returns:
        ``(start, end)``: the target's token positions.

    Raises:
        InputError: When the response has no such span, the target is not one of the forms above, or the range is
            outside the sequence or starts in the prompt.
    """
    n = len(sequence)
    if target_chars is not None:
        rng = sequence.char_range_to_tokens(target_chars)
    elif target == "value" and (chars := value_chars(sequence)) is not None:
        rng = sequence.char_range_to_tokens(chars)
    elif target == "value":
        return resolve_target(sequence, "answer")
    elif isinstance(target, str) and target in ("answer", "reasoning", "response"):
        roles = ("reasoning", "answer") if target == "response" else (target,)
        rng = sequence.token_range(*roles)
        if rng is None:
            raise InputError(f"the response has no {target} span; choose another target or a token range")
    else:
        try:
            lo, hi = (int(x) for x in (target.split(":") if isinstance(target, str) else target))
        except (ValueError, TypeError):
            raise InputError(f"target must be value, answer, response, reasoning or START:END, got {target!r}") from None
        rng = (lo, hi)
    lo, hi = rng
    if not (0 <= lo < hi <= n):
        raise InputError(f"target {lo}:{hi} is outside the sequence of {n} tokens (valid: 0 <= START < END <= {n})")
    if lo < sequence.response_start:
        raise InputError(f"target {lo}:{hi} starts in the prompt; targets must lie in the response "
                         f"(tokens {sequence.response_start}..{n - 1})")
    return lo, hi


def value_chars(sequence: TokenSequence) -> tuple[int, int] | None:
    """Characters of the answer's value in the response (`inputs.answer_value`); None when it is the whole
    answer.

    Args:
        sequence: The tokenised sequence.

    Returns:
        ``(start, end)`` in the response's characters, or None when the value is the whole answer.
    """
    return answer_value(sequence.response, sequence.spans.answer, sequence.prompt)


def _warn_if_guessed(prepared: Prepared) -> None:
    """An `AnswerGuessedWarning` when the answer target is the last-line guess (`inputs.answer_guess`)."""
    cut = (prepared.generation or {}).get("stopped") == "max_new_tokens"
    note = answer_guess(prepared.sequence.spans, prepared.sequence.response, reached_limit=cut)
    if note:
        warnings.warn(note, AnswerGuessedWarning, stacklevel=3)


def stop_mask(sequence: TokenSequence, stop_tokens: StopTokens = DEFAULT_STOP_TOKENS) -> torch.Tensor:
    """``[N]`` bool: tokens that get weight 0 in targets and scores. Every token is tested, chat-template tokens
    included: a template token is zeroed only when it matches the set.

    Args:
        sequence: The tokenised sequence.
        stop_tokens: A preset (``paper``, ``punctuation``, ``none``) or a user list (see
            `flashtrace.engine.inputs.stop_rule`).

    Returns:
        ``[N]`` bool, True for a stop token.
    """
    rule = stop_rule(stop_tokens)
    return torch.tensor([rule(t.text) for t in sequence.tokens], dtype=torch.bool)




def replacement_id(tokenizer: Any) -> int | None:
    """The pad (or EOS) id used to delete tokens (ablation, IG baseline, deletion curves); None if neither.

    Args:
        tokenizer: A transformers tokenizer.

    Returns:
        Its pad token id, else its EOS id, else None.
    """
    for tid in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if tid is not None:
            return int(tid)
    return None


def method_source(prepared: Prepared, segments: list | None = None) -> Source:
    """What a registered method reads from a prepared sequence: recording, model, the user's prompt
    positions, prompt segments (token positions).

    Args:
        prepared: The prepared sequence.
        segments: The sequence's segments; None for the automatic split.

    Returns:
        The method's source, with the prompt segments' token positions and the id that deletes a token.
    """
    seq = prepared.sequence
    segments = segments if segments is not None else segment_sequence(seq)
    return Source(recording=prepared.recording, model=prepared.loaded.model, explained=seq.positions("prompt"),
                  segments=[list(range(s.start, s.end)) for s in segments if s.role == "prompt"],
                  replace_id=replacement_id(prepared.loaded.tokenizer))


class _Progress:
    """``progress(done, total)`` over the aggregator calls of one attribution. Calls not yet made count
    with an upper bound; each call's exact work replaces its bound when it starts, and bounds of calls
    that never happen (hops that stop early) are dropped at the end, so the last report has done == total."""

    def __init__(self, callback: Callable[[int, int], None] | None, planned: list[int]):
        self.callback, self.planned, self.calls, self.done = callback, planned, 0, 0

    def wrap(self, spec: Method, aggregate: Callable, n_layers: int, call: int | None = None) -> Callable:
        def run(weights: torch.Tensor) -> torch.Tensor:  # [B, N] -> [B, N]
            index = self.calls if call is None else call
            self.planned[index] = spec.units(weights, n_layers)
            self.calls = max(self.calls, index + 1)
            self._report()
            return aggregate(weights)

        return run

    def tick(self, k: int) -> None:
        self.done += k
        self._report()

    def finish(self, used: set[int]) -> None:
        self.planned = [p if i in used else 0 for i, p in enumerate(self.planned)]
        self._report()

    def _report(self) -> None:
        if self.callback:
            self.callback(self.done, max(sum(self.planned), self.done))


@dataclass(frozen=True)
class _Masks:
    target: torch.Tensor  # [N] hop 0's target weights (0/1)
    recursive: torch.Tensor  # [N] bool: the span G later hops re-attribute
    observed: torch.Tensor  # [N] bool: template and prompt, which keep their attribution
    stops: torch.Tensor  # [N] bool: stop tokens (weight 0 in targets and scores)


def _masks(seq: TokenSequence, lo: int, hi: int, hop0: str, recursive: str, stop_tokens: StopTokens) -> _Masks:
    roles = [t.role for t in seq.tokens]
    target = torch.zeros(len(seq))
    if hop0 == "generation":
        target[torch.tensor([r in ("reasoning", "answer") for r in roles], dtype=torch.bool)] = 1.0
    else:
        target[lo:hi] = 1.0
    g_roles = ("reasoning", "answer") if recursive == "reasoning+answer" else ("reasoning",)
    return _Masks(target, torch.tensor([r in g_roles for r in roles]),
                  torch.tensor([r in ("template", "prompt") for r in roles]), stop_mask(seq, stop_tokens))


def _method(method: str, hops: int, steps: bool, threshold: float | None, options: dict | None) -> tuple[Method, dict]:
    """The method's spec and its resolved options, refused before any work when it cannot do what is asked."""
    spec = get_method(method)
    given = dict(options or {})
    if threshold is not None:
        given["threshold"] = threshold
    resolved = spec.resolve_options(given)
    if hops > 0 and not spec.hops:
        raise InputError(f"method {method} cannot run recursive hops; use hops=0")
    if steps and not spec.steps:
        raise InputError(f"method {method} cannot attribute reasoning steps (the hop graph); use steps=False")
    return spec, resolved


def _step_record(aggregate: Callable, targets: list, stops: torch.Tensor, timings: dict) -> StepRecord:
    """Every reasoning step and the answer attributed in one batched call (the hop graph's data)."""
    start = time.perf_counter()
    vectors = step_attributions(aggregate, [(s.start, s.end) for s in targets], ~stops)
    timings["steps_s"] = time.perf_counter() - start
    return StepRecord(vectors={s.id: v.tolist() for s, v in zip(targets, vectors) if v is not None},
                      seconds=timings["steps_s"])


def _settings(method: str, hops: int, lo: int, hi: int, recursive: str, hop0: str, stop_tokens: StopTokens,
              seq: TokenSequence, resolved: dict) -> Settings:
    return Settings(method=method, hops=hops, target=(lo, hi), recursive=recursive, hop0=hop0,
                    stop_tokens=stop_tokens if isinstance(stop_tokens, str) else list(stop_tokens),
                    chat_template=seq.chat_template, threshold=resolved.get("threshold"))


def _record(prepared: Prepared, settings: Settings, hop_list: list, final: torch.Tensor, segments: list,
            step_record: StepRecord | None, timings: dict, title: str, resolved: dict) -> Trace:
    """The `Trace` of one attribution (what is computed, as the schema stores it)."""
    seq = prepared.sequence
    final_list = final.tolist()
    options = {k: v for k, v in resolved.items() if k != "threshold"}
    extra = {"method_options": options} if options else {}
    if seq.messages is not None:
        extra["messages"] = seq.messages
    if prepared.generation is not None:
        extra["generation"] = prepared.generation
    return Trace(
        title=title or seq.prompt.strip().splitlines()[0][:80], prompt=seq.prompt, response=seq.response,
        model=ModelInfo(**prepared.loaded.info()), settings=settings,
        tokens=[TokenRecord(text=t.text, role=t.role, id=t.id, start=t.start, end=t.end) for t in seq.tokens],
        spans=Spans(prompt=(runs[0][0], runs[-1][1]) if (runs := seq.token_runs("prompt")) else None,
                    prompt_ranges=runs or None, reasoning=seq.token_range("reasoning"),
                    answer=seq.token_range("answer"), rule=seq.spans.rule,
                    value=seq.char_range_to_tokens(chars) if (chars := value_chars(seq)) else None),
        scores=Scores(final=final_list, prompt=normalised(final_list, seq.positions("prompt"))),
        hops=[HopRecord(k=h.k, rho=min(max(h.rho, 0.0), 1.0), weights=h.weights.tolist(), raw=h.raw.tolist(),
                        contribution=h.contribution.tolist()) for h in hop_list],
        timings=timings,
        segments=[SegmentRecord(id=s.id, role=s.role, text=s.text, start=s.start, end=s.end, order=s.order,
                                char_start=s.char_start, char_end=s.char_end) for s in segments],
        steps=step_record, extra=extra)


def attribute(prepared: Prepared | list[Prepared], *, target: TargetSpec = "value", target_chars: tuple[int, int] | None = None,
              hops: int = DEFAULT_HOPS, method: str = "flashtrace", recursive: str = "reasoning+answer",
              stop_tokens: StopTokens = DEFAULT_STOP_TOKENS, hop0: str = "answer",
              threshold: float | None = None, title: str = "",
              steps: bool = False, segment_boundaries: list[int] | None = None,
              progress: Callable[[int, int], None] | None = None, options: dict | None = None) -> Trace | list[Trace]:
    """Attribute a target span of a prepared sequence; returns a `Trace`.

    The trace always holds the segments (prompt sentences, reasoning steps, answer). Methods with signed scores
    (IG, perturbation) keep only the positive part in the trace.

    Args:
        prepared: The prepared sequence; a list of `Prepared` gives a list of Traces, one each, with the same
            settings.
        target: The target span, as `resolve_target` takes it ('value', 'answer', 'response', 'reasoning',
            'START:END' or a tuple of token positions).
        target_chars: A character range in the response, used as the target instead of `target`.
        hops: How many recursive hops (default `analysis.limits.DEFAULT_HOPS`, 0: the measured choice,
            docs/evaluation.md).
        method: Any registered method (`flashtrace.engine.attribution.METHODS`, or captum's and inseq's name for
            one: `registry.ALIASES`, stored under ours).
        recursive: The span later hops re-attribute: ``reasoning+answer`` or ``reasoning``.
        stop_tokens: Tokens that get weight 0 in targets and scores; default ``punctuation`` (every
            punctuation-only or whitespace-only token, which drops tokens such as a question's final ``?`` that
            are often the top-scored ones; chosen on the Qwen models' own reasoning, docs/evaluation.md);
            ``paper``: ``,``, ``.`` and whitespace-only tokens, the set the authors' code used for the paper's
            numbers; ``none``; or a list of token texts.
        hop0: ``answer`` attributes the target span at hop 0 (the paper's formulation); ``generation`` attributes
            the whole response (reasoning + answer) at hop 0 whatever the target, as the code behind the paper's
            tables (flashtrace 0.1.1) did.
        threshold: Flashtrace's option, kept as a keyword (None: the method's default).
        title: The trace's title; empty for the prompt's first line.
        steps: Also attribute every reasoning step and the answer in one batched call of the method (the hop
            graph's data).
        segment_boundaries: Token positions where a segment starts; replaces the automatic split.
        progress: `progress(done, total)` is called as work advances, in the method's progress unit (layers for
            flashtrace, target rows for IFR, weight vectors for baselines); the last call has done == total.
        options: The method's declared options (checked before anything runs).

    Returns:
        The trace; a list of traces, in order, for a list of `Prepared`.

    Raises:
        InputError: When an option is refused, the method cannot run the hops or steps asked for, the target
            is not in the response, or the stop preset leaves the target no token (an answer of only punctuation
            under ``punctuation``).
    """
    if isinstance(prepared, (list, tuple)):
        settings = dict(target=target, target_chars=target_chars, hops=hops, method=method, recursive=recursive,
                        stop_tokens=stop_tokens, hop0=hop0, threshold=threshold, title=title, steps=steps,
                        segment_boundaries=segment_boundaries, progress=progress, options=options)
        return [attribute(p, **settings) for p in prepared]
    check_options(hops=hops, title=title, recursive=recursive, hop0=hop0)  # the threshold: the method's option
    seq, n_layers = prepared.sequence, len(prepared.recording.layers)
    spec, resolved = _method(method, hops, steps, threshold, options)
    method = spec.name  # a captum or inseq name ("integrated_gradients") is stored as ours ("ig")
    lo, hi = resolve_target(seq, target, target_chars)
    if target in ("answer", "value") and target_chars is None:
        _warn_if_guessed(prepared)
    masks = _masks(seq, lo, hi, hop0, recursive, stop_tokens)
    segments = segment_sequence(seq, boundaries=segment_boundaries)
    step_targets = [s for s in segments if s.role in ("reasoning", "answer")]
    keep = (~masks.stops).float()
    if not (masks.target * keep).any():
        text = "".join(t.text for t in seq.tokens[lo:hi])
        raise InputError(f"the target {text.strip()[:60]!r} (tokens {lo}:{hi}) is only stop tokens under the stop "
                         f"preset {stop_tokens!r}, so nothing is left to explain; choose another target or stop "
                         f"preset (paper, punctuation, none)")
    planned = [spec.units((masks.target * keep)[None], n_layers)]  # upper bounds; exact when each call starts
    planned += [spec.units((masks.recursive * keep)[None], n_layers)] * hops
    if steps:
        step_weights = range_weights([(s.start, s.end) for s in step_targets], ~masks.stops)
        planned.append(spec.units(step_weights[step_weights.sum(1) > 0], n_layers))
    tracker = _Progress(progress, planned)

    with in_use(prepared.loaded.model):  # eval mode for methods that run the model (IG, perturbation)
        start = time.perf_counter()
        base = spec.build(method_source(prepared, segments), tracker.tick, **resolved)
        aggregate = (lambda w: base(w).clamp_min(0)) if spec.signed else base
        hop_list, final = recursive_hops(tracker.wrap(spec, aggregate, n_layers), masks.target, masks.recursive,
                                         masks.observed, hops=hops, stop_mask=masks.stops)
        timings = {**prepared.timings, "attribution_s": time.perf_counter() - start}
        used = set(range(len(hop_list)))
        step_record = None
        if steps:
            step_record = _step_record(tracker.wrap(spec, aggregate, n_layers, call=hops + 1), step_targets,
                                       masks.stops, timings)
            used.add(hops + 1)
    tracker.finish(used)
    settings = _settings(method, hops, lo, hi, recursive, hop0, stop_tokens, seq, resolved)
    return _record(prepared, settings, hop_list, final, segments, step_record, timings, title, resolved)


def trace(model: LoadedModel | str, prompt: Prompt | list[Prompt], response: str | list[str | None] | None = None,
          *, generate: bool = False, max_new_tokens: int = 256, chat_template: bool = True,
          reasoning_instruction: bool = False, do_sample: bool = False, temperature: float | None = None,
          top_p: float | None = None, seed: int | None = None,
          generation_config: GenerationConfig | dict[str, Any] | None = None,
          **options: Any) -> Trace | list[Trace]:
    """One call: load (if given a name), record, attribute.

    Args:
        model: A loaded model, or a name to load (loaded once for a list of prompts).
        prompt: A string, token ids or a chat-messages list, as in `prepare`; or a list of prompts (strings or
            chat-messages lists).
        response: The response to teacher-force (None to generate it); for a list of prompts, a list of as many
            responses (or None to generate them).
        generate: The model writes the response.
        max_new_tokens: The most tokens generated, as in `prepare`.
        chat_template: Render the prompt with the model's chat template.
        reasoning_instruction: As in `prepare`.
        do_sample: Sample the response, as in `prepare`.
        temperature: The sampling temperature, as in `prepare`.
        top_p: The nucleus-sampling mass, as in `prepare`.
        seed: Makes the sampling repeatable, as in `prepare`.
        generation_config: Other settings of transformers' ``generate``, as in `prepare`.
        **options: Those `attribute` takes go to it (checked first); any other is a setting of transformers'
            ``generate`` (``top_k``, ``num_beams``, ...: see `prepare`).

    Returns:
        The trace; for a list of prompts, a list of Traces in the same order.

    Raises:
        InputError: When a list of prompts has no list of as many responses, or an option is refused (also from
            `prepare` and `attribute`).
        TypeError: When a setting is one neither `attribute` nor transformers' ``generate`` takes.
        ResourceError: When the run would not fit in memory.
    """
    generation = {k: options.pop(k) for k in list(options) if k not in _ATTRIBUTE_OPTIONS}
    generation_options(generation_config, **generation)  # a name neither takes is refused before any work
    check_options(**{k: options[k] for k in ("hops", "title", "recursive") if k in options})
    method_options = dict(options.get("options") or {})
    if options.get("threshold") is not None:
        method_options["threshold"] = options["threshold"]
    get_method(options.get("method", "flashtrace")).resolve_options(method_options)
    settings = dict(generate=generate, max_new_tokens=max_new_tokens, chat_template=chat_template,
                    reasoning_instruction=reasoning_instruction, hops=options.get("hops", 1), do_sample=do_sample,
                    temperature=temperature, top_p=top_p, seed=seed, generation_config=generation_config, **generation)
    if isinstance(prompt, (list, tuple)) and not is_messages(prompt) and not is_token_ids(prompt):
        responses = [None] * len(prompt) if response is None else response
        if isinstance(responses, str) or len(responses) != len(prompt):
            raise InputError(f"{len(prompt)} prompts need a list of {len(prompt)} responses (or None to generate)")
        loaded = _loaded(model)
        return [attribute(prepare(loaded, p, r, **settings), **options) for p, r in zip(prompt, responses)]
    return attribute(prepare(model, prompt, response, **settings), **options)


_ATTRIBUTE_OPTIONS = frozenset(inspect.signature(attribute).parameters) - {"prepared"}


def hop_depth_comparison(prepared: Prepared, max_hops: int = 4, k: int = 10, **options: Any) -> HopDepthComparison:
    """Attribute with ``max_hops`` hops once on `prepared` (no new forward pass) and compare depths
    ``0..max_hops``.

    Args:
        prepared: The prepared sequence.
        max_hops: The deepest hop count compared.
        k: The size of the top-k prompt lists compared between consecutive depths.
        **options: Go to `attribute` (target, method, recursive, stop_tokens, threshold).

    Returns:
        The comparison of depths ``0..max_hops``.

    Raises:
        InputError: When `attribute` refuses the options.
    """
    trace = attribute(prepared, hops=max_hops, **options)
    return compare_depths(trace, k=k, max_hops=max_hops)


__all__ = ["Prepared", "prepare", "attribute", "trace", "hop_depth_comparison", "resolve_target", "stop_mask", "detect_spans", "method_source",
           "replacement_id", "HOP0_SPANS"]
