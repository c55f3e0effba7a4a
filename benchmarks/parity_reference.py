"""Agreement with the authors' implementation (`flashtrace==0.1.1` from PyPI), side by side.

    .venv/bin/python benchmarks/parity_reference.py            # builds .parity-venv/ once, then runs
    .venv/bin/python benchmarks/parity_reference.py --quick    # two short cases, for a smoke check

The reference runs in its own virtualenv (`.parity-venv/`, ignored by git: the authors' package plus the
same torch and transformers as ours), in its own processes, with the working directory outside the
repository, so `import flashtrace` there is the authors' package, never this one. Each side runs one
process per input group (model, prompt, response, chat template) and K = 0, 1, 2 inside it.

Settings are aligned as the reference fixes them: hop 0 over the whole generation (our ``hop0="generation"``),
stop tokens ``,`` ``.`` and whitespace (our ``paper`` preset), eager attention and fp32 on their side. Two
quirks are aligned explicitly: (1) the reference reads the RMSNorm epsilon from an attribute ``eps`` that
transformers' RMSNorm does not have, so it falls back to 1e-6 where SmolLM2 uses 1e-5; in its process we
set ``module.eps = module.variance_epsilon`` on every RMSNorm (its code is untouched). (2) It never zeroes
chat-template tokens, while our presets test every token; the aligned run of ours therefore takes the
reference's own stop mask on the prompt side (the mask it reports) through our engine
(`recursive_hops` over the registered flashtrace aggregator, exactly what `attribute` calls). Our public
API (`attribute(..., stop_tokens="paper", hop0="generation")`) is reported too.

Writes benchmarks/results/parity_reference.json and .md. Timings are indicative only (shared machine).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from parity_cases import REFERENCE, ROOT, VENV, build_venv, groups  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
# The reference's chat-template wrapper (shared_utils.DEFAULT_PROMPT_TEMPLATE with context=" " + prompt,
# query=""), reproduced as data so both sides see the same token ids.
REF_WRAP = "Context: {prompt}\n\n\nQuery: "


# ----------------------------------------------------------------------------------------------------
# the reference side: runs in .parity-venv, imports only the authors' package, torch and transformers
# ----------------------------------------------------------------------------------------------------
def ref_worker(spec: dict) -> dict:
    import torch
    import flashtrace as ref
    from flashtrace.improved import LLMIFRAttributionBoth
    from transformers import AutoModelForCausalLM, AutoTokenizer

    assert hasattr(ref, "FlashTrace") and "site-packages" in ref.__file__, ref.__file__  # the authors' package
    torch.set_num_threads(1)
    tok = AutoTokenizer.from_pretrained(spec["model_path"])
    model = AutoModelForCausalLM.from_pretrained(spec["model_path"], dtype=torch.float32,
                                                 attn_implementation=spec.get("attn", "eager")).eval()
    if spec["align_eps"]:
        for module in model.modules():
            if type(module).__name__.endswith("RMSNorm") and hasattr(module, "variance_epsilon"):
                module.eps = float(module.variance_epsilon)
    rss_loaded = _rss_mb()
    out = {"runs": {}, "rss_loaded_mb": rss_loaded}
    tracer = ref.FlashTrace(model, tok, use_chat_template=spec["chat_template"])
    for k in spec["hops"]:
        start = time.perf_counter()
        try:
            result = tracer.trace(prompt=spec["prompt"], target=spec["response"], hops=k)
        except Exception as exc:  # noqa: BLE001 - reported (e.g. the SDPA crash)
            out["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
            return out
        seconds = time.perf_counter() - start
        raw = result.metadata["ifr"]["raw"]
        out["runs"][str(k)] = {
            "seconds": seconds,
            "hops_raw": [a.token_importance_total.float().tolist() for a in raw.raw_attributions],
            "rho": [float(r) for r in raw.thinking_ratios],
            "final": raw.observation["sum"].float().tolist(),  # over all positions
            "obs_mask": raw.observation["mask"].float().tolist(),  # observed * kept (stop tokens 0)
        }
    engine = LLMIFRAttributionBoth(model, tok, use_chat_template=spec["chat_template"])
    engine.target_response(spec["prompt"], spec["response"])  # tokenisation and index bookkeeping only
    out.update(ids=engine.prompt_ids[0].tolist() + engine.generation_ids[0].tolist(),
               prompt_len=int(engine.prompt_ids.shape[1]), user_prompt_indices=list(engine.user_prompt_indices),
               user_prompt_ids=engine.user_prompt_ids[0].tolist(), rss_peak_mb=_rss_mb(peak=True))
    return out


def _rss_mb(peak: bool = False) -> float:
    if peak:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


# ----------------------------------------------------------------------------------------------------
# our side: runs in the project's environment
# ----------------------------------------------------------------------------------------------------
def ours_worker(spec: dict, ref: dict) -> dict:
    import torch

    from flashtrace.engine.attribution import get_method, recursive_hops
    from flashtrace.engine.models import load_model
    from flashtrace.run.tracing import attribute, method_source, prepare, stop_mask

    torch.set_num_threads(1)
    loaded = load_model(spec["model_path"], dtype="float32")
    rss_loaded = _rss_mb()
    prompt = REF_WRAP.format(prompt=spec["prompt"]) if spec["chat_template"] else spec["prompt"]
    start = time.perf_counter()
    prepared = prepare(loaded, prompt, spec["response"], chat_template=spec["chat_template"], check_memory=False)
    forward_s = time.perf_counter() - start
    seq = prepared.sequence
    n = len(seq)
    out = {"ids": seq.ids, "forward_s": forward_s, "rss_loaded_mb": rss_loaded, "runs": {}}
    ref_ids = ref.get("ids", [])
    out["ids_match"] = ref_ids[:n] == seq.ids and len(ref_ids) == n + 1  # + the EOS the reference appends
    roles = [t.role for t in seq.tokens]
    response = torch.tensor([r in ("reasoning", "answer") for r in roles])
    observed = torch.tensor([r in ("template", "prompt") for r in roles])
    paper = stop_mask(seq, "paper")
    if out["ids_match"]:
        ref_mask = torch.tensor(ref["runs"][str(spec["hops"][0])]["obs_mask"][:n]) == 0  # prompt side: its stops
        aligned = torch.where(observed, ref_mask, paper)  # generated side: the same rule on the same tokens
        out["mask_differs_at"] = [(i, seq.tokens[i].text, roles[i]) for i in range(n) if bool(aligned[i]) != bool(paper[i])]
    method = get_method("flashtrace")
    for k in spec["hops"]:
        start = time.perf_counter()
        public = attribute(prepared, target="answer", hops=k, stop_tokens=spec.get("stop_tokens", "paper"),
                           hop0="generation")
        seconds = time.perf_counter() - start
        run = {"seconds": seconds, "public": {"hops_raw": [h.raw for h in public.hops],
                                              "rho": [h.rho for h in public.hops], "final": public.scores.final}}
        if out["ids_match"]:
            aggregate = method.build(method_source(prepared), lambda _: None, **method.resolve_options({}))
            hops, final = recursive_hops(aggregate, response.float(), response, observed, hops=k, stop_mask=aligned)
            run["aligned"] = {"hops_raw": [h.raw.tolist() for h in hops], "rho": [h.rho for h in hops],
                              "final": final.tolist()}
        out["runs"][str(k)] = run
    out["rss_peak_mb"] = _rss_mb(peak=True)
    return out


# ----------------------------------------------------------------------------------------------------
# comparison
# ----------------------------------------------------------------------------------------------------
def pearson(a: list[float], b: list[float]) -> float:
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    da, db = [x - ma for x in a], [y - mb for y in b]
    num = sum(x * y for x, y in zip(da, db))
    den = (sum(x * x for x in da) * sum(y * y for y in db)) ** 0.5
    return num / den if den > 0 else None  # a constant vector (e.g. no score reaches the prompt)


def _shares(values: list[float], positions: list[int]) -> list[float]:
    total = sum(values[i] for i in positions)
    return [values[i] / total if total > 0 else 0.0 for i in positions]


def compare(ref_run: dict, ours: dict, n: int, n_prompt: int, user: list[int]) -> dict:
    """Per hop: Pearson and max |diff| of the raw vectors over all positions (the reference's extra EOS
    position dropped), |Δρ|; final: the same over the prompt-side positions; `user`: the final scores on
    the user's prompt tokens as shares (sum 1 on each side), what a viewer shows."""
    hops = []
    for k, (a, b) in enumerate(zip(ref_run["hops_raw"], ours["hops_raw"])):
        a = a[:n]
        hops.append({"k": k, "pearson": pearson(a, b), "max_abs": max(abs(x - y) for x, y in zip(a, b)),
                     "rho_diff": abs(ref_run["rho"][k] - ours["rho"][k])})
    fa, fb = ref_run["final"][:n_prompt], ours["final"][:n_prompt]
    final = {"pearson": pearson(fa, fb), "max_abs": max(abs(x - y) for x, y in zip(fa, fb))}
    ua, ub = _shares(ref_run["final"], user), _shares(ours["final"], user)
    final["user_pearson"] = pearson(ua, ub)
    final["user_max_abs"] = max(abs(x - y) for x, y in zip(ua, ub))
    return {"hops": hops, "final": final, "n_hops_ref": len(ref_run["hops_raw"]), "n_hops_ours": len(ours["hops_raw"]),
            **headline(hops, final)}


