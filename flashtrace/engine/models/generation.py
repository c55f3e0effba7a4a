"""Optional generation step: let the model write a response (reasoning, then answer), greedily unless
`Sampling` asks for sampling."""

from __future__ import annotations

import re
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import torch

from ..inputs.chat import Prompt, check_messages, is_messages, with_last_user_text
from ..inputs.sequence import INSTRUCTION_SEPARATOR, REASONING_INSTRUCTION  # noqa: F401 - re-exported
from ..throughput import paying_threads
from .decode import single_row_kernel
from .scoring import dtype_name
from ...base.errors import InputError

if TYPE_CHECKING:
    from typing import Any

    from transformers import GenerationConfig, PreTrainedTokenizerBase

    from .loading import LoadedModel

# a prompt that already asks for reasoning or for an answer format gets no second instruction
_ASKS_ALREADY = re.compile(r"step[ -]by[ -]step|\banswer\s*:|\\boxed|<think>", re.I)


@dataclass(frozen=True)
class Continuation:
    """What one ``generate`` call wrote: the text (special tokens left out), how many tokens, and whether it was
    cut at `max_new_tokens` rather than ending by itself (an end-of-text token)."""
    text: str
    new_tokens: int
    reached_limit: bool


@dataclass(frozen=True)
class Generated:
    """A generated response: the prompt as the model saw it, the text it wrote, how long it took, how many tokens
    it wrote and whether `max_new_tokens` cut it off (then the response may end before its answer)."""
    prompt: Prompt  # the prompt as the model saw it (with the reasoning instruction when one was added)
    response: str
    seconds: float
    new_tokens: int = 0
    reached_limit: bool = False

    def record(self, sampling: "Sampling", max_new_tokens: int) -> dict:
        """What a `Trace` records of the generation (``extra["generation"]``): the settings and how it ended.

        Args:
            sampling: How the tokens were picked.
            max_new_tokens: The token limit the generation ran under.

        Returns:
            `Sampling.record`'s settings, plus ``new_tokens`` (how many were written) and ``stopped``
            (``"max_new_tokens"`` when the limit cut it off, else ``"end of text"``).
        """
        return {**sampling.record(max_new_tokens), "new_tokens": self.new_tokens,
                "stopped": "max_new_tokens" if self.reached_limit else "end of text"}


# generate() keywords the tool sets itself: each has its own parameter, or one traced response needs it so
_OWN_KEYWORDS = {"max_new_tokens": "pass max_new_tokens= itself", "max_length": "pass max_new_tokens=",
                 "num_return_sequences": "a trace explains one response", "streamer": "pass on_text=",
                 "pad_token_id": "the tokenizer's pad (or EOS) id is used", "return_dict_in_generate": "",
                 "output_scores": "", "output_logits": "", "output_attentions": "", "output_hidden_states": ""}


def generation_options(generation_config: GenerationConfig | dict | None = None, **keywords: Any) -> dict:
    """The settings for transformers' ``generate`` beyond do_sample, temperature, top_p and seed: the fields a
    ``GenerationConfig`` (or a dict of them) sets away from its defaults, then `keywords`. Checked by
    transformers' ``GenerationConfig.update``.

    Args:
        generation_config: A transformers ``GenerationConfig`` (or a dict of its fields), of which the fields set
            away from their defaults count; None for none.
        **keywords: More settings (``top_k=50``, ``num_beams=1``, ``repetition_penalty=1.1``, ...), applied over
            those of `generation_config`.

    Returns:
        The settings, by name, as ``generate`` takes them.

    Raises:
        InputError: When a setting is one the tool sets itself (``max_new_tokens``, ``streamer``, ...: the message
            says what to pass instead), or a combination transformers refuses (its ValueError).
        TypeError: When a name is not one transformers' ``GenerationConfig`` knows.
    """
    from transformers import GenerationConfig

    chosen = {}
    if generation_config is not None:
        given = generation_config if isinstance(generation_config, dict) else generation_config.to_diff_dict()
        chosen.update({k: v for k, v in given.items() if k not in ("transformers_version", "_from_model_config")})
    chosen.update(keywords)
    own = sorted(set(chosen) & set(_OWN_KEYWORDS))
    if own:
        raise InputError("set by the tool: " + "; ".join(f"{k} ({_OWN_KEYWORDS[k] or 'not used'})" for k in own))
    try:
        unknown = GenerationConfig().update(**chosen)
    except ValueError as exc:
        raise InputError(f"transformers refuses these generation settings: {exc}") from None
    if unknown:
        raise TypeError(f"unexpected keyword argument(s) {', '.join(map(repr, sorted(unknown)))}: neither an option "
                        "of flashtrace's trace/prepare nor a setting of transformers' GenerationConfig")
    return chosen


