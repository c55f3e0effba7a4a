"""The list of URL parameters each page reads (tests/app/url_params.py), which the browser tests use to
visit each page once per distinct set of values it reads, agrees with the app's code."""

from .url_params import EVERY_PAGE, FILES, READS, ROOT, TRACE_HELPERS, reads_in_code, runs_apart

GENERIC = ("synced", "heatmap_window")  # ui's readers of the parameter their caller names


def test_every_page_reads_exactly_the_parameters_listed():
    assert set(FILES.values()) == {"app.py", *(str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py"))}
    assert set(FILES) == set(READS)
    for page, file in FILES.items():
        names, calls, unknown = reads_in_code(ROOT / file)
        assert unknown == [], (file, "reads a parameter by a name the list cannot know", unknown)
        if calls & TRACE_HELPERS:
            names.add("trace")
        assert names - EVERY_PAGE == READS[page], (file, names)


def test_the_shared_code_reads_only_the_trace_and_the_details_switch():
    names, _, unknown = reads_in_code(ROOT / "flashtrace" / "app" / "ui.py", GENERIC)
    assert unknown == [] and names == {"trace", "details"}, (names, unknown)
    for path in sorted((ROOT / "flashtrace").rglob("*.py")):
        if path.name != "ui.py" or path.parent.name != "app":
            assert reads_in_code(path)[0::2] == (set(), []), path


def test_visits_differ_only_in_what_the_page_reads():
    queries = ["", "?trace=lib:a", "?trace=lib:a&delete=a", "?trace=lib:a&step=2", "?tab=Methods", "?details=1"]
    assert runs_apart("Story", queries) == ["", "?trace=lib:a", "?trace=lib:a&step=2", "?details=1"]
    assert runs_apart("Glossary", queries) == ["", "?details=1"]
    assert runs_apart("Compare", queries) == ["", "?trace=lib:a", "?details=1"]
