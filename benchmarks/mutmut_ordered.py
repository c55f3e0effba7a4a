"""``python benchmarks/mutmut_ordered.py <mutmut arguments>``: mutmut 3, with each mutant's tests run fastest
first (by the durations mutmut measured when it collected its stats), so a killed mutant fails in the first
tests instead of after a slow property test. `benchmarks/mutation.py` runs mutmut through it."""

import sys

from mutmut import __main__ as mutmut_cli
from mutmut.state import state

_runner = mutmut_cli.get_mutant_runner


def _fastest_first(*args, **kwargs):
    runner = _runner(*args, **kwargs)
    submit = runner.submit

    def ordered(name, tests, cpu_time_limit, estimated_time):
        durations = state().duration_by_test
        submit(name, sorted(tests, key=lambda t: (durations.get(t, 0.0), t)), cpu_time_limit, estimated_time)

    runner.submit = ordered
    return runner


if __name__ == "__main__":
    mutmut_cli.get_mutant_runner = _fastest_first
    sys.argv[0] = "mutmut"
    mutmut_cli.cli()
