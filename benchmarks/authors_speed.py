"""Speed and peak memory side by side with the authors' package (`flashtrace==0.1.1` from PyPI).

    .venv/bin/python benchmarks/authors_speed.py                    # N = 2,048 and 4,096, 2 threads
    .venv/bin/python benchmarks/authors_speed.py --n 64 --prompt 32 --name authors_speed_smoke --out /tmp/as

SmolLM2-135M, CPU fp32, a prompt of 512 tokens + a response (random single-token words, so both sides
see exactly the same token ids; the authors' package appends EOS to the response, counted in N), target =
the last 8 tokens before that EOS, K = 1, same threads, each side in its own process:

- authors': `FlashTrace(model, tok).trace(prompt=..., target=..., output_span=last 8, hops=1)` on an eager
  fp32 model (what the package supports), in the virtualenv that benchmarks/parity_reference.py builds
  (`.parity-venv/`, ignored by git), started with its working directory outside the repository so
  `import flashtrace` there is the authors' package. Total = the trace call; its capture forward
  (`_capture_model_state`, timed by wrapping the method, code untouched) is separated from the rest.
- ours: `record_forward` + `recursive_hops` over `span_aggregate` with hop 0 over the 8 target tokens
  (our default for that target); hop 0 over the whole generation (what 0.1.1 always does, our
  ``hop0="generation"``) is timed too, in the same process after the first.

Each N runs `--repeats` rounds (default 3), each side in a new process per round, the order alternating;
the table shows each side's median-time run and the range of the per-round ratios (the authors' time
alone varied 16-24 s at N = 2,048 between runs on this VM).

Peak memory = the process's VmHWM, model included; "above loaded" subtracts the resident set right after
the model is loaded. The authors' side grows ~N² (measured ~2.8 GB at N = 1,024, 6.7 GB at 2,048, 21.5 GB
at 4,096), so before it starts the script predicts its peak and skips it (with a message in the table) when
that leaves less than `--headroom-gib` (default 1) of the memory available; while it runs, the child is killed if available memory falls
under 0.5 GiB. Writes benchmarks/results/<name>.{json,md} (default authors_speed).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from parity_cases import REFERENCE, ROOT, VENV, build_venv  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
# authors' peak ≈ a + b·N² bytes, fitted to the measurements above (N = 2,048 and 4,096)
REF_PEAK_A, REF_PEAK_B = 1.8e9, 1180.0
KILL_BELOW = 512 * 2**20


def predicted_ref_peak(n: int) -> float:
    return REF_PEAK_A + REF_PEAK_B * n * n


def mem_available() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def _status_bytes(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def make_text(tokenizer, n_prompt: int, n_response: int, seed: int = 0) -> tuple[str, str]:
    """A prompt of `n_prompt` tokens and a response of `n_response` − 1 tokens (+ EOS = n_response): random
    words that are one token each with their leading space, so the text tokenises back to that length."""
    vocab = tokenizer.get_vocab()
    words = sorted(t[1:] for t, i in vocab.items() if t.startswith("Ġ") and t[1:].isascii() and t[1:].isalpha()
                   and len(t) > 3 and 200 < i < 30000)
    rng = random.Random(seed)
    pick = lambda k: "".join(" " + rng.choice(words) for _ in range(k))  # noqa: E731
    return pick(n_prompt), pick(n_response - 1)


# ----------------------------------------------------------------------------------------------------
# the authors' side: runs in the reference virtualenv, imports only its package, torch and transformers
# ----------------------------------------------------------------------------------------------------
def ref_worker(spec: dict) -> dict:
    import torch
    import flashtrace as ref
    from flashtrace.improved import LLMIFRAttributionBoth
    from transformers import AutoModelForCausalLM, AutoTokenizer

    assert hasattr(ref, "FlashTrace") and "site-packages" in ref.__file__, ref.__file__  # the authors' package
    torch.set_num_threads(spec["threads"])
    tok = AutoTokenizer.from_pretrained(spec["model_path"])
    model = AutoModelForCausalLM.from_pretrained(spec["model_path"], dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    loaded = _status_bytes("VmRSS")
    capture = []
    original = LLMIFRAttributionBoth._capture_model_state

    def timed_capture(self, *args, **kwargs):
        start = time.perf_counter()
        out = original(self, *args, **kwargs)
        capture.append(time.perf_counter() - start)
        return out

    LLMIFRAttributionBoth._capture_model_state = timed_capture
    gen_len = tok(spec["response"] + (tok.eos_token or ""), return_tensors="pt", add_special_tokens=False).input_ids.shape[1]
    prompt_len = tok(spec["prompt"], return_tensors="pt", add_special_tokens=False).input_ids.shape[1]
    tracer = ref.FlashTrace(model, tok)
    start = time.perf_counter()
    span = (gen_len - 1 - spec["target"], gen_len - 2)  # its spans index the generation without the EOS
    tracer.trace(prompt=spec["prompt"], target=spec["response"], output_span=span, hops=1)
    total = time.perf_counter() - start
    return {"n_tokens": prompt_len + gen_len, "total_s": total, "capture_s": sum(capture),
            "attribution_s": total - sum(capture), "threads": torch.get_num_threads(),
            "rss_loaded_bytes": loaded, "peak_bytes": _status_bytes("VmHWM")}


# ----------------------------------------------------------------------------------------------------
# our side: the project's environment
# ----------------------------------------------------------------------------------------------------
def ours_worker(spec: dict) -> dict:
    import torch

    from flashtrace.engine.attribution import recursive_hops, span_aggregate
    from flashtrace.engine.models import load_model, record_forward

    torch.set_num_threads(spec["threads"])
    loaded = load_model(spec["model_path"], dtype="float32")
    rss_loaded = _status_bytes("VmRSS")
    tok = loaded.tokenizer
    prompt_ids = tok(spec["prompt"], add_special_tokens=False).input_ids
    gen_ids = tok(spec["response"] + (tok.eos_token or ""), add_special_tokens=False).input_ids
    ids = torch.tensor(prompt_ids + gen_ids)
    n, n_prompt = len(ids), len(prompt_ids)
    start = time.perf_counter()
    rec = record_forward(loaded, ids)
    record_s = time.perf_counter() - start
    generated = torch.zeros(n, dtype=torch.bool)
    generated[n_prompt:n - 1] = True  # as the authors' package: the generation without the appended EOS
    out = {"n_tokens": n, "record_s": record_s, "threads": torch.get_num_threads(), "rss_loaded_bytes": rss_loaded}
    for name, first in (("target", n - 1 - spec["target"]), ("generation", n_prompt)):
        weights = torch.zeros(n)
        weights[first:n - 1] = 1.0
        start = time.perf_counter()
        recursive_hops(lambda w: span_aggregate(rec, w).scores, weights, generated, ~generated, hops=1)
        out[f"attribution_{name}_s"] = time.perf_counter() - start
        if name == "target":
            out["peak_after_target_bytes"] = _status_bytes("VmHWM")
    out["attribution_s"] = out["attribution_target_s"]
    out["total_s"] = record_s + out["attribution_s"]
    out["peak_bytes"] = _status_bytes("VmHWM")
    return out


# ----------------------------------------------------------------------------------------------------
# orchestration (project environment)
# ----------------------------------------------------------------------------------------------------
def _run_side(cmd: list[str], cwd: Path, env: dict, out: Path, timeout: float) -> dict:
    """Run one side in its own process; kill it (by its pid) if available memory falls under KILL_BELOW."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = threading.Event()

    def watch():
        while proc.poll() is None:
            if mem_available() < KILL_BELOW:
                killed.set()
                proc.kill()
                return
            time.sleep(0.25)

    threading.Thread(target=watch, daemon=True).start()
    try:
        _, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return {"error": f"timed out after {timeout:.0f} s"}
    if killed.is_set():
        return {"error": f"killed: available memory fell under {KILL_BELOW / 2**30:.1f} GiB"}
    if proc.returncode != 0:
        return {"error": (stderr.strip().splitlines() or ["failed"])[-1][:300]}
    return json.loads(out.read_text())


