"""Mutation testing with mutmut 3 over the engine, analysis, storage and base floors, module by module.

    make mutation                                   # the modules whose source changed since the last run
    python benchmarks/mutation.py --modules flashtrace/store/library.py flashtrace/base/fileio.py
    python benchmarks/mutation.py --all             # every module again
    python benchmarks/mutation.py --survivors       # only the recorded survivors (after new tests)
    python benchmarks/mutation.py --report          # rewrite the JSON from mutmut's stored results only (a
                                                    # module without them in this checkout keeps its record)

Each module runs in its own folder, ``.mutation/<module>/`` (links to the checkout and a pyproject whose
``[tool.mutmut]`` section names that module and its fast tests, `MODULE_TESTS` in ``mutation_tests.py``; the
rest of the settings come from pyproject's ``[tool.mutmut]``): mutmut copies the package there, makes every
mutant of the module (a changed operator, number, string, argument, dropped call, ...), learns once which of
those tests run which function, and runs, per mutant, only those tests, stopping at the first failure. *Killed*: a test
failed; *survived*: every test passed; *timeout*: the tests ran far longer than without the mutant (counted
as caught: the change made the code hang); *no tests*: no selected test runs that function. Functions with
decorators (numba kernels, registered methods, properties, validators) are not mutated by mutmut. Viz, app
and CLI modules are not mutated (rendering and wiring, covered by their own tests).

Writes ``benchmarks/results/mutation.json``: per module its source hash, mutants, killed, survived, timeout,
no_tests, the seconds its run took (with the load average and workers it ran with), and each survivor with
its changed line and, where the survivor is judged equivalent (no behaviour a user could observe changes),
the reason, read from ``benchmarks/mutation_equivalent.json`` (mutant name -> one line). A module is run
again only when its source hash changed (``--all`` forces it). mutmut runs under ``nice -n 19`` (``--nice``).
Exit code 1 when a module is below 90 % caught or has a survivor without a reason.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # mutation_tests.py, beside this script
from mutation_tests import FAST, MODULE_TESTS  # noqa: E402 - found on the path just set

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / ".mutation"
RESULTS = ROOT / "benchmarks" / "results" / "mutation.json"
LINKED = ("flashtrace", "tests", "app.py", "pages", "tools", "examples", "docs", "README.md", "assets", "benchmarks",
          ".importlinter", "setup.py", ".streamlit", "MANIFEST.in", "constraints.txt", "Makefile")
REASONS = ROOT / "benchmarks" / "mutation_equivalent.json"
FLOORS = ("base", "engine", "analysis", "store")
TARGET = 0.90
NICE = 19  # --nice: mutmut's niceness (19 starves on a machine busy with others' work at 0)
CAUGHT = {"killed", "timeout"}


def floor_modules() -> list[str]:
    """Every module of the mutated floors (package files with code; ``__init__`` files re-export only)."""
    found = []
    for floor in FLOORS:
        for path in sorted((ROOT / "flashtrace" / floor).rglob("*.py")):
            if path.name != "__init__.py" and "__pycache__" not in path.parts:
                found.append(path.relative_to(ROOT).as_posix())
    return found


class _CodeOnly(ast.NodeTransformer):
    """A module's syntax tree without what mutmut never mutates: docstrings and type annotations."""

    @staticmethod
    def _undocumented(node):
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
        return node

    def visit_Module(self, node):
        self.generic_visit(node)
        node.body = [b for b in node.body if not (isinstance(b, ast.If) and "TYPE_CHECKING" in ast.dump(b.test))
                     and not (isinstance(b, ast.ImportFrom) and b.module == "typing")]
        return self._undocumented(node)

    def visit_ClassDef(self, node):
        self.generic_visit(node)
        return self._undocumented(node)

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        node.returns = None
        a = node.args
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, *(x for x in (a.vararg, a.kwarg) if x)]:
            arg.annotation = None
        return self._undocumented(node)

    visit_AsyncFunctionDef = visit_FunctionDef


def code_hash(source: str) -> str:
    """The hash of a module's code: its syntax tree without docstrings, type annotations, ``from typing import``
    and ``if TYPE_CHECKING:`` imports, none of which mutmut mutates; a change to them leaves the recorded run
    current."""
    return hashlib.sha256(ast.dump(_CodeOnly().visit(ast.parse(source))).encode()).hexdigest()[:16]


def source_hash(module: str) -> str:
    return code_hash((ROOT / module).read_text(encoding="utf-8"))


