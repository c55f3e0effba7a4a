"""Issue 30, loading: a crafted trace file gives a `TraceValidationError` (never another exception), and
loading any file takes bounded memory (defects 1 and 3)."""

import json
import subprocess
import sys
import tracemalloc

import pytest

from flashtrace.analysis.schema import Trace, TraceValidationError
from flashtrace.store.library import Library
from tests.bad_files import amplifying, overflow_scores

MEMORY_FACTOR, MEMORY_CONSTANT = 4, 8 * 2**20  # the guarantee: peak <= 4 x the file size + 8 MiB


def peak_of_load(path) -> int:
    """Peak bytes Python allocated while `Trace.load(path)` ran (the result or the error included). The parser
    builds its objects through Python's allocator, so they count here; its own array buffers do not (the
    resident-memory test below sees them)."""
    tracemalloc.start()
    try:
        Trace.load(path)
    except TraceValidationError:
        pass
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def test_overflowing_scores_are_a_validation_error(tmp_path):
    path = overflow_scores(tmp_path / "overflow.json")
    with pytest.raises(TraceValidationError, match="scores"):
        Trace.load(path)


def test_export_of_the_overflowing_file_is_one_line_exit_2(tmp_path):
    path = overflow_scores(tmp_path / "overflow.json")
    res = subprocess.run([sys.executable, "-m", "flashtrace.cli", "export", str(path), "--json", str(tmp_path / "o.json")],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip().count("\n") == 0 and "internal error" not in res.stderr


def test_library_lists_the_overflowing_file_as_unreadable_and_deletes_it(tmp_path):
    overflow_scores(tmp_path / "overflow.json")
    lib = Library(tmp_path)
    (entry,) = lib.entries()
    assert not entry.readable and "scores" in entry.error
    lib.delete("overflow")
    assert lib.entries() == []


@pytest.mark.parametrize("kind", ["extra_floats", "extra_ints", "stop_tokens", "timings"])
def test_loading_takes_at_most_4x_the_file_size(tmp_path, kind):
    path = amplifying(tmp_path / f"{kind}.json", kind, 4_000_000)
    size = path.stat().st_size
    peak = peak_of_load(path)
    assert peak <= MEMORY_FACTOR * size + MEMORY_CONSTANT, f"{peak / size:.1f}x the file size"


@pytest.mark.parametrize("kind", ["stop_tokens", "timings"])
def test_unbounded_lists_are_refused(tmp_path, kind):
    path = amplifying(tmp_path / f"{kind}.json", kind, 200_000)
    with pytest.raises(TraceValidationError, match="at most"):
        Trace.load(path)


def test_a_valid_trace_still_loads_and_saves_back(tmp_path):
    from tests.bad_files import gallery_data

    data = gallery_data("long-vartrack")
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    trace = Trace.load(path)
    assert Trace.from_json(trace.to_json()).n_tokens == trace.n_tokens > 2000


# --- the guarantee, fuzzed: any JSON document, grown to up to ~1 MB by repeating a part of it ---------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.bad_files import gallery_data  # noqa: E402

REFUSED_FACTOR = 9  # a refused file: the parse budget (json_budget.PARSE_FACTOR = 8) plus the text itself
OVERHEAD_FACTOR = 4  # a loaded file: at most this much beyond the Trace it returns
FUZZ_CONSTANT = 8 * 2**20  # the parse budget's 4 MiB, numpy's chunk buffers, pydantic's first errors
scalars = (st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(max_size=8))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                                              max_size=4), max_leaves=10)
PLACES = ("top", "extra", "tokens", "stop_tokens", "timings", "hop_weights", "segments")