@dataclass(frozen=True)
class Sampling:
    """How to pick each new token: greedy (the default), or sampled with `temperature` / `top_p`; `seed` makes a
    sampled response repeatable (the global RNG is left as it was). `options`: any other setting of transformers'
    ``GenerationConfig`` (`generation_options`: ``top_k``, ``num_beams``, ``repetition_penalty``, ...). A setting
    that only sampling uses, given without ``do_sample=True``, gets transformers' own warning, as ``generate`` does."""

    do_sample: bool = False
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    options: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.temperature is not None and not self.temperature > 0:
            raise InputError(f"temperature must be > 0, got {self.temperature}")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise InputError(f"top_p must be in (0, 1], got {self.top_p}")
        clash = sorted(set(self.options) & {"do_sample", "temperature", "top_p"})
        if clash:
            raise InputError(f"pass {', '.join(clash)} as their own arguments, not among the generation options")
        generation_options(**self.generate_kwargs())

    def generate_kwargs(self) -> dict:
        """The keywords for transformers' ``generate``.

        Returns:
            ``do_sample``, ``temperature`` and ``top_p`` (the last two only when set), then every other option
            given, by name.
        """
        chosen = {"temperature": self.temperature, "top_p": self.top_p}
        return {"do_sample": self.do_sample, **{k: v for k, v in chosen.items() if v is not None}, **self.options}

    def record(self, max_new_tokens: int) -> dict:
        """The generation settings a `Trace` records (``extra["generation"]``; `Generated.record` adds how it ended):
        the token limit, do_sample, temperature, top_p, seed, and every other option given.

        Args:
            max_new_tokens: The token limit, recorded as ``max_new_tokens``.

        Returns:
            The settings by name (``temperature``, ``top_p`` and ``seed`` None when not set).
        """
        return {"max_new_tokens": max_new_tokens, "do_sample": self.do_sample, "temperature": self.temperature,
                "top_p": self.top_p, "seed": self.seed, **self.options}


def context_length(loaded: LoadedModel) -> int | None:
    """The most tokens the model reads (from its config), or None when the config does not say.

    Args:
        loaded: The model.

    Returns:
        The config's ``max_position_embeddings`` (or ``n_positions``), or None.
    """
    config = loaded.model.config
    config = config.get_text_config() if hasattr(config, "get_text_config") else config
    return getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)


def has_thinking_mode(tokenizer: PreTrainedTokenizerBase) -> bool:
    """Whether the tokenizer's chat template has a thinking mode (mentions `<think>`).

    Args:
        tokenizer: The model's tokenizer (one without a chat template has no thinking mode).

    Returns:
        True when its chat template mentions ``<think>``.
    """
    return "<think>" in (getattr(tokenizer, "chat_template", None) or "")


def prompt_for_generation(tokenizer: PreTrainedTokenizerBase, prompt: Prompt,
                          reasoning_instruction: bool = False) -> Prompt:
    """The prompt as traced. With `reasoning_instruction`, `REASONING_INSTRUCTION` is appended for models
    without a thinking mode, unless the prompt already asks for step-by-step reasoning or an answer
    format; its tokens get the template role (`inputs.scaffold_range`), so no evidence ever counts them.
    For a chat-messages list the instruction goes at the end of the last (user) message.

    Args:
        tokenizer: The model's tokenizer (its chat template says whether the model has a thinking mode).
        prompt: A prompt string or a chat-messages list.
        reasoning_instruction: Append `REASONING_INSTRUCTION` where it applies.

    Returns:
        The prompt, of the same kind, with the instruction where one was added.

    Raises:
        InputError: When a chat-messages list is malformed (`inputs.chat.check_messages`).
    """
    if is_messages(prompt):
        messages = check_messages(prompt)
        last = prompt_for_generation(tokenizer, messages[-1]["content"], reasoning_instruction)
        return with_last_user_text(messages, last)
    if reasoning_instruction and not has_thinking_mode(tokenizer) and not _ASKS_ALREADY.search(prompt):
        return f"{prompt.rstrip()}{INSTRUCTION_SEPARATOR}{REASONING_INSTRUCTION}"
    return prompt