def rehash(results: dict) -> list[str]:
    """Move records made when the hash was of the file's bytes to `code_hash`: a module whose code at its recorded
    run (the version in git history with that byte hash) is the code it has now keeps its record, now keyed on
    the code hash. Returns the modules so kept."""
    kept = []
    for module, record in results["modules"].items():
        if not (ROOT / module).is_file() or record.get("source_hash") == source_hash(module):
            continue
        commits = subprocess.run(["git", "log", "--format=%H", "--", module], cwd=ROOT, capture_output=True,
                                 text=True).stdout.split()
        for commit in commits:
            old = subprocess.run(["git", "show", f"{commit}:{module}"], cwd=ROOT, capture_output=True).stdout
            if hashlib.sha256(old).hexdigest()[:16] == record.get("source_hash"):
                if code_hash(old.decode("utf-8")) == source_hash(module):
                    record["source_hash"] = source_hash(module)
                    kept.append(module)
                break
    return kept


def mutant_prefix(module: str) -> str:
    """mutmut names a mutant ``flashtrace.store.library.x_save__mutmut_3``: the module's dotted path first."""
    return module.removesuffix(".py").replace("/", ".") + "."


def folder(module: str) -> Path:
    return WORK / module.removesuffix(".py").replace("/", ".")


def prepare_folder(module: str) -> Path:
    """``.mutation/<module>/``: links to the checkout and a pyproject that mutates `module` only, with its tests."""
    work = folder(module)
    work.mkdir(parents=True, exist_ok=True)
    for name in LINKED:
        link = work / name
        if (ROOT / name).exists() and not link.is_symlink():
            link.symlink_to(ROOT / name)
    text = (ROOT / "pyproject.toml").read_text()
    head = text.partition("[tool.mutmut]")[0]
    settings = dict(tomllib.loads(text)["tool"]["mutmut"], only_mutate=[module])
    if module in MODULE_TESTS:
        settings["pytest_add_cli_args_test_selection"] = [*MODULE_TESTS[module], *FAST]
    body = "\n".join(f"{key} = {json.dumps(value)}" for key, value in settings.items())
    (work / "pyproject.toml").write_text(f"{head}[tool.mutmut]\n{body}\n")
    return work


def _mutmut(module: str, args: list[str], workers: int, nice: int = NICE) -> int:
    if args[0] == "run":
        args = ["run", "--max-children", str(workers), *args[1:]]
    cmd = ["nice", "-n", str(nice), sys.executable, str(ROOT / "benchmarks" / "mutmut_ordered.py"), *args]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the mutated copy, never the checkout
    env.update(PYTHONDONTWRITEBYTECODE="1", FLASHTRACE_MUTATION="1")  # tests/conftest.py: no hypothesis shrinking
    return subprocess.run(cmd, cwd=prepare_folder(module), env=env).returncode


def _meta(module: str) -> Path:
    return folder(module) / "mutants" / f"{module}.meta"


def _exit_codes(module: str) -> dict[str, int | None]:
    return json.loads(_meta(module).read_text())["exit_code_by_key"] if _meta(module).is_file() else {}


def _keep_verdicts(module: str, before: dict[str, int | None], rerun: set[str]) -> None:
    """After a survivors-only run: the other mutants keep their earlier verdict. mutmut forgets every verdict when
    the test selection changes (a new test file for the module); the killed stay killed with more tests."""
    data = json.loads(_meta(module).read_text())
    codes = data["exit_code_by_key"]
    for name, code in before.items():
        if name not in rerun and codes.get(name) is None and code is not None:
            codes[name] = code
    _meta(module).write_text(json.dumps(data))


def statuses(module: str) -> dict[str, str]:
    """``{mutant name: status}`` from mutmut's stored results for `module` (empty before its first run)."""
    from mutmut.stats import status_by_exit_code

    return {name: status_by_exit_code[code] for name, code in _exit_codes(module).items()}


