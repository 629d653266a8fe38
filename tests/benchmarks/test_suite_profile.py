"""benchmarks/suite_profile.py: the cores' busy share and the time by module, on plain data."""

import pytest

from tests.benchmarks.scripts import load_script

profile = load_script("suite_profile")


def test_busy_share_over_the_samples_and_at_its_edges():
    assert profile.busy_share([(0.0, 100.0), (2.0, 103.6)], cores=2) == pytest.approx(0.9)
    assert profile.busy_share([(0.0, 100.0)], cores=2) is None  # one sample: no interval
    assert profile.busy_share([(2.0, 100.0), (2.0, 100.0)], cores=2) is None  # no time passed
    assert profile.busy_share([(0.0, 100.0), (2.0, 100.0)], cores=2) == 0.0  # all idle


def test_module_seconds_sum_each_tests_start_to_end():
    records = [{"test": "tests/a.py::x", "start": 0.0}, {"test": "tests/a.py::x", "end": 3.0},
               {"event": "engine start", "t": 1.0, "test": "tests/a.py::x (call)", "engine": "vllm", "seconds": 1.0},
               {"test": "tests/a.py::y", "start": 3.0}, {"test": "tests/a.py::y", "end": 4.5},
               {"test": "tests/b.py::z", "start": 0.0}, {"test": "tests/b.py::z", "end": 2.0},
               {"test": "tests/c.py::cut", "start": 5.0}]  # a test still running when the log ends: not counted
    assert profile.module_seconds(records) == {"tests/a.py": 4.5, "tests/b.py": 2.0}
