"""The parse budget a trace file must fit before it is parsed (`flashtrace.base.json_budget`): the ASCII text
the loader parses, the skeleton its shape is read from, the memory estimate, and each refusal at its limit."""

import json

import pytest

from flashtrace.analysis.schema import Trace
from flashtrace.base.json_budget import (CHUNK, MAX_DEPTH, MAX_ELEMENTS, JsonBudgetError, check_json_budget, json_text,
                                         parsed_bytes, skeleton)
from tests.bad_files import gallery_data

# CPython's sizes on 64-bit, as a test writes them down: list header, list slot, dict header, dict entry, int or
# float, str header; what pydantic-core holds outside Python: 16 bytes a slot of an open array, twice the
# longest string
LIST, SLOT, DICT, ENTRY, NUMBER, STR, OPEN_SLOT, TAPE = 56, 8, 64, 48, 32, 56, 16, 2


def _dumps(doc) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode("ascii")


# --- json_text: the standard library's own escaping, chunk by chunk --------------------------------------------
WORDS = ["café", "naïve – “quoted”", "日本語のテキスト", "emoji 🙂 and 👩‍🔬",
         "\u0080\u07ff\u0800\uffff\U00010000\U0010ffff"]  # the first and last characters of 2, 3 and 4 UTF-8 bytes


@pytest.mark.parametrize("pad", [0, CHUNK - 1, CHUNK - 2, CHUNK - 3, CHUNK - 5, 2 * CHUNK - 4])
def test_json_text_escapes_every_character_beyond_ascii_as_the_standard_library_does(pad):
    """Characters of 2, 3 and 4 UTF-8 bytes, some cut by a chunk boundary: the same text as json.dumps writes."""
    doc = {"title": "a" * pad + "".join(WORDS), "words": WORDS}
    raw = json.dumps(doc, ensure_ascii=False).encode("utf-8")
    assert json_text(raw) == json.dumps(doc).encode("ascii")


def test_ascii_text_is_returned_as_it_is():
    raw = _dumps({"a": [1, 2.5, "x\\u00e9"]})
    assert json_text(raw) is raw


@pytest.mark.parametrize("raw", [
    b'["caf\xc3"]',  # a 2-byte character cut short inside the text
    b'["abc' + "é".encode()[:1],  # ... at the very end
    b"[" + b" " * (2 * CHUNK - 3) + "日".encode()[:2],  # ... at the end of a text of exactly two chunks
    b'["\xed\xa0\x80"]',  # an encoded UTF-16 surrogate is not UTF-8
    b'["\xff"]',
])
def test_bytes_that_are_not_utf8_are_refused(raw):
    with pytest.raises(UnicodeDecodeError):
        json_text(raw)


def test_a_trace_with_text_beyond_ascii_loads_with_that_text():
    data = gallery_data("needle")
    data["extra"]["note"] = "".join(WORDS)
    trace = Trace.from_json(json.dumps(data, ensure_ascii=False).encode("utf-8"))
    assert trace.extra["note"] == "".join(WORDS)


# --- skeleton: the shape and the strings, read independently from the document ---------------------------------
def _shape(value) -> str:
    if isinstance(value, list):
        return "[" + (",".join(_shape(v) for v in value) if value else "~") + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f'"":{_shape(v)}' for v in value.values()) + "}"
    return '""' if isinstance(value, str) else ""


def _strings(value) -> list[str]:
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *_strings(v)]]
    return [value] if isinstance(value, str) else []


def _check_skeleton(doc) -> None:
    found = skeleton(_dumps(doc))
    written = [len(json.dumps(s)) - 2 for s in _strings(doc)]  # each string's content as the file holds it
    assert bytes(found.shape) == _shape(doc).encode()
    assert (found.strings, found.content) == (len(written), sum(written))
    assert max(written, default=0) <= found.longest <= sum(written)


@pytest.mark.parametrize("doc", [
    [], {}, [[]], [0], [[], [1], [1, 2]], {"a": "xy", "b": [1, 2.5e3, True, None, [], {}]},
    {"key with \"quotes\" and \\": ["\\\"", "\"", "[]{},:"], "": ""}, [-1e-06, "x", False, {"n": None}],
])
def test_the_skeleton_keeps_the_containers_and_counts_the_strings(doc):
    _check_skeleton(doc)


