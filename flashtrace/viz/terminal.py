"""`Trace.show()`: the trace drawn where it is asked for. In a Jupyter kernel it displays the notebook's HTML
view (`notebook.trace_html`); in a terminal it prints the same summary as coloured text with `rich`: the
title and settings, what the answer rests on, the top prompt words and the text coloured by the combined
prompt attribution (the text view's colours). Text from the trace is never read as markup."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ..analysis.facts import OF_PROMPT, analyse
from ..analysis.schema import Trace
from ..analysis.story import change_words, reach_words
from ..analysis.text import pct
from .colors import chip_solid
from .tokens import scale_maxima, target_positions, token_class, view_values

if TYPE_CHECKING:
    from rich.console import Console, Group


def in_notebook() -> bool:
    """True inside a Jupyter kernel (an IPython shell with a kernel), False in a terminal or script.

    Returns:
        Whether the code runs inside a Jupyter kernel.
    """
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return getattr(shell, "kernel", None) is not None


def about_line(trace: Trace) -> str:
    """Model, method, hops, tokens and target, on one line (the notebook view's subtitle).

    Args:
        trace: The trace described.

    Returns:
        The line, e.g. ``model · method · 2 hops · 1,234 tokens · target tokens 5–9``.
    """
    s, m = trace.settings, trace.model
    return (f"{m.name} · {s.method} · {s.hops} hop{'s' if s.hops != 1 else ''} · {trace.n_tokens:,} tokens · "
            f"target tokens {s.target[0]}–{s.target[1] - 1}")


def trace_text(trace: Trace, k: int = 10) -> Group:
    """The terminal view as a `rich` renderable.

    Args:
        trace: The trace shown.
        k: How many top prompt words are listed.

    Returns:
        A `rich` group: the title, the settings line, what the answer rests on, the top prompt words and the
        text coloured by the combined prompt attribution, with its legend.
    """
    from rich.console import Group
    from rich.text import Text

    facts = analyse(trace)
    head = Text(trace.title or "FlashTrace trace", style="bold")
    words = " ".join(line for line in (reach_words(facts), change_words(facts)) if line)
    top = Text(f"Top prompt words ({OF_PROMPT}):", style="bold")
    for rank, word in enumerate(facts.top_words(-1, k), 1):  # whole words, each once, as the Story lists them
        top.append(f"\n {rank:>2}. {word.text!r} {pct(word.share, 1)}")
    values, tops, target = view_values(trace, None), scale_maxima(trace), target_positions(trace)
    text = Text()
    for i, tok in enumerate(trace.tokens):
        cls = token_class(tok.role)
        if i in target:
            text.append(tok.text, style="bold underline")
        else:
            t = values[i] / tops[cls] if tops[cls] > 0 else 0.0
            text.append(tok.text, style=f"black on {chip_solid(cls, t)}")
    legend = Text("coloured by the combined prompt attribution (final); the target underlined", style="dim")
    return Group(head, Text(about_line(trace), style="dim"), Text(words), top, Text(""), text, legend)


def show(trace: Trace, k: int = 10, console: Console | None = None) -> None:
    """Display `trace`: the HTML view in a notebook, coloured text in a terminal (or on `console`, a
    ``rich.console.Console``).

    Args:
        trace: The trace shown.
        k: How many top prompt words the terminal view lists.
        console: The console printed on; None for a new one (or the notebook's display in a Jupyter kernel).
    """
    if console is None and in_notebook():
        from IPython.display import display

        display(trace)
        return
    from rich.console import Console

    (console or Console()).print(trace_text(trace, k))


__all__ = ["show", "trace_text", "in_notebook", "about_line"]
