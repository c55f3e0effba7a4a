"""Linked pairs in the library (store.pairs): an original and its edited version reload from the library, and
opening either finds the other."""

from flashtrace.store.library import Library
from flashtrace.store.pairs import linked, save_pair

from .trace_factory import make_trace, vector

PROMPT = ["Ann has 3 apples.", "Ben has 4 pears.", "Cat sings."]
STEPS = ["Ann has 3.", "So 3."]
ANSWER = "Answer: 3"
EDIT = {"source": "gallery:apples", "segments": ["P1"], "replacement": None, "before": -1.5, "after": -2.5}


def _traces():
    original = make_trace(PROMPT, STEPS, ANSWER, [vector(PROMPT, STEPS, ANSWER, {"P0": 0.6, "P1": 0.4, "S0": 0.2})])
    kept = [PROMPT[0], PROMPT[2]]
    edited = make_trace(kept, STEPS, ANSWER, [vector(kept, STEPS, ANSWER, {"P0": 0.9, "P1": 0.1, "S0": 0.2})])
    return original, edited


def test_a_pair_saved_from_a_copy_reloads_linked_both_ways(tmp_path):
    original, edited = _traces()
    lib = Library(tmp_path)
    names = save_pair(lib, original, edited, EDIT, "apples")
    assert names == ("apples", "apples-edited")
    again = Library(tmp_path)  # a fresh library object: what is on disk
    first, second = again.open("apples"), again.open("apples-edited")
    assert first.scores.prompt == original.scores.prompt and second.scores.prompt == edited.scores.prompt
    to_edited, to_original = linked(again, first), linked(again, second)
    assert to_edited.role == "original" and to_edited.others == ("apples-edited",) and to_edited.missing == ()
    assert to_original.role == "edited" and to_original.others == ("apples",)
    assert to_original.edit == EDIT


def test_a_library_original_gains_each_edited_version(tmp_path):
    original, edited = _traces()
    lib = Library(tmp_path)
    lib.save(original, "mine")
    save_pair(lib, original, edited, EDIT, "ignored", original_name="mine")
    save_pair(lib, original, edited, EDIT, "ignored", original_name="mine")
    assert linked(lib, lib.open("mine")).others == ("mine-edited", "mine-edited-2")
    assert sorted(e.name for e in lib.entries()) == ["mine", "mine-edited", "mine-edited-2"]


def test_a_deleted_partner_is_reported_missing(tmp_path):
    original, edited = _traces()
    lib = Library(tmp_path)
    save_pair(lib, original, edited, EDIT, "apples")
    lib.delete("apples")
    assert linked(lib, lib.open("apples-edited")).missing == ("apples",)
    assert linked(lib, original) is None


def test_a_link_to_a_name_the_library_cannot_hold_is_reported_missing(tmp_path):
    """A hand-edited file may name its partner with a path or an empty name: the link shows it missing, no error."""
    _, edited = _traces()
    lib = Library(tmp_path)
    for bad in ("../apples", ""):
        stray = edited.model_copy(update={"extra": {"edited_from": {"name": bad, "before": -1.0}}})
        link = linked(lib, stray)
        assert link.role == "edited" and link.others == (bad,) and link.missing == (bad,)


def test_edited_versions_that_are_not_a_list_of_names_are_no_link(tmp_path):
    original, _ = _traces()
    lib = Library(tmp_path)
    for value in ("apples-edited", {"name": "apples-edited"}, [], None):
        stray = original.model_copy(update={"extra": {"edited_versions": value}})
        assert linked(lib, stray) is None