def run_n(n: int, args, python: Path | None, model_path: str, tmp: Path) -> dict:
    from transformers import AutoTokenizer

    prompt, response = make_text(AutoTokenizer.from_pretrained(model_path), args.prompt, n - args.prompt)
    spec = dict(model_path=model_path, prompt=prompt, response=response, target=args.target, threads=args.threads)
    spec_path = tmp / f"n{n}.spec.json"
    spec_path.write_text(json.dumps(spec))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(OMP_NUM_THREADS=str(args.threads), PYTHONWARNINGS="ignore", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    row = {"n": n, "prompt": args.prompt}
    rounds = []
    for i in range(args.repeats):  # alternate which side goes first: a drifting machine favours neither
        rounds.append(_round(n, args, python, spec_path, env, tmp, ("ref", "ours") if i % 2 == 0 else ("ours", "ref")))
    for side in ("ref", "ours"):
        row[side] = _median_run([r[side] for r in rounds])
    if args.repeats > 1:
        row["rounds"] = rounds
    return row


def _median_run(runs: list[dict]) -> dict:
    """The run with the median total time (lower median), with every run's total and peak attached."""
    done = sorted((r for r in runs if "total_s" in r), key=lambda r: r["total_s"])
    if not done:
        return runs[0]
    return {**done[(len(done) - 1) // 2], "total_runs": [r.get("total_s") for r in runs],
            "peak_runs": [r.get("peak_bytes") for r in runs]}


def _round(n: int, args, python: Path | None, spec_path: Path, env: dict, tmp: Path, order) -> dict:
    from flashtrace.run.bench.sweep import busy_threshold, load_warning, wait_for_quiet

    row = {}
    script = str(Path(__file__).resolve())
    cpus = os.cpu_count() or 1
    for side in order:
        wait_for_quiet(busy_threshold(cpus, args.threads), args.settle)
        before = os.getloadavg()
        warning = load_warning(before[0], cpus, args.threads, f"{side} N={n}")
        if warning:
            print(warning, file=sys.stderr, flush=True)
        out = tmp / f"n{n}.{side}.json"
        if side == "ref":
            need, free = predicted_ref_peak(n), mem_available()
            if python is None:
                result = {"skipped": f"no virtualenv with {REFERENCE} (build it with benchmarks/parity_reference.py)"}
            elif need > free - args.headroom_gib * 2**30:
                result = {"skipped": f"predicted peak {need / 2**30:.1f} GiB, {free / 2**30:.1f} GiB available "
                                     f"(headroom {args.headroom_gib:g} GiB): not run"}
            else:
                result = _run_side([str(python), script, "--worker", "ref", "--spec", str(spec_path)],
                                   tmp, env, out, args.timeout)  # cwd outside the repository
                result["predicted_peak_bytes"] = need
        else:
            result = _run_side([sys.executable, script, "--worker", "ours", "--spec", str(spec_path)],
                               ROOT, dict(env, PYTHONPATH=str(ROOT)), out, args.timeout)
        result.update(load_before=[round(x, 2) for x in before], load_after=[round(x, 2) for x in os.getloadavg()],
                      load_busy=warning is not None)
        row[side] = result
        print(f"N={n} {side}: {_brief(result)}", flush=True)
    return row


def _round_ratios(row: dict, key: str) -> list[float]:
    return [r["ours"][key] / r["ref"][key] for r in row.get("rounds", [])
            if key in r["ours"] and key in r["ref"]]


def _ratio(row: dict, key: str) -> str:
    """Ours / theirs for `key`: one round's ratio, or the median of the rounds' ratios with their range."""
    ratios = sorted(_round_ratios(row, key))
    if len(ratios) < 2:
        return f"**{row['ours'][key] / row['ref'][key]:.2f}×**"
    return f"**{statistics.median(ratios):.2f}×** ({ratios[0]:.2f}–{ratios[-1]:.2f} over {len(ratios)} rounds)"


def _brief(r: dict) -> str:
    if "skipped" in r or "error" in r:
        return r.get("skipped") or r["error"]
    return f"{r['total_s']:.2f} s, peak {r['peak_bytes'] / 2**30:.2f} GiB"


def _above(r: dict) -> int:
    return r["peak_bytes"] - r["rss_loaded_bytes"]


def _gib(b: float) -> str:
    return f"{b / 2**30:.2f}"


def markdown(rows: list[dict], meta: dict) -> str:
    lines = [f"Authors' `{REFERENCE}` (PyPI, own virtualenv, eager attention) vs this repository; SmolLM2-135M, CPU "
             f"fp32, {meta['threads']} torch thread(s) per process, {meta['cpus']} CPUs; prompt {meta['prompt']} "
             f"tokens + response (EOS included), target = the last {meta['target']} tokens before the EOS, K = 1; each side in its own "
             f"process. 1-minute load average before the processes: {meta['load_min']:.2f}–{meta['load_max']:.2f} "
             f"({meta['busy']} of {meta['n_runs']} started above the idle rule 0.5 × max(1, CPUs − threads + 1)).",
             "", "| N | authors' s (capture forward + rest) | ours s (record + attribution) | ours, hop 0 over the "
             "generation: attribution s | **time ours / theirs** | peak GiB theirs / ours | above loaded GiB theirs "
             "/ ours | **peak ours / theirs**: total, above loaded | load before theirs / ours |",
             "|---:|---:|---:|---:|---:|---|---|---:|---|"]
    for r in rows:
        ref, ours = r["ref"], r["ours"]
        ok_ref, ok_ours = "total_s" in ref, "total_s" in ours
        theirs = (f"{ref['total_s']:.2f} ({ref['capture_s']:.2f} + {ref['attribution_s']:.2f})" if ok_ref
                  else ref.get("skipped") or ref.get("error", "–"))
        mine = (f"{ours['total_s']:.2f} ({ours['record_s']:.2f} + {ours['attribution_s']:.2f})" if ok_ours
                else ours.get("error", "–"))
        both = ok_ref and ok_ours
        lines.append("| " + " | ".join([
            f"{r['n']:,}", theirs, mine, f"{ours['attribution_generation_s']:.2f}" if ok_ours else "–",
            _ratio(r, "total_s") if both else "–",
            f"{_gib(ref['peak_bytes']) if ok_ref else '–'} / {_gib(ours['peak_bytes']) if ok_ours else '–'}",
            f"{_gib(ref['peak_bytes'] - ref['rss_loaded_bytes']) if ok_ref else '–'} / "
            f"{_gib(ours['peak_bytes'] - ours['rss_loaded_bytes']) if ok_ours else '–'}",
            (f"{_ratio(r, 'peak_bytes')}, "
             f"{_above(ours) / _above(ref):.2f}×" if both and _above(ref) > 0 else "–"),
            f"{ref['load_before'][0]:.2f} / {ours['load_before'][0]:.2f}"]) + " |")
    lines += ["", "Time: wall seconds of the whole attribution on each side after the model is loaded (theirs: the "
              "`trace` call, including its own capture forward; ours: recording forward + hops, hop 0 over the "
              "target). The hop-0-over-the-generation column is ours doing the same work as 0.1.1 (which always "
              "aggregates hop 0 over the whole generation). Peak: the process's VmHWM, model included; above "
              "loaded: minus the resident set right after loading the model. Ours runs both attributions in one "
              "process, so its peak covers both; its first attribution includes any one-time warm-up (JIT), as a "
              "user's first call does. With several rounds (`--repeats`), each side runs once per round in a new "
              "process, the order alternating; a side's columns show its median-time run, the bold ratios are "
              "the median of the per-round ratios (ours / theirs in the same round), their range in brackets. "
              "Acceptance: time ≤ 0.2× and peak ≤ 0.15× theirs."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", choices=["ref", "ours"])
    parser.add_argument("--spec", type=Path)
    parser.add_argument("--n", default="2048,4096", help="comma-separated total lengths N (prompt + response)")
    parser.add_argument("--prompt", type=int, default=512)
    parser.add_argument("--target", type=int, default=8, help="target = the last this many tokens")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3,
                        help="rounds per N, each side in a new process per round (order alternating); median reported")
    parser.add_argument("--settle", type=float, default=90.0, help="seconds to wait at most for a quiet machine")
    parser.add_argument("--headroom-gib", type=float, default=1.0,
                        help="run the authors' side only if its predicted peak leaves this much memory free")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds before a side is abandoned")
    parser.add_argument("--model-path", default=None, help="model folder (default: the SmolLM2-135M checkpoint)")
    parser.add_argument("--venv", type=Path, default=VENV, help="the reference's virtualenv (built if missing)")
    parser.add_argument("--no-build", action="store_true", help="never build the virtualenv; skip the authors' side")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--name", default="authors_speed")
    args = parser.parse_args(argv)
    if args.worker:
        worker = ref_worker if args.worker == "ref" else ours_worker
        result = worker(json.loads(args.spec.read_text()))
        (args.spec.parent / f"{args.spec.name.split('.')[0]}.{args.worker}.json").write_text(json.dumps(result))
        return 0
    sys.path.insert(0, str(ROOT))
    from flashtrace.run.bench.sweep import BUSY_RULE, machine

    if args.model_path is None:
        from flashtrace.engine.models.default_model import ensure_default_model

        args.model_path = str(ensure_default_model())
    python = args.venv / "bin" / "python"
    python = python if python.exists() else (None if args.no_build else build_venv(args.venv))
    rows = []
    with tempfile.TemporaryDirectory(prefix="authors-speed-") as tmp:  # the authors' cwd: outside the repository
        for n in [int(x) for x in args.n.split(",") if x.strip()]:
            rows.append(run_n(n, args, python, args.model_path, Path(tmp)))
    runs = [rd[s] for r in rows for rd in r.get("rounds", [r]) for s in ("ref", "ours") if "load_before" in rd[s]]
    meta = {"reference": REFERENCE, "threads": args.threads, "prompt": args.prompt, "target": args.target, **machine(),
            "load_min": min(r["load_before"][0] for r in runs), "load_max": max(r["load_before"][0] for r in runs),
            "busy": sum(r["load_busy"] for r in runs), "n_runs": len(runs), "busy_rule": BUSY_RULE,
            "venv": str(args.venv), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "command": "benchmarks/authors_speed.py " + " ".join(sys.argv[1:] if argv is None else argv)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    text = markdown(rows, meta)
    (args.out / f"{args.name}.md").write_text(text)
    print(text)
    return 1 if any("error" in r[s] for r in rows for s in ("ref", "ours")) else 0


if __name__ == "__main__":
    sys.exit(main())
