"""The app's caches of a stored trace follow its content (issue 48 L5 and item 7): they are keyed on the file's
inode, size, modification and change times, never on its modification time and size alone."""

import os

from flashtrace.analysis.schema import Trace
from flashtrace.store.gallery import load_gallery_trace
from flashtrace.store.library import Library


def test_a_same_size_edit_with_its_modification_time_put_back_is_read_again(library_dir):
    """Repro: save a trace, open it (cached), rewrite the file with a title of the same length, put the old
    modification time back (``os.utime``); Explore used to show the old title, as the size and mtime matched."""
    from flashtrace.app.state import load_trace

    trace = load_gallery_trace("arithmetic").model_copy(update={"title": "Apples AAAA"})
    lib = Library(library_dir)
    lib.save(trace, "apples")
    path = lib.path("apples")
    assert load_trace("lib:apples").title == "Apples AAAA"
    before = path.stat()
    path.write_text(path.read_text().replace("Apples AAAA", "Apples BBBB"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert Trace.load(path).title == "Apples BBBB"
    assert load_trace("lib:apples").title == "Apples BBBB"
