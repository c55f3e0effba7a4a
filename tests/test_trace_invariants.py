"""Issue 18 item 2 and issue 13 items 6 and 11: the loader enforces the trace's invariants and refuses, before
parsing, JSON that would take far more memory than its size."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import flashtrace
from flashtrace.store.gallery import gallery_dir
from flashtrace.analysis.schema import MAX_EXTRA_DEPTH, Trace, TraceValidationError

GALLERY = sorted(p for p in Path(gallery_dir()).glob("*.json") if p.name != "index.json")


@pytest.fixture(scope="module")
def doc():
    return json.loads(GALLERY[0].read_text())


def _refused(doc, match):
    with pytest.raises(TraceValidationError, match=match):
        Trace.from_json(json.dumps(doc))


def test_every_gallery_trace_loads_with_the_invariants():
    assert len(GALLERY) >= 5
    for path in GALLERY:  # written with 6 significant digits: the tolerance must accept that rounding
        trace = Trace.load(path)
        assert 1 <= len(trace.hops) <= trace.settings.hops + 1


def test_final_must_be_the_sum_of_the_contributions(doc):
    i = max(range(len(doc["scores"]["final"])), key=lambda j: doc["scores"]["final"][j])
    bad = json.loads(json.dumps(doc))
    bad["scores"]["final"][i] *= 1.01
    _refused(bad, rf"scores.final\[{i}\] .* contributions sum to")
    rounded = json.loads(json.dumps(doc))
    rounded["scores"]["final"] = [float(f"{v:.5g}") for v in rounded["scores"]["final"]]
    Trace.from_json(json.dumps(rounded))  # rounding noise is not an error


def test_prompt_scores_must_sum_to_one(doc):
    bad = json.loads(json.dumps(doc))
    bad["scores"]["prompt"] = [v * 0.9 for v in bad["scores"]["prompt"]]
    _refused(bad, "scores.prompt sums to 0.9")


def test_hop_records_must_agree_with_settings_hops(doc):
    """Issue 13.11: settings.hops was not checked against the hop records (Compare then raised IndexError)."""
    bad = json.loads(json.dumps(doc))
    bad["settings"]["hops"] = len(bad["hops"]) - 2
    _refused(bad, f"has {len(doc['hops'])} hop records but settings.hops is {len(doc['hops']) - 2}")
    none = json.loads(json.dumps(doc))
    none["hops"] = []
    _refused(none, "at least one hop record")


def test_token_offsets_and_target_are_ordered(doc):
    bad = json.loads(json.dumps(doc))
    tok = next(t for t in bad["tokens"] if t.get("start") is not None and t["end"] > t["start"])
    tok["start"], tok["end"] = tok["end"], tok["start"]
    _refused(bad, "starts at character .* after its end")
    inside = json.loads(json.dumps(doc))
    first = next(i for i, t in enumerate(doc["tokens"]) if t["role"] in ("reasoning", "answer"))
    inside["settings"]["target"] = [first - 3, first + 1]
    _refused(inside, "starts in the prompt")


def test_nested_extra_is_bounded_and_what_loads_saves_back(doc, tmp_path):
    """Issue 13.11: deeply nested `extra` loaded but could not be saved back."""
    deep = json.loads(json.dumps(doc))
    node = deep["extra"]
    for _ in range(MAX_EXTRA_DEPTH + 1):
        node["x"] = {}
        node = node["x"]
    _refused(deep, f"nested deeper than {MAX_EXTRA_DEPTH}")
    ok = json.loads(json.dumps(doc))
    node = ok["extra"]
    for _ in range(MAX_EXTRA_DEPTH - 2):
        node["x"] = {}
        node = node["x"]
    trace = Trace.from_json(json.dumps(ok))
    assert Trace.load(trace.save(tmp_path / "back.json")).extra == ok["extra"]


_CAPPED_LOAD = textwrap.dedent("""
    import resource, sys
    from flashtrace.analysis.schema import Trace, TraceValidationError
    size = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (size + 400 * 2**20, size + 400 * 2**20))  # 400 MB more than now
    try:
        Trace.load(sys.argv[1])
        print("loaded")
    except TraceValidationError as exc:
        print("refused", exc)
    except MemoryError:
        print("MemoryError")
""")


def test_a_file_of_nested_empty_lists_is_refused_before_parsing(doc, tmp_path):
    """Issue 13.6: 100 MB of nested empty lists in `extra` parsed to ~3 GB (here 30 MB under a 400 MB cap)."""
    text = json.dumps({**doc, "extra": {"pad": "PAD"}})
    path = tmp_path / "nested.json"
    path.write_text(text.replace('"PAD"', "[" + ",".join(["[[]]"] * 6_000_000) + "]"))
    assert path.stat().st_size > 30_000_000
    env = {**os.environ, "PYTHONPATH": str(Path(flashtrace.__file__).parents[1])}
    out = subprocess.run([sys.executable, "-c", _CAPPED_LOAD, str(path)], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    words = out.stdout.split()
    assert words[0] == "refused", out.stdout
    assert "JSON arrays/objects; a trace has at most" in out.stdout
