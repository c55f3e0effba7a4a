"""Attributions from several Python threads at once (a library user's thread pool, two app sessions):
numba's workqueue layer aborts the whole process on concurrent parallel kernels, so the package runs
them one at a time. Run in a subprocess: the failure this guards against is an abort, not an exception."""

import subprocess
import sys

CODE = """
import threading, torch
from flashtrace.engine.attribution import span_aggregate
from flashtrace.engine.models import record_forward
from tests.conftest import _load, random_ids

rec = record_forward(_load("tiny-llama"), random_ids(300, seed=1))
w = torch.zeros(300); w[200:] = 1.0
expected = span_aggregate(rec, w).scores
errors, done = [], []

def work():
    try:
        for _ in range(20):
            assert torch.equal(span_aggregate(rec, w).scores, expected)
        done.append(1)
    except Exception as exc:
        errors.append(repr(exc))

threads = [threading.Thread(target=work) for _ in range(3)]
for t in threads: t.start()
for t in threads: t.join()
print("done", len(done), "errors", errors)
"""


def test_three_threads_attributing_at_once_finish_with_the_same_scores():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "done 3 errors []"