@pytest.mark.parametrize("offset", range(-4, 4))
@pytest.mark.parametrize("escape", ['"', "\\", "\n"])
def test_an_escape_cut_by_a_chunk_boundary_ends_no_string(offset, escape):
    """A string whose escapes (2 bytes in the file) fall on and around the end of the first chunk, then more
    strings and containers after it: the same skeleton as from the document itself."""
    head = '["' + "a" * (CHUNK - 2 + offset)  # the file's first CHUNK bytes end inside the escapes below
    doc = [head[2:] + escape * 3 + "b", ["c", {"d": escape}], 7, "e" * 3]
    _check_skeleton(doc)


@pytest.mark.parametrize("size", [CHUNK - 3, CHUNK + 10, 3 * CHUNK + 5])
def test_a_string_longer_than_a_chunk_is_one_string(size):
    doc = {"long": "x" * size + '"', "after": ["y", [], [1]], "backslashes": "\\" * size, "z": "w" * 5}
    _check_skeleton(doc)
    assert skeleton(_dumps(doc)).longest >= size + 2


def test_a_text_cut_inside_a_string_counts_it_to_its_end():
    text = _dumps(["ab", "cd" * CHUNK])[:-10]
    found = skeleton(text)
    assert (bytes(found.shape), found.strings, found.content) == (b'["","', 2, 2 + len(text) - len('["ab","'))


# --- parsed_bytes: the estimate of what the parse takes ----------------------------------------------------------
def _array_of_numbers(n: int) -> int:
    return LIST + (SLOT + NUMBER + OPEN_SLOT) * n


@pytest.mark.parametrize("doc, expected", [
    ([], LIST),
    ({}, DICT),
    ([0], _array_of_numbers(1)),
    ([0, 1.5, -2], _array_of_numbers(3)),
    (["ab", "cd"], LIST + (SLOT + OPEN_SLOT + STR + 2 * 2) * 2 + TAPE * 4),  # the longest: all the content
    ([[], [1], [1, 2]], 3 * LIST + (SLOT + NUMBER) * 3 + OPEN_SLOT * 2 + LIST + (SLOT + OPEN_SLOT) * 3),  # open: the widest
    ({"a": 1}, DICT + ENTRY + NUMBER + 2 * 1 + TAPE * 1),  # a key of a small object is shared: no header
    ([[0, 0], [0, 0, 0, 0]], 2 * LIST + (SLOT + NUMBER) * 6 + OPEN_SLOT * 4 + LIST + (SLOT + OPEN_SLOT) * 2),
    ({"a": [0], "b": "x", "c": 1}, LIST + SLOT + NUMBER + OPEN_SLOT  # one number in the list, one in the object
     + DICT + ENTRY * 3 + NUMBER + STR + 2 * 4 + TAPE * 4),
    # containers already counted on both sides of an object and of an array: only their own children are not numbers
    ([[[0]], {"a": [0], "b": 1}, [[0], 2], [[0]]], 4 * (LIST + SLOT + NUMBER) + OPEN_SLOT  # the four [0]
     + 2 * (LIST + SLOT) + DICT + 2 * ENTRY + NUMBER + (LIST + 2 * SLOT + NUMBER) + OPEN_SLOT * 2  # [@], {..}, [@,2]
     + LIST + 4 * (SLOT + OPEN_SLOT) + 2 * (2 * 1 + TAPE)),  # the outer list; the keys' contents
])
def test_the_estimate_counts_headers_slots_numbers_and_strings(doc, expected):
    assert parsed_bytes(_dumps(doc), 100) == expected


@pytest.mark.parametrize("n", [63, 64, 65, 66])
def test_the_keys_of_small_objects_are_shared_and_those_of_big_ones_counted(n):
    doc = {f"k{i:03d}": i for i in range(n)}
    text = _dumps(doc)
    keys = 0 if n <= 64 else STR * n
    strings = STR * n + 2 * 4 * n + TAPE * (4 * n)  # headers, contents, the longest (all in one chunk)
    assert parsed_bytes(text, 100) == DICT + (ENTRY + NUMBER) * n - STR * n + keys + strings


def test_the_estimate_is_an_upper_bound_of_what_python_allocates_for_the_parse():
    import tracemalloc

    from pydantic_core import from_json

    for doc in [list(range(1000, 6000)), ["xy" * 5] * 3000, {f"k{i}": [i, str(i)] for i in range(2000)},
                gallery_data("needle")]:
        text = json_text(json.dumps(doc).encode())
        tracemalloc.start()
        parsed = from_json(text, cache_strings="keys")
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        del parsed
        assert peak <= parsed_bytes(text, 10**6)


