"""Issue 13.9: recording is safe per call (threads recording at once get their own, complete records), and
the app's model lock survives Streamlit's "Clear caches"."""

import threading

import torch

from flashtrace.models import record_forward
from tests.conftest import _load, random_ids


def _same(a, b) -> bool:
    return all(torch.equal(getattr(la, n), getattr(lb, n)) for la, lb in zip(a.layers, b.layers)
               for n in ("x_prev", "x_mid", "q", "k", "v"))


def test_two_threads_recording_at_once_each_get_their_own_pass():
    """Two threads recording the same model (and a second model) used to fail with
    "recording incomplete: ['k', 'q', 'v'] not captured" or mix each other's tensors."""
    llama, gpt2 = _load("tiny-llama"), _load("tiny-gpt2")
    jobs = [(llama, random_ids(40, seed=1)), (llama, random_ids(57, seed=2)), (gpt2, random_ids(33, seed=3))]
    expected = [record_forward(model, ids, keep_mid=True) for model, ids in jobs]
    barrier = threading.Barrier(len(jobs))
    results, errors = {}, []

    def work(i, model, ids):
        barrier.wait()
        try:
            for round_ in range(15):
                results[i, round_] = record_forward(model, ids, keep_mid=True)
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i, *job)) for i, job in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for (i, _), rec in results.items():
        assert rec.n_tokens == expected[i].n_tokens and _same(rec, expected[i])
    assert len(results) == 15 * len(jobs)


def test_the_model_lock_survives_clearing_the_caches():
    import streamlit as st

    from flashtrace import app_state

    lock = app_state.model_lock()
    assert lock.acquire(timeout=10)
    try:
        st.cache_resource.clear()  # what Streamlit's "Clear caches" menu item does
        again = app_state.model_lock()
        assert again is lock and not again.acquire(blocking=False)  # a second run still waits
    finally:
        lock.release()