def _grow(doc, place: str, filler, count: int):
    """`doc` with `count` copies of `filler` at `place` (a list, or an object of that many keys)."""
    if not isinstance(doc, dict):
        return [doc, [filler] * count]
    many = [filler] * count
    keyed = {f"k{i}": filler for i in range(count)}
    if place == "top":
        doc["grown"] = many
    elif place == "extra":
        doc.setdefault("extra", {})["grown"] = many if count % 2 else keyed
    elif place in ("tokens", "segments"):
        doc[place] = (doc.get(place) or []) + many
    elif place == "stop_tokens" and isinstance(doc.get("settings"), dict):
        doc["settings"]["stop_tokens"] = many
    elif place == "timings":
        doc["timings"] = keyed
    elif place == "hop_weights" and doc.get("hops"):
        doc["hops"][0]["weights"] = doc["hops"][0]["weights"] + many
    return doc


@st.composite
def documents(draw) -> bytes:
    doc = gallery_data("free-form") if draw(st.booleans()) else draw(values)
    doc = _grow(doc, draw(st.sampled_from(PLACES)), draw(values), draw(st.sampled_from([0, 1, 300, 3000, 30_000])))
    text = json.dumps(doc, separators=(",", ":")).encode("utf-8", "surrogatepass")
    cut = draw(st.sampled_from([None, None, None, 0.5]))  # sometimes truncated
    return text[: int(len(text) * cut)] if cut else text


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow,
                                                                                   HealthCheck.data_too_large])
@given(text=documents())
def test_loading_any_document_raises_only_trace_errors_within_bounded_memory(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("fuzz") / "doc.json"
    path.write_bytes(text)
    tracemalloc.start()
    try:
        trace = Trace.load(path)
    except TraceValidationError:
        trace = None
    peak, retained = tracemalloc.get_traced_memory()[1], tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    size = len(text)
    if trace is None:
        assert peak <= REFUSED_FACTOR * size + FUZZ_CONSTANT, f"refused, {peak / max(size, 1):.1f}x its size"
    else:
        assert peak - retained <= OVERHEAD_FACTOR * size + FUZZ_CONSTANT, f"{(peak - retained) / size:.1f}x overhead"


# --- the same bounds as resident memory, in a fresh process: it also sees what pydantic-core's parser holds
# outside Python's allocator (its array buffers), which tracemalloc above does not -----------------------------
from flashtrace.run.bench.load_probe import hostile, load_peak  # noqa: E402
from flashtrace.run.bench.synthetic import synthetic_trace_data  # noqa: E402

RSS_CONSTANT = 16 * 2**20  # the allocator's arenas and pages, beyond what the objects take


def _resident_case(path, case: str):
    if case == "valid_with_steps":  # ~2 MB, parsed by pydantic-core's parser
        path.write_text(json.dumps(synthetic_trace_data(3000, 1, 60), separators=(",", ":")), encoding="utf-8")
    elif case == "short_float_arrays":  # 8 MB just under the parse budget: parsed, then refused
        path.write_bytes(hostile("short_float_arrays", 8_000_000))
    else:  # a lone surrogate in `extra`: refused by pydantic-core's parser, read by the standard library's
        data = gallery_data("long-vartrack")
        data["extra"]["note"] = "\ud800"
        path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("case", ["valid_with_steps", "short_float_arrays", "lone_surrogate"])
def test_peak_resident_memory_of_a_load_is_bounded(tmp_path, case):
    path = _resident_case(tmp_path / f"{case}.json", case)
    size = path.stat().st_size
    traced, resident = load_peak(path, "tracemalloc"), load_peak(path, "rss")
    assert traced["outcome"] == resident["outcome"]
    assert resident["outcome"].startswith("refused" if case == "short_float_arrays" else "loaded"), resident
    if resident["outcome"] == "loaded":  # the Trace it returns, plus at most 4x the file
        bound = traced["retained"] + OVERHEAD_FACTOR * size + RSS_CONSTANT
    else:
        bound = REFUSED_FACTOR * size + RSS_CONSTANT
    assert resident["rss"] <= bound, f"{resident['rss'] / size:.1f}x the file size"