def changed_line(module: str, name: str) -> str:
    """The mutant's first changed line, from mutmut's diff of the mutant (what ``mutmut show`` prints)."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    here = os.getcwd()
    os.chdir(folder(module))
    try:
        diff = get_diff_for_mutant(name, path=module)
    finally:
        os.chdir(here)
    plus = [line[1:].strip() for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    return plus[0][:160] if plus else ""


def _kept_verdicts(module: str, found: dict[str, str], previous: dict | None) -> dict | None:
    """After a survivors rerun in a checkout without the module's full run (a fresh clone: mutmut made every mutant
    but tried only the recorded survivors), the verdicts the rest keep: ``{"killed", "timeout", "rerun"}``, from
    the complete record of the same source (or kept by an earlier such rerun). The other mutants were caught then
    and are caught still (the same source, as many tests or more). None when mutmut's results here are a run of
    their own (a full or an interrupted one)."""
    if not previous or previous.get("source_hash") != source_hash(module) or len(found) != previous["mutants"]:
        return None
    base = previous.get("kept")
    if base is None and previous.get("checked", previous["mutants"]) == previous["mutants"]:
        base = {"killed": previous["killed"], "timeout": previous["timeout"],
                "rerun": [s["name"] for s in previous["survivors"]]}
    tried = {name for name, status in found.items() if status != "not checked"}
    if base is None or not tried or len(tried) == len(found) or not tried <= set(base["rerun"]):
        return None
    return base


def summarise(module: str, previous: dict | None, seconds: float | None, reasons: dict[str, str],
              rerun: bool = False) -> dict:
    found = statuses(module)
    counts = {s: sum(1 for v in found.values() if v == s) for s in ("killed", "survived", "timeout", "no tests")}
    counts["killed"] += sum(1 for v in found.values() if v == "segfault")  # its tests' process died: caught
    total = len(found)
    unchecked = sum(1 for v in found.values() if v == "not checked")  # an interrupted run: not tried yet
    kept = _kept_verdicts(module, found, previous)
    if kept:  # the rest of the module keeps its recorded verdicts
        counts["killed"] += kept["killed"]
        counts["timeout"] += kept["timeout"]
        unchecked -= kept["killed"] + kept["timeout"]
    known = {s["name"]: s for s in (previous or {}).get("survivors", [])}
    survivors = []
    for name in sorted(n for n, s in found.items() if s in ("survived", "no tests")):
        # read again where mutmut's mutants are here: a changed source gives a name another mutant
        line = changed_line(module, name) if _meta(module).is_file() else known.get(name, {}).get("line", "")
        survivors.append({"name": name, "status": found[name], "line": line, "equivalent": reasons.get(name)})
    checked = total - unchecked
    caught = counts["killed"] + counts["timeout"]
    other = checked - caught - counts["survived"] - counts["no tests"]
    record = {"module": module, "source_hash": source_hash(module), "tests": MODULE_TESTS.get(module, "all"),
              "mutants": total, "checked": checked, "killed": counts["killed"],
              "survived": counts["survived"], "timeout": counts["timeout"], "no_tests": counts["no tests"],
              "other": other, "caught_share": round(caught / checked, 4) if checked else None, "survivors": survivors}
    if kept:
        record["kept"] = kept
    if not total:
        record["note"] = "no mutant: mutmut mutates function bodies, and this module has no undecorated function"
    how_it_ran = ("seconds", "load", "survivors_rerun_seconds", "when", "workers", "nice")  # --report keeps them
    if previous:
        record.update({k: previous[k] for k in how_it_ran if k in previous})
    if seconds is not None:
        key = "survivors_rerun_seconds" if rerun else "seconds"
        record.update({key: round(seconds), "load": round(os.getloadavg()[0], 1)})
    return record


def problems(record: dict) -> list[str]:
    out = []
    if record.get("checked", record["mutants"]) < record["mutants"]:
        out.append(f"{record['module']}: incomplete, {record['mutants'] - record['checked']} of {record['mutants']} "
                   "mutants not tried yet (run it again to go on)")
    if record["caught_share"] is not None and record["caught_share"] < TARGET:
        out.append(f"{record['module']}: {100 * record['caught_share']:.1f} % caught (< {100 * TARGET:.0f} %)")
    unexplained = [s["name"] for s in record["survivors"] if not s["equivalent"]]
    if unexplained:
        out.append(f"{record['module']}: {len(unexplained)} survivors without an equivalence reason")
    return out


def report(module: str, previous: dict | None, reasons: dict[str, str]) -> dict:
    """`--report`: the record from mutmut's stored results; in a checkout without them for `module` (a fresh
    clone: `.mutation/` is not kept), the recorded one with today's reasons, never an empty record."""
    if previous is not None and not _meta(module).is_file():
        return dict(previous, survivors=[dict(s, equivalent=reasons.get(s["name"])) for s in previous["survivors"]])
    return summarise(module, previous, None, reasons)


def load_results() -> dict:
    data = json.loads(RESULTS.read_text()) if RESULTS.is_file() else None
    return data if isinstance(data, dict) and data.get("tool") == "mutmut" else {"tool": "mutmut", "modules": {}}


def save_results(results: dict) -> None:
    modules = results["modules"]
    done = [m for m in modules.values() if m.get("mutants")]
    results["total"] = {k: sum(m[k] for m in done) for k in ("mutants", "killed", "survived", "timeout", "no_tests")}
    results["not_run"] = [m for m in floor_modules() if m not in modules]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")


