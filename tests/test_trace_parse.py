"""The loader parses with pydantic-core's parser and reads exactly what the standard library's `json` reads:
the same values, the same documents refused, in the standard library's words."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_core import from_json

from flashtrace.analysis.schema import Trace, TraceValidationError, _parse
from flashtrace.base.json_budget import json_text
from tests.bad_files import gallery_data

floats = st.floats(allow_nan=False, allow_infinity=False)
scalars = (st.none() | st.booleans() | st.integers() | floats | floats.map(lambda x: float(f"{x:.6g}"))
           | st.text(max_size=12))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner,
                                                                                              max_size=6), max_leaves=40)


def _same(a, b) -> bool:
    """Equal, and floats equal to the bit (-0.0 is not 0.0)."""
    if isinstance(a, float) and isinstance(b, float):
        return math.copysign(1, a) == math.copysign(1, b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@settings(max_examples=300, deadline=None, derandomize=True)
@given(doc=values, indent=st.sampled_from([None, 1]))
def test_the_fast_parser_reads_what_the_standard_library_reads(doc, indent):
    text = json_text(json.dumps(doc, indent=indent).encode("utf-8", "surrogatepass"))
    expected = json.loads(text.decode("ascii"))
    assert _same(_parse([text]), expected)
    try:
        fast = from_json(text, allow_inf_nan=False, cache_strings="keys")
    except ValueError:  # only lone UTF-16 surrogates, which the standard library reads
        assert any(0xD800 <= ord(c) <= 0xDFFF for c in text.decode("unicode_escape", "surrogatepass"))
    else:
        assert _same(fast, expected)


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_refused_in_the_standard_librarys_words(number):
    text = Trace.from_dict(gallery_data("needle")).to_json().replace('"rho":', f'"rho":{number},"_x":', 1)
    with pytest.raises(TraceValidationError, match=f"not valid JSON: {number} is not allowed in a trace"):
        Trace.from_json(text)


@pytest.mark.parametrize("text, words", [
    ('{"a": 1', "Expecting ',' delimiter"), ('{"a": 1}}', "Extra data"), ("", "Expecting value"),
    ('{"a": [1,]}', "Expecting value"), ('{"a": "\\x"}', "Invalid \\\\escape"), ('{"a": 01}', "Expecting ','"),
])
def test_invalid_json_is_named_in_the_standard_librarys_words(text, words):
    with pytest.raises(TraceValidationError, match=f"not valid JSON: {words}"):
        Trace.from_json(text)


def test_a_lone_surrogate_in_extra_still_loads():
    data = gallery_data("needle")
    data["extra"]["note"] = "\udc00 after"
    trace = Trace.from_json(json.dumps(data))
    assert trace.extra["note"] == "\udc00 after"