# --- the refusals, each at its limit -----------------------------------------------------------------------------
def test_too_many_containers_are_refused_with_their_count():
    text = _dumps([[0]] * 9)  # 10 arrays
    check_json_budget(text, 10)
    with pytest.raises(JsonBudgetError, match="^the file holds 10 JSON arrays/objects; a trace has at most 9$"):
        check_json_budget(text, 9)
    with pytest.raises(JsonBudgetError, match="holds 1,200 JSON arrays/objects; a trace has at most 1,000$"):
        check_json_budget(_dumps([{"a": [1]}] * 599 + [[]]), 1000)


def test_nesting_is_refused_beyond_the_depth_limit():
    deep = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    check_json_budget(deep.encode(), 100)
    with pytest.raises(JsonBudgetError, match=f"^the JSON is nested deeper than {MAX_DEPTH} levels$"):
        check_json_budget(f"[{deep}]".encode(), 100)
    with pytest.raises(JsonBudgetError, match="nested deeper"):
        check_json_budget(('{"a":' * 60 + "1" + "}" * 60).encode(), 100)


@pytest.mark.parametrize("kind, doc", [("array", lambda n: "[" + ",".join(["0"] * n) + "]"),
                                       ("object", lambda n: "{" + ",".join(['"":0'] * n) + "}")])
def test_a_container_of_more_values_than_the_limit_is_refused_with_its_size(kind, doc):
    with pytest.raises(JsonBudgetError, match=f"^a JSON {kind} holds 1,000,001 values; a trace's arrays and objects "
                                              "hold at most 1,000,000$"):
        check_json_budget(doc(MAX_ELEMENTS + 1).encode(), 10)
    with pytest.raises(JsonBudgetError, match="too many small values"):  # at the limit: only the budget refuses it
        check_json_budget(doc(MAX_ELEMENTS).encode(), 10)


def test_a_file_of_small_numbers_is_refused_right_past_the_budget():
    """An array of n zeros (2n + 1 bytes) takes ~56 bytes a value; the budget is 8 times the text plus 4 MiB:
    104,856 zeros fit, 104,857 do not."""
    fits = _dumps([0] * 104_856)
    assert parsed_bytes(fits, 10) == _array_of_numbers(104_856) <= 8 * len(fits) + 4 * 2**20
    check_json_budget(fits, 10)
    at = _dumps([0] * 104_857).replace(b",", b" ,", 3)  # spaces cost nothing to parse: exactly the budget
    assert parsed_bytes(at, 10) == 8 * len(at) + 4 * 2**20
    check_json_budget(at, 10)
    over = _dumps([0] * 104_857)
    words = ("^the file holds too many small values to be a trace \\(reading it would take ~6 MiB, 28 times its size; "
             "at most 8 times plus 4 MiB\\)$")
    with pytest.raises(JsonBudgetError, match=words):
        check_json_budget(over, 10)


def test_an_empty_text_is_left_to_the_parser():
    check_json_budget(b"", 0)
    check_json_budget(b"   ", 0)


def test_a_long_run_of_backslashes_is_read_a_chunk_at_a_time_in_bounded_memory():
    """A valid trace whose `extra` holds 4 MB of escaped backslashes (issue 48, H1: the check used to take about 90
    bytes a byte of such a run, 685 MiB for a 7.6 MiB file): the skeleton is read a chunk at a time, its memory a
    small multiple of the text, and the trace loads."""
    import tracemalloc

    data = gallery_data("needle")
    data["extra"]["s"] = "\\" * 2_000_000
    text = json.dumps(data).encode("ascii")
    found = skeleton(text)
    assert found.longest >= 4_000_000 and bytes(found.shape).count(b'""') == found.strings
    tracemalloc.start()
    check_json_budget(text, 10_000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2 * len(text) + 8 * 2**20, peak  # the skeleton and a chunk, not 90 bytes a byte
    assert Trace.from_json(text).extra["s"] == "\\" * 2_000_000


@pytest.mark.parametrize("run", [1, 2, 3, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK + 1])
def test_a_backslash_run_of_any_length_across_chunk_ends_keeps_every_string(run):
    doc = ["a" * (CHUNK - 5), "\\" * run + '"', ["after", {"k": "\\"}], "\\" * run]
    _check_skeleton(doc)