class TextStream:
    """A `generate` streamer (transformers' ``put``/``end``) that hands the response decoded so far to
    ``on_text(text, n_new_tokens)`` after every new token. The prompt's ids (the first ``put``) are skipped.
    ``on_text`` runs in the generating thread: an exception it raises ends the generation there."""

    def __init__(self, tokenizer, on_text: Callable[[str, int], None]):
        self.tokenizer, self.on_text, self.ids, self.prompt_seen = tokenizer, on_text, [], False

    def put(self, value: torch.Tensor) -> None:
        """Receive generated token ids (the first call is the prompt, skipped) and report the text so far.

        Args:
            value: The new token ids (any shape: they are flattened); on the first call, the prompt's ids.
        """
        if not self.prompt_seen:
            self.prompt_seen = True
            return
        self.ids.extend(value.reshape(-1).tolist())
        self.on_text(self.tokenizer.decode(self.ids, skip_special_tokens=True), len(self.ids))

    def end(self) -> None:
        """Nothing to flush: every token was handed over as it came."""


@torch.no_grad()
def generate_response(loaded: LoadedModel, input_ids: list[int], max_new_tokens: int = 256, do_sample: bool = False,
                      on_text: Callable[[str, int], None] | None = None,
                      sampling: Sampling | None = None) -> Continuation:
    """Greedy (by default, or as `sampling` says) continuation of `input_ids`, decoded without special tokens, with
    its token count and whether `max_new_tokens` cut it. On the CPU each new token's products run on every paying
    thread (`decode.single_row_kernel`).

    Args:
        loaded: The model and its tokenizer.
        input_ids: The token ids to continue (the prompt as the model reads it).
        max_new_tokens: The most tokens to write.
        do_sample: Sample instead of decoding greedily, when `sampling` is not given.
        on_text: Sees the text so far after each new token, as ``on_text(text, n_new_tokens)`` (`TextStream`),
            in the generating thread: an exception it raises ends the generation; None for no report.
        sampling: How to pick each new token; None for ``Sampling(do_sample=do_sample)``.

    Returns:
        The `Continuation`: the text, its token count and whether `max_new_tokens` cut it.
    """
    sampling = sampling or Sampling(do_sample=do_sample)
    ids = torch.tensor([input_ids], device=loaded.device)
    tok = loaded.tokenizer
    streamer = TextStream(tok, on_text) if on_text else None
    cuda = [loaded.device] if loaded.device.type == "cuda" else []
    threads = nullcontext() if cuda else paying_threads(dtype_name(loaded.dtype))
    with threads, torch.random.fork_rng(devices=cuda, enabled=sampling.seed is not None):
        if sampling.seed is not None:
            torch.manual_seed(sampling.seed)
        with nullcontext() if cuda else single_row_kernel(loaded.model):
            out = loaded.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                                        pad_token_id=tok.pad_token_id or tok.eos_token_id, streamer=streamer,
                                        **sampling.generate_kwargs())
    new = out[0, ids.shape[1]:]
    ended = _end_ids(loaded.model, tok)
    reached = len(new) >= max_new_tokens and not (len(new) and int(new[-1]) in ended)
    return Continuation(tok.decode(new, skip_special_tokens=True), len(new), reached)


def _end_ids(model, tokenizer) -> set[int]:
    """The token ids that end a generation: the generation config's EOS ids (one or a list) and the tokenizer's."""
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids = set(configured if isinstance(configured, (list, tuple)) else [configured])
    return {int(i) for i in ids | {tokenizer.eos_token_id} if i is not None}


