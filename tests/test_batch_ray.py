"""`flashtrace batch --ray` on a local 2-CPU Ray cluster: same traces as the serial loop, workers that
die are replaced and their example retried (bounded), results written once by the driver."""

import json

import pytest
import ray  # the dev extra installs it (`make setup`): a missing Ray fails here, it is not skipped

from flashtrace.run.batch import BatchSettings, run_batch
from flashtrace.run.distributed import RayPool

from .batch_helpers import Flaky, assert_same_traces, traces, write_input

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def cluster(ray_lock):
    """A local cluster for this module's tests, started and stopped while holding the suite's Ray lock."""
    with ray_lock:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        yield
        ray.shutdown()


def test_ray_batch_equals_serial_with_a_worker_killed(tmp_path, cluster, monkeypatch):
    """8 examples on 2 workers; the worker tracing ex3 dies the first time: it is replaced, ex3 is retried,
    every example ends done, once, and all traces equal the serial run's to 1e-6."""
    src = write_input(tmp_path / "in.jsonl", n=8)
    settings = BatchSettings(model="tiny-llama")
    serial = run_batch(src, tmp_path / "serial", settings)
    monkeypatch.setenv("FLASHTRACE_TEST_KILL_ONCE", "ex3")
    monkeypatch.setenv("FLASHTRACE_TEST_KILL_MARK", str(tmp_path / "killed"))
    distributed = run_batch(src, tmp_path / "ray", settings, ray_address="auto", workers=2)
    assert (tmp_path / "killed.ex3").exists()  # the worker really died on it
    by_title = {r["title"]: r for r in distributed.records}
    assert by_title["ex3"]["attempts"] == 2
    assert serial.count("done") == distributed.count("done") == 8 and distributed.ok
    assert_same_traces(traces(tmp_path / "serial"), traces(tmp_path / "ray"), atol=1e-6)
    summary = json.loads((tmp_path / "ray" / "_batch" / "summary.json").read_text())
    assert summary["run"]["mode"] == "ray" and summary["run"]["workers"] == 2
    again = run_batch(src, tmp_path / "ray", settings, ray_address="auto", workers=2)
    assert again.count("skipped") == 8 and again.count("done") == 0


def test_pool_retries_are_bounded_and_results_stream_once(cluster):
    pool = RayPool(Flaky, (), address="auto", workers=2, max_retries=1)
    try:
        results = list(pool.map([1, "die", 2, "raise", 3, 4]))
    finally:
        pool.close()
    by_job = {str(job): (out, attempts) for job, out, attempts in results}
    assert len(results) == 6 and len(by_job) == 6  # every job reported exactly once
    assert [by_job[str(i)][0]["value"] for i in (1, 2, 3, 4)] == [2, 4, 6, 8]
    assert by_job["die"][1] == 2 and "worker died 2 times" in by_job["die"][0]["error"]
    assert "worker raised" in by_job["raise"][0]["error"] and by_job["raise"][1] == 1  # not retried
    assert pool.replaced == 2


def _eval(out, *extra):
    from flashtrace.cli import main

    return main(["eval", "--model", "tiny-llama", "--task", "needle,arithmetic", "--n", "2", "--length", "40",
                 "--methods", "flashtrace-k1,attention", "--k", "4", "--out", str(out), "--no-progress", "--no-plots",
                 *extra])


def test_eval_ray_equals_serial_retries_and_resumes(tmp_path, cluster, monkeypatch):
    assert _eval(tmp_path / "serial") == 0
    monkeypatch.setenv("FLASHTRACE_TEST_KILL_ONCE", "needle-0001")
    monkeypatch.setenv("FLASHTRACE_TEST_KILL_MARK", str(tmp_path / "killed"))
    assert _eval(tmp_path / "ray", "--ray", "auto", "--workers", "2") == 0
    assert (tmp_path / "killed.needle-0001").exists()
    names = ["arithmetic-0000.json", "arithmetic-0001.json", "needle-0000.json", "needle-0001.json"]
    for name in names:
        a = json.loads((tmp_path / "serial" / "examples" / name).read_text())
        b = json.loads((tmp_path / "ray" / "examples" / name).read_text())
        for method in ("flashtrace-k1", "attention"):
            ma, mb = a["methods"][method], b["methods"][method]
            for key in ("rise", "mas", "recovery"):
                assert abs(ma[key] - mb[key]) <= 1e-6, (name, method, key)
            assert max(abs(x - y) for x, y in zip(ma["scores"], mb["scores"])) <= 1e-6
    examples = tmp_path / "ray" / "examples"
    (examples / "needle-0000.json").unlink()  # as if the run had been interrupted before it
    stamps = {p.name: p.stat().st_mtime_ns for p in examples.glob("*.json")}
    assert _eval(tmp_path / "ray", "--ray", "auto", "--workers", "2") == 0
    assert sorted(p.name for p in examples.glob("*.json")) == names
    assert all((examples / n).stat().st_mtime_ns == t for n, t in stamps.items())  # finished ones not recomputed
