"""The summary a trace prints on the command line (``flashtrace trace`` after a run, ``flashtrace show`` for
a saved file): settings, how much of the answer's attribution reached the input and the top prompt piece
at each depth (`flashtrace.analysis.story.depth_table`, as every view shows it), and the top prompt words."""

from __future__ import annotations

from ..analysis.facts import OF_PROMPT, analyse
from ..analysis.schema import Trace
from ..analysis.story import DEPTH_COLUMNS, change_words, depth_table, reach_words
from ..analysis.text import pct


def _stops(trace) -> str:
    value = trace.settings.stop_tokens
    return value if isinstance(value, str) else "list " + " ".join(repr(w) for w in value)


def print_summary(trace: Trace, top: int = 10) -> None:
    """What a trace says, as the `trace` and `show` commands print it.

    Prints the settings, the rho of each hop, the timings, how much of the answer's attribution reached the
    input and the top prompt piece at each depth, and the top prompt tokens.

    Args:
        trace: The trace to summarise.
        top: How many prompt tokens to list (punctuation-only tokens skipped).
    """
    lo, hi = trace.settings.target
    target_text = "".join(t.text for t in trace.tokens[lo:hi])
    print(f"model {trace.model.name} ({trace.model.family}), {trace.n_tokens} tokens, method {trace.settings.method}, "
          f"hops {trace.settings.hops}, hop 0 over the {trace.settings.hop0}, stop tokens {_stops(trace)}")
    print(f"target tokens {lo}:{hi}: {target_text!r}")
    print("rho per hop: " + ", ".join(f"{h.rho:.3f}" for h in trace.hops))
    t = trace.timings
    print(f"forward {t.get('forward_s', 0):.2f} s, attribution {t.get('attribution_s', 0):.2f} s")
    facts = analyse(trace)
    print()
    for line in (reach_words(facts), change_words(facts)):
        if line:
            print(line)
    rows = depth_table(facts)
    widths = [max(len(c), *(len(r[c]) for r in rows)) for c in DEPTH_COLUMNS]
    for row in [dict(zip(DEPTH_COLUMNS, DEPTH_COLUMNS)), *rows]:
        print("  ".join(row[c].ljust(w) for c, w in zip(DEPTH_COLUMNS, widths)).rstrip())
    last = len(facts.depths) - 1
    print(f"\n{'rank':>4}  {'pos':>5}  {'share':>7}  token   (share {OF_PROMPT}; punctuation-only tokens skipped)")
    for rank, pos in enumerate(facts.depths[last].top_tokens[:top], 1):
        print(f"{rank:>4}  {pos:>5}  {pct(facts.token_share(last, pos), 1):>7}  {trace.tokens[pos].text!r}")
