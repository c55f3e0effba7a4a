from flashtrace.store.library import Library
from flashtrace.app.ui import plain

from .conftest import no_problems


def test_home_lists_the_gallery(open_page, gallery_items):
    at = open_page()
    no_problems(at)
    assert at.title[0].value == "FlashTrace Studio"
    titles = [s.value for s in at.subheader]
    assert sorted(titles) == sorted(plain(it.title) for it in gallery_items)  # cards fill three columns (escaped)
    captions = " ".join(c.value for c in at.caption)
    for it in gallery_items:
        assert f"{it.n_tokens:,} tokens" in captions
    assert any("trace=gallery%3A" in el.proto.query_string for el in at.get("page_link"))
    assert "Nothing saved yet" in captions


def test_home_lists_recent_library_traces(open_page, library_dir, gallery_items):
    from flashtrace.store.gallery import load_gallery_trace

    Library(library_dir).save(load_gallery_trace(gallery_items[0].name), "my-saved-trace")
    at = open_page()
    no_problems(at)
    assert any("lib%3Amy-saved-trace" in el.proto.query_string for el in at.get("page_link"))