def headline(hops: list[dict], final: dict) -> dict:
    """Median and min Pearson over the hops and the final scores (constant vectors left out), max |diff|, max |Δρ|."""
    pearsons = [v for v in [h["pearson"] for h in hops] + [final["pearson"]] if v is not None and v == v]
    return {"median_pearson": statistics.median(pearsons), "min_pearson": min(pearsons),
            "max_abs": max([h["max_abs"] for h in hops] + [final["max_abs"]]),
            "max_rho_diff": max(h["rho_diff"] for h in hops)}


# ----------------------------------------------------------------------------------------------------
# orchestration (project environment); the cases and the reference's virtualenv: parity_cases.py
# ----------------------------------------------------------------------------------------------------
def run_group(spec: dict, python: Path, work: Path) -> dict:
    spec_path = work / f"{spec['id']}.spec.json"
    spec_path.write_text(json.dumps(spec))
    ref_out, ours_out = work / f"{spec['id']}.ref.json", work / f"{spec['id']}.ours.json"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env.update(OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    start = time.perf_counter()
    proc = subprocess.run([str(python), str(Path(__file__).resolve()), "--worker", "ref", "--spec", str(spec_path),
                           "--out", str(ref_out)], cwd=work, env=env, capture_output=True, text=True)
    ref_wall = time.perf_counter() - start
    if proc.returncode != 0:
        return {"spec": spec, "error": "reference process failed: " + proc.stderr.strip().splitlines()[-1][:300]}
    ref = json.loads(ref_out.read_text())
    if "error" in ref:
        return {"spec": spec, "ref": ref, "ref_process_s": ref_wall}
    env_ours = dict(env, PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", "ours", "--spec", str(spec_path),
                           "--ref", str(ref_out), "--out", str(ours_out)], cwd=ROOT, env=env_ours, capture_output=True,
                          text=True)
    ours_wall = time.perf_counter() - start
    if proc.returncode != 0:
        return {"spec": spec, "error": "our process failed: " + proc.stderr.strip().splitlines()[-1][:300]}
    ours = json.loads(ours_out.read_text())
    return {"spec": spec, "ref": ref, "ours": ours, "ref_process_s": ref_wall, "ours_process_s": ours_wall}


