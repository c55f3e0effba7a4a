"""Every time the README quotes comes from a committed benchmark (issue 49 item 4): each "N s" or "N min" in it is
listed here with the file and the number it quotes, and the number, rounded as the README writes it, is that file's.
A time added to the README without a source, or a benchmark rerun that moves a number, fails here."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
README = (ROOT / "README.md").read_text(encoding="utf-8")
TIME = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?:\s?[-–]\s?(\d+(?:\.\d+)?))?\s?(s|min|ms|h|seconds|minutes)\b")


def _json(name: str) -> dict:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def _prepared_s(model: str) -> float:
    return next(r["wall_s"] for r in _json("prepare_models.json")["runs"] if r["model"] == model)


def _token_s(model: str) -> float:
    rows = _json(f"generation_speed_{model}.json")["rows"]
    return min(r["step_s"] for r in rows if r["mode"] == "flashtrace generate")


def _qwen15_1000(field: str) -> float:
    cell = next(c for c in _json("speed_qwen15_1000.json")["cells"] if c["mode"] == "flashtrace" and c["threads"] == 2)
    return cell[field]


def _problems_s(model: str) -> float:
    return next(r["wall_s"] for r in _json("readme_problem.json")["summary"] if r["model"] == model)


def _authors_rounds_s(n: int) -> tuple[float, float]:
    row = next(r for r in _json("authors_speed.json")["rows"] if r["n"] == n)
    times = [one["ref"]["total_s"] for one in row["rounds"] if "ref" in one]
    return min(times), max(times)


def _long_trace_s() -> float:
    return next(c["total_s"] for c in _json("memory_long.json")["cells"]
                if c["n_tokens"] == 16384 and c["mode"] == "flashtrace")


# (the README's words around the time, in one line, and the committed number in the quote's unit)
SOURCES = [
    ("7.1 GB on disk, about 3 min once", lambda: _prepared_s("qwen2.5-coder-1.5b") / 60),
    ("real-model tests (0.5 GB, about 2 min once)", lambda: _prepared_s("qwen2.5-coder-0.5b") / 60),
    ("--model qwen2.5-coder-1.5b` (186 s)", lambda: _prepared_s("qwen2.5-coder-1.5b")),
    ("0.38 s per generated token", lambda: _token_s("qwen2.5-coder-1.5b")),
    ("with 2 hops 32 s (2 threads)", lambda: _qwen15_1000("total_s")),
    ("--model qwen2.5-coder-0.5b` (about 2 min)", lambda: _prepared_s("qwen2.5-coder-0.5b") / 60),
    ("| 0.16 s per token |", lambda: _token_s("qwen2.5-coder-0.5b")),
    ("| 0.07 s per token |", lambda: _token_s("smollm2-135m")),
    ("got 6 right (7.0 min in all)", lambda: _problems_s("qwen2.5-coder-1.5b") / 60),
    ("the 0.5B 5 (3.3 min", lambda: _problems_s("qwen2.5-coder-0.5b") / 60),
    ("one recording (29 s,", lambda: _qwen15_1000("record_s")),
    ("plus 3.2 s of attribution", lambda: _qwen15_1000("attribution_s")),
    ("Generation takes 0.385 s per token", lambda: _token_s("qwen2.5-coder-1.5b")),
    ("their time 15.5-16.9 s over the 3 rounds", lambda: _authors_rounds_s(2048)),
    ("16,384 tokens at 4.29 GiB (5.8 min on one", lambda: _long_trace_s() / 60),
]


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _quoted(context: str) -> tuple[tuple[str, ...], str]:
    """The numbers (one, or a range's two) and the unit the README writes in `context`."""
    found = TIME.search(context)
    assert found, f"no time in {context!r}"
    return tuple(n for n in found.group(1, 2) if n), found.group(3)


@pytest.mark.parametrize("context, committed", SOURCES, ids=[c for c, _ in SOURCES])
def test_each_quoted_time_is_the_committed_benchmarks_number(context, committed):
    assert _flat(README).count(context) == 1, f"the README no longer says {context!r} (once)"
    numbers, _unit = _quoted(context)
    values = committed()
    values = values if isinstance(values, tuple) else (values,)
    for written, value in zip(numbers, values, strict=True):
        decimals = len(written.partition(".")[2])
        assert abs(value - float(written)) <= 0.5 * 10 ** -decimals + 1e-9, (context, value)


def test_every_time_in_the_readme_has_a_source():
    flat = _flat(README)
    covered = [(at, at + len(c)) for c, _ in SOURCES for at in [flat.find(c)] if at >= 0]
    unsourced = [m.group(0) for m in TIME.finditer(flat)
                 if not any(lo <= m.start() and m.end() <= hi for lo, hi in covered)]
    assert unsourced == [], f"times in the README with no committed source listed here: {unsourced}"


def test_the_checker_finds_an_unsourced_time(monkeypatch):
    import sys

    monkeypatch.setattr(sys.modules[__name__], "README", README + "\nA trace takes 12 s here.\n")
    with pytest.raises(AssertionError, match="12 s"):
        test_every_time_in_the_readme_has_a_source()
