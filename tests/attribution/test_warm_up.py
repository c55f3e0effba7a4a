"""The proximity kernel is loaded when a CPU model is, not inside the first attribution."""

import subprocess
import sys


def test_loading_a_cpu_model_loads_the_proximity_kernel():
    code = ("import flashtrace.models, flashtrace.attribution.kernels as k; "
            "before = len(k._proximity_cpu.signatures); flashtrace.models.load_model('tiny-llama'); "
            "print(before, len(k._proximity_cpu.signatures))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    before, after = map(int, out.split()[-2:])
    assert (before, after) == (0, 1)