def summarise(result: dict) -> list[dict]:
    spec, ref, ours = result["spec"], result.get("ref", {}), result.get("ours", {})
    if "error" in result or "error" in ref:
        return [{"case": spec["id"], "group": spec["group"], "aligned": spec["aligned"], "K": k,
                 "error": result.get("error") or ref.get("error")} for k in spec["hops"]]
    n, rows = len(ours["ids"]), []
    n_prompt = sum(1 for i in range(n) if i < ref["prompt_len"])
    user = ref["user_prompt_indices"]
    matched = [ours["ids"][i] for i in user if i < n] == ref["user_prompt_ids"]
    for k in spec["hops"]:
        run = ours["runs"][str(k)]
        row = {"case": spec["id"], "group": spec["group"], "aligned": spec["aligned"], "K": k, "n_tokens": n,
               "ids_match": ours["ids_match"], "user_prompt_located": matched,
               "ref_s": ref["runs"][str(k)]["seconds"], "ours_attr_s": run["seconds"], "ours_forward_s": ours["forward_s"],
               "ref_rss_peak_mb": ref["rss_peak_mb"], "ref_rss_loaded_mb": ref["rss_loaded_mb"],
               "ours_rss_peak_mb": ours["rss_peak_mb"], "ours_rss_loaded_mb": ours["rss_loaded_mb"],
               "mask_differs_at": ours.get("mask_differs_at", [])}
        user_in = [i for i in user if i < n]
        row["public"] = compare(ref["runs"][str(k)], run["public"], n, n_prompt, user_in)
        if "aligned" in run:
            row["engine_aligned"] = compare(ref["runs"][str(k)], run["aligned"], n, n_prompt, user_in)
        rows.append(row)
    return rows


