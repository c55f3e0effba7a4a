"""The CPU kernels are loaded when a CPU model is, not inside the first attribution."""

import subprocess
import sys

import torch

CODE = """
import torch, flashtrace.engine.models, flashtrace.engine.kernels.proximity as k
from flashtrace.engine.attribution import span_aggregate
from flashtrace.engine.kernels.softmax import exp_accumulate
kernels = (k._value_proximity_cpu, exp_accumulate)
print(*[len(f.signatures) for f in kernels])
loaded = flashtrace.engine.models.load_model('tiny-llama')
print(*[len(f.signatures) for f in kernels])
rec = flashtrace.engine.models.record_forward(loaded, torch.arange(3, 40))
w = torch.zeros(37); w[30:] = 1.0
span_aggregate(rec, torch.stack([w, w.flip(0)]))
print(*[len(f.signatures) for f in kernels])
"""


def test_loading_a_cpu_model_loads_the_kernels_an_attribution_uses():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True).stdout
    before, loaded, used = (tuple(map(int, line.split())) for line in out.strip().splitlines()[-3:])
    assert before == (0, 0)
    assert loaded == (1, 1)  # compiled or read from numba's cache at load time
    assert used == loaded  # the attribution found the same signatures: nothing compiled inside it


def _kernel_calls(monkeypatch):
    """Every CPU kernel call from here on: the kernel, whether it ran as the serial twin, and what numba compiles
    a version for (each argument's dtype, dimensions and layout, or its Python type)."""
    from flashtrace.engine.kernels import proximity, softmax
    from flashtrace.engine.models import attention

    calls, real = set(), softmax.run_kernel

    def recording(kernel, *args):
        kinds = tuple((a.dtype.name, a.ndim, a.flags.c_contiguous) if hasattr(a, "dtype") else type(a).__name__
                      for a in args)
        calls.add((kernel.__name__, getattr(softmax._local, "serial", False), kinds))
        return real(kernel, *args)

    for module in (proximity, attention):
        monkeypatch.setattr(module, "run_kernel", recording)
    return calls


def test_the_warm_up_compiles_every_kernel_version_an_attribution_runs(monkeypatch, tiny_llama):
    """In-process: the warm-up calls each kernel, parallel and as its serial twin, with the argument types an
    attribution of a recorded model passes (a version for other types would leave the attribution to compile
    its own)."""
    from flashtrace.engine.kernels import proximity
    from flashtrace.engine.attribution import span
    from flashtrace.engine.models import record_forward

    calls = _kernel_calls(monkeypatch)
    proximity.warm_up()
    warmed = set(calls)
    assert {(name, serial) for name, serial, _ in warmed} == {
        ("_value_proximity_cpu", False), ("_value_proximity_cpu", True), ("exp_accumulate", False),
        ("exp_accumulate", True)}
    calls.clear()
    recording = record_forward(tiny_llama, torch.arange(3, 40))  # keeps the softmax's log-sum-exp: the fused path
    weights = torch.zeros(2, recording.n_tokens)
    weights[0, 30:] = weights[1, 25:32] = 1.0
    before = torch.get_num_threads()
    torch.set_num_threads(2)  # layers run side by side only with two torch threads (a test worker may have one)
    try:
        for threads in (False, True):  # one layer at a time, and layers side by side on serial twins
            span.span_aggregate(recording, weights, layer_threads=threads)
    finally:
        torch.set_num_threads(before)
    assert {(name, serial) for name, serial, _ in calls} == {(name, serial) for name, serial, _ in warmed}
    assert calls <= warmed