def check_context(loaded: LoadedModel, n_tokens: int, new_tokens: int = 0, what: str = "the sequence",
                  advice: str = "shorten the prompt or response") -> None:
    """`InputError` when `n_tokens` and the `new_tokens` a run may generate exceed the model's context
    (`estimate.check_run`'s first part; generation asks it alone, before any new token, as its memory depends on
    the length it reaches).

    Args:
        loaded: The model (its config gives the context; a config that names none is not checked).
        n_tokens: The tokens of the sequence.
        new_tokens: The tokens a run may generate after it.
        what: What the message calls the sequence.
        advice: What the message advises doing.

    Raises:
        InputError: When `n_tokens` plus `new_tokens` exceed the model's context.
    """
    context = context_length(loaded)
    if context and int(n_tokens) + int(new_tokens) > context:
        if new_tokens:
            raise InputError(f"{what} has {n_tokens:,} tokens; with {new_tokens:,} new tokens that exceeds the "
                             f"{context:,} tokens {loaded.name} reads; {advice}")
        raise InputError(f"{what} has {n_tokens:,} tokens but {loaded.name} reads at most {context:,}; {advice}")


def generation_ids(loaded: LoadedModel, prompt: Prompt, max_new_tokens: int = 256, chat_template: bool = True,
                   reasoning_instruction: bool = False) -> tuple[Prompt, list[int]]:
    """``(prompt as generated from, its token ids)``; refuses when the prompt plus `max_new_tokens` would not
    fit the model's context.

    Args:
        loaded: The model and its tokenizer.
        prompt: A prompt string or a chat-messages list.
        max_new_tokens: The most tokens the generation may write (at least 1).
        chat_template: Wrap the prompt in the model's chat template.
        reasoning_instruction: Append `REASONING_INSTRUCTION` where it applies (`prompt_for_generation`).

    Returns:
        ``(prompt, ids)``: the prompt as generated from (with the instruction when one was added) and its token
            ids.

    Raises:
        InputError: When `max_new_tokens` is below 1, or the prompt plus `max_new_tokens` would not fit the
            model's context.
    """
    from ..inputs import build_sequence

    if max_new_tokens < 1:
        raise InputError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
    prompt = prompt_for_generation(loaded.tokenizer, prompt, reasoning_instruction)
    ids = build_sequence(loaded.tokenizer, prompt, "", chat_template).ids
    check_context(loaded, len(ids), max_new_tokens, "the prompt", "shorten the prompt or ask for fewer new tokens")
    return prompt, list(ids)


def generate(loaded: LoadedModel, prompt: Prompt, *, max_new_tokens: int = 256, chat_template: bool = True,
             reasoning_instruction: bool = False, on_text: Callable[[str, int], None] | None = None,
             sampling: Sampling | None = None) -> Generated:
    """Let the model answer `prompt` (with its chat template when `chat_template`); refuses before generating
    when the prompt plus `max_new_tokens` would not fit the model's context.

    Args:
        loaded: The model and its tokenizer.
        prompt: A prompt string or a chat-messages list.
        max_new_tokens: The most tokens to write.
        chat_template: Wrap the prompt in the model's chat template.
        reasoning_instruction: Append `REASONING_INSTRUCTION` where it applies (`prompt_for_generation`).
        on_text: ``on_text(text, n_tokens)`` sees the response as it grows, one call per new token, and may raise
            to stop the generation; None for no report.
        sampling: How to pick each new token; greedy when not given.

    Returns:
        The `Generated` response: the prompt as the model saw it, the text, the seconds it took, its token count
            and whether `max_new_tokens` cut it.

    Raises:
        InputError: When `max_new_tokens` is below 1, or the prompt plus `max_new_tokens` would not fit the
            model's context (checked before generating).
    """
    prompt, ids = generation_ids(loaded, prompt, max_new_tokens, chat_template, reasoning_instruction)
    start = time.perf_counter()
    wrote = generate_response(loaded, ids, max_new_tokens=max_new_tokens, on_text=on_text, sampling=sampling)
    return Generated(prompt, wrote.text, time.perf_counter() - start, wrote.new_tokens, wrote.reached_limit)