def markdown(rows: list[dict], meta: dict) -> str:
    lines = [f"Reference: `{REFERENCE}` (PyPI) in its own virtualenv; ours: this repository. torch {meta['torch']}, "
             f"transformers {meta['transformers']}, CPU fp32, 1 torch thread per process. Load average "
             f"{meta['load_before']} before and {meta['load_after']} after the run (shared machine: timings are "
             "indicative only). Pearson and max |diff| over every hop's raw vector (all positions) and the final "
             "prompt-side scores; |Δρ| the largest over hops.", "",
             "| case | K | tokens | aligned: median / min Pearson | max abs diff | max Δρ | public API: median "
             "Pearson / max abs diff | public API, user-prompt shares: Pearson / max abs diff | ref s | "
             "ours s (fwd + attr) | ref / ours peak RSS MB |",
             "|---|---:|---:|---|---:|---:|---|---|---:|---:|---:|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['case']} | {r['K']} | | reference failed: {r['error']} | | | | | | | |")
            continue
        e = r.get("engine_aligned")
        p = r["public"]
        aligned = (f"{e['median_pearson']:.8f} / {e['min_pearson']:.8f} | {e['max_abs']:.1e} | {e['max_rho_diff']:.1e}"
                   if e else "ids differ | | ")
        user = p["final"]["user_pearson"]
        user = f"{user:.6f}" if user is not None and user == user else "n/a (all 0)"
        lines.append(f"| {r['case']} | {r['K']} | {r['n_tokens']} | {aligned} | {p['median_pearson']:.6f} / "
                     f"{p['max_abs']:.1e} | {user} / {p['final']['user_max_abs']:.1e} | "
                     f"{r['ref_s']:.2f} | {r['ours_forward_s']:.2f} + {r['ours_attr_s']:.2f} | "
                     f"{r['ref_rss_peak_mb']:.0f} / {r['ours_rss_peak_mb']:.0f} |")
    lines += ["", "Rows `quirk-*` are not aligned on purpose, each to show one difference of the reference (README, "
              "*Agreement with the authors' implementation*): `value-bias-*` keep the `v_proj` bias it ignores; "
              "`epsilon-1e-6` leaves its RMSNorm epsilon at 1e-6; `first-token-match` starts the prompt with `a`, "
              "so it locates the user's tokens in the system line (the user-prompt column compares the tokens it "
              "reports); `punctuation-preset` runs our public API with the old `punctuation` rule; `sdpa` loads "
              "its model with SDPA attention. `tiny-llama-novbias` / `tiny-qwen2-novbias`: value bias set to 0 "
              "on both sides. User-prompt column: the final scores on the reference's user-prompt positions as "
              "shares (sum 1); `n/a (all 0)`: no score reaches the prompt on either side (window of 8)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", choices=["ref", "ours"])
    parser.add_argument("--spec", type=Path)
    parser.add_argument("--ref", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--venv", type=Path, default=VENV, help="where the reference's virtualenv is built (once)")
    parser.add_argument("--quick", action="store_true", help="two short cases only")
    parser.add_argument("--only", default="", help="comma-separated case ids to run")
    parser.add_argument("--report-only", action="store_true", help="rebuild the .md from the committed .json")
    args = parser.parse_args(argv)
    if args.report_only:
        data = json.loads((RESULTS / "parity_reference.json").read_text())
        for row in data["rows"]:
            for key in ("public", "engine_aligned"):
                if key in row:
                    for part in [*row[key]["hops"], row[key]["final"]]:
                        for name in ("pearson", "user_pearson"):
                            if name in part and part[name] is not None and part[name] != part[name]:
                                part[name] = None  # NaN from a constant vector
                    row[key].update(headline(row[key]["hops"], row[key]["final"]))
        (RESULTS / "parity_reference.json").write_text(json.dumps(data, indent=1))
        (RESULTS / "parity_reference.md").write_text(markdown(data["rows"], data["meta"]))
        return 0
    if args.worker == "ref":
        args.out.write_text(json.dumps(ref_worker(json.loads(args.spec.read_text()))))
        return 0
    if args.worker == "ours":
        args.out.write_text(json.dumps(ours_worker(json.loads(args.spec.read_text()), json.loads(args.ref.read_text()))))
        return 0
    import tempfile

    import torch
    import transformers

    python = build_venv(args.venv)
    load_before = os.getloadavg()
    specs = groups(args.quick)
    if args.only:
        specs = [s for s in specs if s["id"] in args.only.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="parity-") as tmp:  # the reference's cwd: outside the repository
        for spec in specs:
            print(f"{spec['id']} ...", flush=True)
            rows.extend(summarise(run_group(spec, python, Path(tmp))))
    meta = {"reference": REFERENCE, "torch": torch.__version__, "transformers": transformers.__version__,
            "load_before": [round(x, 1) for x in load_before], "load_after": [round(x, 1) for x in os.getloadavg()],
            "cpu_count": os.cpu_count(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = "_quick" if args.quick or args.only else ""
    (RESULTS / f"parity_reference{suffix}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    (RESULTS / f"parity_reference{suffix}.md").write_text(markdown(rows, meta))
    print(markdown(rows, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