def to_run(args: argparse.Namespace, results: dict) -> list[str]:
    if args.modules:
        return args.modules
    if args.all:
        return floor_modules()
    recorded = results["modules"]
    return [m for m in floor_modules() if recorded.get(m, {}).get("source_hash") != source_hash(m)]


def run_module(module: str, results: dict, reasons: dict, workers: int, survivors_only: bool,
               nice: int = NICE) -> dict:
    previous = results["modules"].get(module)
    # an interrupted run of this checkout goes on (a fresh checkout has no mutmut results: it starts over, and
    # the recorded part's seconds are not added)
    resume = (not survivors_only and previous is not None and previous.get("source_hash") == source_hash(module)
              and previous.get("checked", 0) < previous["mutants"] and _meta(module).is_file())
    if survivors_only:
        names = [s["name"] for s in (previous or {}).get("survivors", [])]
    else:  # no names: mutmut tries only the mutants without a result yet (an interrupted run goes on)
        names = [] if resume else [mutant_prefix(module) + "*"]
    start = time.perf_counter()
    before = _exit_codes(module) if survivors_only else {}
    if names or resume:
        code = _mutmut(module, ["run", *names], workers, nice)
        if code and not any(v != "not checked" for v in statuses(module).values()):
            print(f"{module}: mutmut stopped before trying a mutant (exit {code}); a test that fails in the mutated "
                  "copy stops its stats run (\"failed to collect stats\" above): run that test in "
                  f"{folder(module).relative_to(ROOT)}/mutants to see why", file=sys.stderr)
    if before:
        _keep_verdicts(module, before, set(names))
    seconds = time.perf_counter() - start if names or resume else None
    if resume and seconds is not None:
        seconds += previous.get("seconds", 0)  # the interrupted part's time counts too
    record = summarise(module, previous, seconds, reasons, survivors_only)
    if not survivors_only:
        record.update(workers=workers, nice=nice)
    return record


def table(records: list[dict]) -> str:
    rows = [f"{'module':48} {'mutants':>7} {'tried':>5} {'killed':>6} {'surv':>5} {'t/o':>4} {'none':>5} {'caught':>7} "
            f"{'s':>6}"]
    for r in records:
        share = f"{100 * r['caught_share']:.1f}%" if r["caught_share"] is not None else "-"
        tried = r.get("checked", r["mutants"])  # records written before "checked" existed: complete runs
        rows.append(f"{r['module']:48} {r['mutants']:7d} {tried:5d} {r['killed']:6d} {r['survived']:5d} {r['timeout']:4d} "
                    f"{r['no_tests']:5d} {share:>7} {r.get('seconds', '-'):>6}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modules", nargs="+", help="module files to run (default: those whose source changed)")
    parser.add_argument("--all", action="store_true", help="run every module of the mutated floors again")
    parser.add_argument("--survivors", action="store_true", help="rerun only each module's recorded survivors")
    parser.add_argument("--report", action="store_true",
                        help="only rewrite the JSON from mutmut's stored results (a module without them here keeps "
                             "its record, with today's reasons)")
    parser.add_argument("--workers", type=int, default=1, help="mutants tested at once (default 1: a shared machine)")
    parser.add_argument("--nice", type=int, default=NICE, help="niceness mutmut runs at (default 19)")
    parser.add_argument("--rehash", action="store_true",
                        help="only re-key records made with the old byte hash on the code hash where the code is "
                             "unchanged since (a docstring or annotation edit), and list what is still stale")
    args = parser.parse_args(argv)
    results = load_results()
    if args.rehash:
        kept = rehash(results)
        save_results(results)
        stale = to_run(argparse.Namespace(modules=None, all=False), results)
        print(f"{len(kept)} records re-keyed (code unchanged); {len(stale)} modules to run again: {' '.join(stale)}")
        return 0
    reasons = json.loads(REASONS.read_text()) if REASONS.is_file() else {}
    if args.report or args.survivors:
        modules = args.modules or list(results["modules"])
    else:
        modules = to_run(args, results)
    results.update(workers=args.workers, cpus=os.cpu_count())
    records = []
    for module in modules:
        if args.report:
            record = report(module, results["modules"].get(module), reasons)
        else:
            record = run_module(module, results, reasons, args.workers, args.survivors, args.nice)
        records.append(record)
        results = load_results()  # as written now: another run may have finished a module meanwhile
        results["modules"][module] = record
        results.update(workers=args.workers, cpus=os.cpu_count())
        save_results(results)  # after every module: an interrupted run keeps what it finished
    print(table(records) if records else "every module is up to date (--all to run them again)")
    found = [p for r in results["modules"].values() for p in problems(r)]
    print("\n".join(found))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
