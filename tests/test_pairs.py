"""Linked pairs in the library (store.pairs): an original and its edited version reload from the library, and
opening either finds the other."""

from flashtrace.analysis.schema import EditRecord, InterventionRecord
from flashtrace.store.library import Library
from flashtrace.store.pairs import linked, save_pair, store_interventions

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


def _add_an_edit(barrier, root: str, i: int) -> None:
    original, edited = _traces()
    barrier.wait()
    save_pair(Library(root), original, edited.model_copy(update={"title": f"edit {i}"}), {**EDIT, "before": -i},
              "ignored", original_name="orig")


def _record(i: int) -> InterventionRecord:
    return InterventionRecord(before=-float(i), model="m", seed=i, seconds=0.0,
                              edits=[EditRecord(kind="step", segments=["S0"], logprob=-float(i) - 1)])


def _store_a_step_influence(barrier, root: str, i: int) -> None:
    barrier.wait()
    store_interventions(Library(root), "orig", _record(i))


def _eight_at_once(root, targets) -> None:
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(len(targets))
    procs = [ctx.Process(target=target, args=(barrier, str(root), i)) for i, target in enumerate(targets)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0


def test_eight_processes_adding_edits_to_one_original_keep_every_link(tmp_path):
    """Issue 48 L6 repro: two pair saves at once lost a link in 6 of 15 rounds (each read the original, added its
    edit and wrote it back, the second over the first). 8 processes released together now keep all 8."""
    Library(tmp_path).save(_traces()[0], "orig")
    _eight_at_once(tmp_path, [_add_an_edit] * 8)
    lib = Library(tmp_path)
    link = linked(lib, lib.open("orig"))
    assert len(link.others) == 8 == len(set(link.others)) and link.missing == ()
    assert sorted(lib.open(n).title for n in link.others) == sorted(f"edit {i}" for i in range(8))


def test_step_influence_saves_racing_pair_saves_keep_every_link_and_one_whole_record(tmp_path):
    """Issue 48 L6 and item 3: the step-influence save had the same stale-copy pattern as the pair save. 4 processes
    add edits while 4 store a step influence (the app's save, `store_interventions`), all released together: the 4
    links stay, and the stored record is one of the 4 whole, never a mixture."""
    Library(tmp_path).save(_traces()[0], "orig")
    _eight_at_once(tmp_path, [_add_an_edit, _store_a_step_influence] * 4)
    lib = Library(tmp_path)
    stored = lib.open("orig")
    link = linked(lib, stored)
    assert sorted(lib.open(n).title for n in link.others) == ["edit 0", "edit 2", "edit 4", "edit 6"]
    assert stored.interventions in [_record(i) for i in (1, 3, 5, 7)]


def test_an_update_changes_the_trace_on_disk_not_a_copy_read_before(tmp_path):
    """The step-influence save used to write back the copy the page had read: a link saved meanwhile was lost."""
    original, edited = _traces()
    lib = Library(tmp_path)
    lib.save(original, "orig")
    read_before = lib.open("orig")
    save_pair(lib, original, edited, EDIT, "ignored", original_name="orig")  # a link added meanwhile
    lib.update("orig", lambda now: now.model_copy(update={"title": "with a result"}))
    stored = lib.open("orig")
    assert stored.title == "with a result" and linked(lib, stored).others == ("orig-edited",)
    assert "edited_versions" not in read_before.extra


def test_a_stored_step_influence_lands_on_the_trace_as_it_is_now_in_a_collection_too(tmp_path):
    """`store_interventions` (the app's save): the record goes into the named trace, a collection's as
    ``collection/name``; a link saved after the page read the trace stays; None clears it."""
    original, edited = _traces()
    lib = Library(tmp_path)
    lib.save(original, "orig")
    save_pair(lib, original, edited, EDIT, "ignored", original_name="orig")  # a link added after the read
    store_interventions(lib, "orig", _record(3))
    stored = lib.open("orig")
    assert stored.interventions == _record(3) and linked(lib, stored).others == ("orig-edited",)
    store_interventions(lib, "orig", None)
    assert lib.open("orig").interventions is None
    shelf = lib.collection("shelf")
    shelf.save(original, "one")
    store_interventions(lib, "shelf/one", _record(5))
    assert shelf.open("one").interventions == _record(5)
    assert sorted(e.name for e in lib.entries()) == ["orig", "orig-edited"]  # nothing saved beside them


def test_a_gallery_pair_is_linked_by_the_names_the_gallery_holds():
    """Without a library (a gallery trace), the caller says which names exist (the app passes the gallery's)."""
    original, edited = _traces()
    edited = edited.model_copy(update={"extra": {**edited.extra, "edited_from": {"name": "apples", **EDIT}}})
    assert linked(None, edited, exists={"apples"}.__contains__).missing == ()
    assert linked(None, edited, exists={"pears"}.__contains__).missing == ("apples",)
