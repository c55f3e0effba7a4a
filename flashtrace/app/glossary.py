"""Every term and symbol the app shows, explained once, in words a non-specialist reads.

The Glossary page lists `TERMS` (one heading per term, anchored by its key); widgets and metrics that show
a term link to it from their help tooltip with `help_link(key)`. One symbol, one meaning: ρ is only the
hop share below; rank correlation is always written out ("Spearman rank correlation"), never ρ.
"""

from __future__ import annotations

from dataclasses import dataclass

PAGE = "Glossary"  # the Glossary page's URL path (pages/8_Glossary.py)


@dataclass(frozen=True)
class Term:
    """A glossary entry: its anchor key, its name as the app writes it, and its plain-text explanation."""
    key: str  # URL anchor: /Glossary#key
    name: str  # as written in the app
    text: str  # plain text (shown literally)


TERMS: tuple[Term, ...] = (
    Term("attribution", "Attribution",
         "How much credit each earlier token gets for the text being explained (by default the answer). Shares "
         "add up to 100 % over the tokens they are spread on; a darker colour means more credit."),
    Term("hop", "Hop",
         "One step back through the model's own reasoning. Hop 0 is what the answer reads directly: part of its "
         "attribution lands on prompt tokens, part on the reasoning the model wrote before answering. Hop 1 asks "
         "what that reasoning itself read, and passes its share on to those tokens; hop 2 repeats that, and so on. "
         "After a few hops almost all of the answer's attribution has reached the prompt."),
    Term("rho", "ρ (rho)",
         "After hop k, the share of the answer's attribution still sitting on generated text (reasoning and "
         "answer), not yet traced back to the input: ρ = 0.25 means a quarter is left and 75 % has reached the "
         "input (prompt and chat template). It shrinks with every hop. In this app ρ means only this."),
    Term("spearman", "Spearman rank correlation",
         "How similarly two rankings of the prompt tokens are ordered (1 = the same order, 0 = unrelated). The "
         "Compare page uses it between consecutive hop depths; it is never written ρ here."),
    Term("span", "Span",
         "A run of consecutive tokens. The target span is what is explained (by default the answer); the "
         "recursive span is the generated text that hops follow back through (reasoning and answer); the prompt "
         "span is the user's question."),
    Term("segment", "Segment, and node names P, S, A, T",
         "A sentence or line of the prompt (P0, P1, ...), a step of the reasoning (S0, S1, ...), the answer (A), "
         "or a run of chat-template text the model's chat format adds (T0, T1, ...). The hop graph draws one "
         "node per segment, labelled with its first words."),
    Term("threshold", "Threshold and influence shown",
         "How much of the hop graph is drawn. 'Influence shown' keeps the input sentences that together carry "
         "that share of the answer's attribution reaching the input (plus what each reasoning step reads most) "
         "and the links carrying most of the influence; the rest fold into 'other context'. A threshold τ (a "
         "trace setting) drops links weaker than τ before shares are computed. Showing less means fewer, "
         "stronger links."),
    Term("of-row-max", "of row max",
         "A colour scale where each row is divided by its own largest value: the strongest token in every row is "
         "full colour. It shows each row's ranking, not how rows compare in size."),
    Term("deletion", "Deletion test",
         "A check that the attribution is faithful: replace the prompt tokens it ranks highest with a blank "
         "token and watch the model's probability of the same answer fall. A faithful attribution makes it "
         "fall fast; deleting tokens at random should hurt far less."),
    Term("log-probability", "Answer log-probability",
         "How likely the model finds the answer, on a log scale (0 = certain; more negative = less likely). "
         "A drop of 1 means the answer became about 2.7 times less likely."),
    Term("rise", "RISE",
         "The area under the deletion curve: delete prompt tokens from the highest-ranked down in equal steps "
         "and record the answer's (normalised) log-probability; lower is better (the answer falls apart sooner)."),
    Term("mas", "MAS",
         "Like RISE, but it also adds how far the answer's curve strays from the share of attribution mass "
         "still present at each step, so the scores must match the model's behaviour, not only their order; "
         "lower is better."),
    Term("recovery", "Recovery@10 %",
         "On tasks where the true evidence is known (the needle, the variable's value, the facts used), the "
         "share of those evidence tokens found among the top 10 % of prompt tokens by attribution; higher is "
         "better. Chance level is about 10 %."),
)
BY_KEY = {t.key: t for t in TERMS}


def help_link(key: str, text: str = "") -> str:
    """Help-tooltip Markdown: `text`, then a link to the term on the Glossary page.

    Args:
        key: The term's key in `TERMS` (its anchor on the Glossary page).
        text: The tooltip's own text (a constant), before the link; "" for the link alone.

    Returns:
        The Markdown: `text` and ``[Glossary: <name>](Glossary#<key>)``, separated by a space.

    Raises:
        KeyError: For an unknown term (a typo must fail in tests, not show a dead link).
    """
    term = BY_KEY[key]  # KeyError for an unknown term: a typo must fail in tests, not show a dead link
    link = f"[Glossary: {term.name}]({PAGE}#{term.key})"
    return f"{text} {link}" if text else link


__all__ = ["PAGE", "Term", "TERMS", "BY_KEY", "help_link"]
