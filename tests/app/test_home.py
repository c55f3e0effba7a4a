"""The home page (AppTest): the gallery cards in their groups, links to each trace's pages, recent library traces."""

from flashtrace.app.ui import plain
from flashtrace.store.library import Library

from .conftest import literal, no_problems


GROUPS = ("Reasoning the model wrote itself", "Where the model went wrong, and the edit that tests it",
          "Synthetic benchmark traces")


def test_home_lists_the_gallery_model_written_first_then_failures_then_synthetic(open_page, gallery_items):
    at = open_page()
    no_problems(at)
    assert at.title[0].value == "FlashTrace Studio"
    cards = [it for it in gallery_items if it.edited_from is None]  # an edited version opens from its original
    titles = [s.value for s in at.subheader if s.value not in GROUPS]
    assert sorted(titles) == sorted(plain(it.title) for it in cards)  # cards fill three columns (escaped)
    headings = [s.value for s in at.subheader]
    groups = [[it for it in cards if it.written and it.correct is not False],
              [it for it in cards if it.written and it.correct is False], [it for it in cards if not it.written]]
    at_ = 0
    for heading, members in zip(GROUPS, groups):
        if members:  # each group under its heading, in this order (cards fill columns: compare as sets)
            assert headings[at_] == heading
            assert sorted(headings[at_ + 1:at_ + 1 + len(members)]) == sorted(plain(it.title) for it in members)
            at_ += 1 + len(members)
    assert at_ == len(headings)
    captions = " ".join(literal(c.value) for c in at.caption)
    for it in cards:
        assert f"{it.n_tokens:,} tokens" in captions
    links = [(el.proto.page, el.proto.query_string) for el in at.get("page_link") if el.proto.query_string]
    for it in cards:  # each card opens its own trace in the Story, Explore and Hop graph pages
        mine = sorted(page for page, query in links if query == f"trace=gallery%3A{it.name}")
        assert set(mine) == {"Explore", "Hop_graph", "Story"}, it.name  # the pages' names (their files less the number)
    for it in (it for it in cards if it.edited_versions):  # a failure's card opens its edited version's Story
        for name in it.edited_versions:
            assert ("Story", f"trace=gallery%3A{name}") in links
    failure_notes = [m.value for m in at.markdown if m.value.startswith("Answered ")]
    assert len(failure_notes) == len(groups[1])  # each failure card says what it answered and what was right
    assert "Nothing saved yet" in captions


def test_home_lists_recent_library_traces(open_page, library_dir, gallery_items):
    from flashtrace.store.gallery import load_gallery_trace

    Library(library_dir).save(load_gallery_trace(gallery_items[0].name), "my-saved-trace")
    at = open_page()
    no_problems(at)
    (link,) = [el.proto for el in at.get("page_link") if "lib%3A" in el.proto.query_string]
    assert (link.page, link.query_string) == ("Explore", "trace=lib%3Amy-saved-trace")  # opens it in Explore
    trace = load_gallery_trace(gallery_items[0].name)
    assert link.label == plain(f"my-saved-trace · {trace.model.name} · {trace.n_tokens:,} tokens")  # shown as text
    assert "Nothing saved yet" not in " ".join(c.value for c in at.caption)
