"""Reading JSON with bounded memory: what a parse would cost, measured before it runs.

``json.loads`` turns every value into a Python object: ``[0,0,...]`` takes 8 bytes a value for 2 bytes of
text, ``["ab","cd",...]`` about 60 bytes for 5, and one emoji makes the whole decoded text take 4 bytes a
character. A file of millions of tiny values could so take 10-40 times its size before any validation
refused it. Here:

- `json_text` turns UTF-8 bytes into ASCII JSON text (characters beyond ASCII become ``\\uXXXX`` escapes,
  chunk by chunk), so the text being parsed takes one byte a character whatever it holds;
- `check_json_budget` reads the document's shape without parsing it and refuses it (`JsonBudgetError`)
  when it holds more than `max_containers` arrays and objects, nests deeper than `MAX_DEPTH`, holds more
  than `MAX_ELEMENTS` values in one array or object, or would become Python objects (`parsed_bytes`, an
  upper estimate from the counts of values, strings, numbers and containers) taking more than
  ``PARSE_FACTOR`` times its size plus ``PARSE_CONSTANT``.

The shape is read from a skeleton: string contents removed (one regular-expression pass, so the
skeleton never takes more than the text), then numbers, literals and white space deleted (``[0.5,1e-6]``
becomes ``[,]``; an empty ``[]`` is marked ``[~]`` first, so that a bare ``[]`` reads as an array of one
value), then the innermost arrays and objects counted and collapsed to one placeholder, one
regular-expression pass per nesting level. A file of numbers so shrinks to its commas and brackets before
the passes.

The estimate is for pydantic-core's parser (`pydantic_core.from_json`, what `Trace.load` uses; the
standard library's ``json`` takes less): the Python objects it builds, plus what it holds outside Python
while parsing, which tracemalloc does not see: a vector of pointers for each array not yet closed (at most
16 bytes an element, counted for the largest array of each nesting level, as the open arrays are one
path from the root) and one buffer for a string with escapes (at most twice the longest string).
"""

from __future__ import annotations

import codecs
import re
from typing import NamedTuple

from .errors import InputError


MAX_DEPTH = 48  # a trace nests 4 levels, plus 16 in its free-form `extra`
MAX_ELEMENTS = 1_000_000  # values in one array or object
PARSE_FACTOR = 8  # the parsed objects may take this many times the text's size, plus PARSE_CONSTANT (valid
PARSE_CONSTANT = 4 * 2**20  # traces are estimated at 3.4-7.1 times: a token record ~12 times its JSON, a float ~4)
SHARED_KEYS = 64  # objects with at most this many members are records whose keys repeat (not counted)
CHUNK = 1 << 16  # bytes decoded at a time
_INNERMOST = re.compile(rb"[\[{][^\[\]{}]*[\]}]")
_CONTENT = re.compile(rb'[^"\\]*(?:\\(?:.|\Z)[^"\\]*)*', re.DOTALL)  # a string's content, escapes and all
_STRING = re.compile(rb'"' + _CONTENT.pattern + rb'(?:"|\Z)', re.DOTALL)  # a string, to its closing quote or the end
_BACKSLASH = ord("\\")
_CHILD = b"@"  # a collapsed container (never in a skeleton outside strings, '@' is not JSON syntax)
_EMPTY = b"~"  # the content of an empty array (not JSON syntax either)
_SCALAR = b" \t\r\n+-.0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"  # numbers, literals, space
_OPEN_SLOT = 16  # bytes the parser holds outside Python per element of an array not yet closed
_TAPE = 2  # bytes of its string buffer per byte of the longest string
# CPython sizes on 64-bit: a list slot, a dict entry (with its share of the hash table), an int or float, a
# str header, a list and a dict header
_SLOT, _ENTRY, _NUMBER, _STR, _LIST, _DICT = 8, 48, 32, 56, 56, 64


class JsonBudgetError(InputError):
    """The document would take too much memory (or depth) to parse; the message says what is too large."""


def _json_escape(exc: UnicodeEncodeError) -> tuple[str, int]:
    chars = exc.object[exc.start:exc.end]  # from the strict UTF-8 decoder: never a lone surrogate
    escaped = chars.encode("utf-16-be")
    return "".join(f"\\u{escaped[i]:02x}{escaped[i + 1]:02x}" for i in range(0, len(escaped), 2)), exc.end


