"""The CPU kernels are loaded when a CPU model is, not inside the first attribution."""

import subprocess
import sys

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
