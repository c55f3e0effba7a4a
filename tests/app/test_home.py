from flashtrace.app.ui import plain
from flashtrace.store.library import Library

from .conftest import no_problems


def test_home_lists_the_gallery(open_page, gallery_items):
    at = open_page()
    no_problems(at)
    assert at.title[0].value == "FlashTrace Studio"
    groups = {"Where the hops change the evidence", "Where the hops confirm what the answer reads directly"}
    titles = [s.value for s in at.subheader if s.value not in groups]
    assert sorted(titles) == sorted(plain(it.title) for it in gallery_items)  # cards fill three columns (escaped)
    headings = [s.value for s in at.subheader]
    changing = [plain(it.title) for it in gallery_items if it.changes_evidence]
    if changing:  # the traces where hops change the evidence come first, under their own heading
        assert headings[0] == "Where the hops change the evidence"  # cards fill columns: compare as sets
        assert sorted(headings[1:1 + len(changing)]) == sorted(changing)
    captions = " ".join(c.value for c in at.caption)
    for it in gallery_items:
        assert f"{it.n_tokens:,} tokens" in captions
    links = [(el.proto.page, el.proto.query_string) for el in at.get("page_link") if el.proto.query_string]
    for it in gallery_items:  # each card opens its own trace in the Story, Explore and Hop graph pages
        mine = sorted(page for page, query in links if query == f"trace=gallery%3A{it.name}")
        assert set(mine) == {"Explore", "Hop_graph", "Story"}, it.name  # the pages' names (their files less the number)
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