codecs.register_error("flashtrace-json-escape", _json_escape)


def json_text(data: bytes) -> bytes | bytearray:
    """`data` (UTF-8) as ASCII bytes: every character beyond ASCII written as a JSON ``\\uXXXX`` escape
    (a surrogate pair beyond the BMP). Decoded a chunk at a time.

    Args:
        data: JSON text encoded as UTF-8.

    Returns:
        ASCII `data` as it is; other text as the `bytearray` it was written into (a copy to `bytes` would hold
        the escaped text twice: 6 times the size of a file of emoji, where this holds ~3.4).

    Raises:
        UnicodeDecodeError: For bytes that are not UTF-8.
    """
    if data.isascii():
        return data
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    out = bytearray()
    for start in range(0, len(data), CHUNK):
        part = decoder.decode(data[start:start + CHUNK], final=start + CHUNK >= len(data))
        out += part.encode("ascii", "flashtrace-json-escape")
    return out


def _chunk_end(data: bytes, start: int, end: int) -> int:
    """`end`, or one byte later when the chunk ``data[start:end]`` would end between a backslash and the character
    it escapes (so no escape is cut). `start` is never inside an escape (it is the previous chunk's end), so the
    backslashes ending the chunk pair up from there: only the run inside this chunk is counted, and a long run of
    backslashes costs no more than any other chunk (it used to be walked byte by byte and read as one piece)."""
    if end >= len(data):
        return len(data)
    run = 0
    while end - run > start and data[end - run - 1] == _BACKSLASH:
        run += 1
    return end + 1 if run % 2 else end


class Skeleton(NamedTuple):
    """What `skeleton` reads of a JSON text."""

    shape: bytearray  # the text without string contents, numbers, literals and white space
    strings: int  # the number of strings
    content: int  # bytes of string content
    longest: int  # an upper bound of the longest string's content, in bytes


def skeleton(data: bytes) -> Skeleton:
    """`data` with every string's content removed (``"..."`` becomes ``""``) and its numbers, literals and
    white space deleted (an empty array, written ``[]``, becomes ``[~]``), with counts of its strings.

    A chunk at a time (so the pieces a substitution makes stay small), each by one regular-expression pass:
    from an opening quote `_STRING` reads ordinary characters and escapes up to the closing quote or the end,
    so a match never fails and never restarts inside what it read (linear time, whatever the text). Whether
    a chunk ends inside a string is read from a sentinel ``"\\x00`` appended to it: its quote closes the open
    string (the NUL byte stays) or opens one that runs to the end (and is dropped). An empty array split
    between two chunks, or written with space inside, reads as an array of one value (more, never less).

    Args:
        data: ASCII JSON text (as `json_text` makes it).

    Returns:
        The shape without string contents, numbers, literals and white space, the number of strings, the bytes
        of string content and an upper bound of the longest string's content.
    """
    out, n, kept, longest, run, pos, inside = bytearray(), 0, 0, 0, 0, 0, False
    while pos < len(data):
        end = _chunk_end(data, pos, min(pos + CHUNK, len(data)))
        chunk, pos = data[pos:end], end
        if inside:
            rest = _CONTENT.match(chunk).end()
            run += rest
            if rest == len(chunk):
                continue
            out += b'"'
            kept += 1
            chunk, inside, longest = chunk[rest + 1:], False, max(longest, run)
        piece, count = _STRING.subn(b'""', chunk + b'"\x00')
        inside = piece.endswith(b"\x00")
        kept += len(piece) - 2
        longest, run = max(longest, len(chunk)), len(chunk) if inside else 0  # a string within the chunk, or
        out += memoryview(piece.replace(b"[]", b"[" + _EMPTY + b"]").translate(None, _SCALAR))[:-2]  # the one
        n += count if inside else count - 1  # open at its end (its quote stays)
    content = len(data) - kept
    return Skeleton(out, n, content, min(longest, content))


