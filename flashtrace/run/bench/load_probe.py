"""Peak memory of `Trace.load` in a fresh process, for the loader's memory tests and benchmarks/load_memory.py.

Two measures, each in its own process after a warm-up load of a gallery trace:

- ``tracemalloc``: the peak of Python's allocations during the load, and what stays allocated after it (the
  `Trace` returned); precise, but blind to what a parser allocates outside Python's allocator (pydantic-core's
  parser keeps its array buffers in Rust);
- ``rss``: the growth of the peak resident size during the load (Linux: the peak is reset through
  /proc/self/clear_refs, then read as VmHWM); it sees every allocation, with the allocator's overhead and the
  memory it keeps after freeing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ...base.errors import InputError

MEASURES = ("tracemalloc", "rss")
HOSTILE = ("zeros_array", "short_strings", "distinct_keys", "tiny_lists", "short_float_arrays")
PROBE = """
import json, sys, tracemalloc
from flashtrace.analysis.schema import Trace, TraceValidationError
from flashtrace.store.gallery import gallery_path

def status(field):
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith(field))

Trace.load(gallery_path("needle"))
with open("/proc/self/clear_refs", "w") as handle:
    handle.write("5")  # resets VmHWM to the current resident size
rss0 = status("VmRSS:")
traced = sys.argv[2] == "tracemalloc"  # its own bookkeeping takes ~50 bytes an allocation: not with the RSS
if traced:
    tracemalloc.start()
try:
    trace = Trace.load(sys.argv[1]); outcome = "loaded"
except TraceValidationError as exc:
    trace, outcome = None, "refused: " + str(exc)[:90]
if traced:
    retained, peak = tracemalloc.get_traced_memory()
    print(json.dumps({"tracemalloc": peak, "retained": retained, "outcome": outcome}))
else:
    print(json.dumps({"rss": status("VmHWM:") - rss0, "outcome": outcome}))
"""


def load_peak(path: str | Path, measure: str) -> dict:
    """Load the trace file at `path` in a fresh process and return its peak memory by `measure`, in bytes.

    Args:
        path: The trace file.
        measure: One of `MEASURES`: ``tracemalloc`` or ``rss``.

    Returns:
        ``{"tracemalloc": peak, "retained": bytes, "outcome": ...}`` or ``{"rss": growth, "outcome": ...}``; the
            outcome is ``loaded`` or ``refused: <the error>``.

    Raises:
        InputError: When `measure` is not one of `MEASURES`.
        subprocess.CalledProcessError: When the probe process fails.
        subprocess.TimeoutExpired: When the probe process runs past 600 seconds.
    """
    if measure not in MEASURES:
        raise InputError(f"measure must be one of {', '.join(MEASURES)}, got {measure!r}")
    out = subprocess.run([sys.executable, "-c", PROBE, str(path), measure], capture_output=True, text=True,
                         check=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def hostile(kind: str, size: int) -> bytes:
    """A JSON document of about `size` bytes of one of the `HOSTILE` shapes beyond the trace fields: tiny values
    in arrays, objects and lists of lists.

    Args:
        kind: One of `HOSTILE`.
        size: About how many bytes the document has.

    Returns:
        The JSON document, as bytes.

    Raises:
        InputError: When `kind` is not one of `HOSTILE`.
    """
    n = size // 2
    if kind == "zeros_array":
        return b'{"extra": {"x": [' + b"0," * (n - 1) + b"0]}}"
    if kind == "short_strings":
        return b'{"junk": [' + b",".join(b'"%02x"' % (i % 256) for i in range(size // 5)) + b"]}"
    if kind == "distinct_keys":
        return b'{"junk": {' + b",".join(b'"k%d":0' % i for i in range(size // 10)) + b"}}"
    if kind == "short_float_arrays":  # just under the parse budget: parsed, then refused (unknown field)
        arrays = [b"[" + b",".join([b"1e-3"] * 100_000) + b"]"] * max(size // 500_000, 1)
        return b'{"junk": [' + b",".join(arrays) + b"]}"
    if kind == "tiny_lists":
        return b'{"junk": [' + b",".join(b"[0]" for _ in range(size // 4)) + b"]}"
    raise InputError(f"unknown shape {kind!r}; one of {', '.join(HOSTILE)}")
