"""The Hop graph's step influence by intervention: read from a trace that stores it, and computed with the
trace's (tiny) model by the page's button."""

import pytest

from flashtrace.analysis.interventions import intervention_facts, with_interventions
from flashtrace.engine.models import load_model
from flashtrace.run.interventions import intervene
from flashtrace.run.tracing import attribute, prepare
from flashtrace.store.library import Library

from .conftest import literal, no_problems

GRAPH = "pages/3_Hop_graph.py"
PROMPT = "Ann has 3 red balls. Ben has 4 blue balls. Cat has 9 green balls. How many balls do Ann and Ben have?"
RESPONSE = "1. Ann has 3 balls.\n2. Ben has 4 balls.\n3. So 3 + 4 = 7.\nAnswer: 7 balls"


@pytest.fixture(scope="module")
def stepped():
    loaded = load_model("tiny-llama")
    tr = attribute(prepare(loaded, PROMPT, RESPONSE), hops=1, steps=True, title="balls")
    return tr, with_interventions(tr, intervene(loaded, tr, n_random=2))


def _table(at):
    frame = next(d.value for d in at.dataframe if list(d.value.columns) == ["step", "drop", "graph"])
    return frame.to_dict("records")


def _captions(at) -> str:
    return "\n".join(literal(c.value) for c in at.caption)


def test_stored_step_influence_is_shown_beside_the_graph(open_page, library_dir, stepped):
    Library(library_dir).save(stepped[1], "stored")
    at = open_page(GRAPH, trace="lib:stored")
    no_problems(at)
    facts = intervention_facts(stepped[1])
    rows = _table(at)
    assert [r["step"] for r in rows] == list(facts.steps.labels)
    assert [r["drop"] for r in rows] == pytest.approx(list(facts.steps.drops))
    assert [r["graph"] for r in rows] == pytest.approx(list(facts.steps.graph))
    text = _captions(at)
    assert facts.steps.sentence in text and facts.removal.sentence in text and "stored in the trace" in text
    assert not any(b.key == "run_interventions" for b in at.button)


def test_the_button_computes_it_with_the_traces_model(open_page, library_dir, stepped):
    Library(library_dir).save(stepped[0], "plain")
    at = open_page(GRAPH, trace="lib:plain")
    no_problems(at)
    assert "about" in _captions(at) and not [d for d in at.dataframe if "drop" in d.value.columns]
    at.button(key="run_interventions").click().run()
    no_problems(at)
    facts = intervention_facts(stepped[1])
    assert [r["drop"] for r in _table(at)] == pytest.approx(list(facts.steps.drops), abs=1e-5)
    assert "computed just now" in _captions(at)


def test_a_computed_step_influence_is_saved_to_the_library_trace(open_page, library_dir, stepped):
    Library(library_dir).save(stepped[0], "plain")
    at = open_page(GRAPH, trace="lib:plain")
    at.button(key="run_interventions").click().run()
    at.button(key="save_interventions").click().run()
    no_problems(at)
    stored = Library(library_dir).open("plain")
    assert stored.interventions is not None
    assert intervention_facts(stored).steps.drops == pytest.approx(intervention_facts(stepped[1]).steps.drops, abs=1e-5)
    assert "stored in the trace" in _captions(at) and not any(b.key == "save_interventions" for b in at.button)