def parsed_bytes(text: bytes, max_containers: int) -> int:
    """An upper estimate of the memory parsing ASCII `text` would take, in bytes (see the module docstring);
    `JsonBudgetError` for too many containers, too deep a nesting or too large a container.

    Args:
        text: ASCII JSON text (as `json_text` makes it).
        max_containers: The most arrays and objects the document may hold.

    Returns:
        The estimate, in bytes.

    Raises:
        JsonBudgetError: When `text` holds more than `max_containers` arrays and objects, nests deeper than
            `MAX_DEPTH`, or holds more than `MAX_ELEMENTS` values in one array or object.
    """
    shape, n_strings, content, longest = skeleton(text)
    total = 2 * content + _STR * n_strings + _TAPE * longest  # contents (escapes: at most 2 bytes a char), headers
    containers = shape.count(b"[") + shape.count(b"{")
    if containers > max_containers:
        raise JsonBudgetError(f"the file holds {containers:,} JSON arrays/objects; a trace has at most "
                              f"{max_containers:,}")
    for _ in range(MAX_DEPTH + 1):
        if not _INNERMOST.search(shape):
            return total
        cost, widest, shape = _collapse(shape)
        total += cost + _OPEN_SLOT * widest
    raise JsonBudgetError(f"the JSON is nested deeper than {MAX_DEPTH} levels")


def _values(shape: bytearray, lo: int, hi: int, is_object: bool) -> int:
    """The number of values in the container whose content is ``shape[lo:hi]`` (a reduced skeleton: a
    number left no trace, so an array with nothing inside but ``~`` is empty and one with nothing at all
    holds one value)."""
    if hi == lo:
        return 0 if is_object else 1
    if hi - lo == 1 and shape[lo] == _EMPTY[0]:
        return 0
    return shape.count(b",", lo, hi) + 1


def _collapse(shape: bytearray) -> tuple[int, int, bytearray]:
    """The memory the innermost arrays and objects of `shape` would take, the most values one of those arrays
    holds, and `shape` with each of them replaced by one placeholder (built in place: no list of pieces, which
    would take ~180 bytes a container)."""
    cost, widest, out, view, last = 0, 0, bytearray(), memoryview(shape), 0
    for match in _INNERMOST.finditer(shape):
        lo, hi = match.start() + 1, match.end() - 1
        is_object = shape[lo - 1] == ord("{")
        n = _values(shape, lo, hi, is_object)
        if n > MAX_ELEMENTS:
            raise JsonBudgetError(f"a JSON {'object' if is_object else 'array'} holds {n:,} values; a trace's arrays "
                                  f"and objects hold at most {MAX_ELEMENTS:,}")
        strings, children = shape.count(b'""', lo, hi), shape.count(_CHILD, lo, hi)
        if is_object:  # each member: a key string and a value; the parser shares equal keys, so the keys of
            keys = n if n > SHARED_KEYS else 0  # small objects (records) count once, those of big ones each
            cost += _DICT + _ENTRY * n + _NUMBER * max(n - (strings - n) - children, 0) - _STR * (n - keys)
        else:
            cost += _LIST + _SLOT * n + _NUMBER * max(n - strings - children, 0)
            widest = max(widest, n)
        out += view[last:match.start()]
        out += _CHILD
        last = match.end()
    out += view[last:]
    view.release()
    return cost, widest, out


def check_json_budget(text: bytes, max_containers: int) -> None:
    """`JsonBudgetError` unless ASCII `text` parses within ``PARSE_FACTOR`` × its size + ``PARSE_CONSTANT``.

    Args:
        text: ASCII JSON text (as `json_text` makes it).
        max_containers: The most arrays and objects the document may hold.

    Raises:
        JsonBudgetError: When parsing would take more than the budget, or for what `parsed_bytes` refuses (too
            many containers, too deep a nesting or too large a container).
    """
    need = parsed_bytes(text, max_containers)
    budget = PARSE_FACTOR * len(text) + PARSE_CONSTANT
    if need > budget:
        raise JsonBudgetError(f"the file holds too many small values to be a trace (reading it would take "
                              f"~{need / 2**20:,.0f} MiB, {need / max(len(text), 1):.0f} times its size; at most "
                              f"{PARSE_FACTOR:g} times plus {PARSE_CONSTANT // 2**20} MiB)")
