"""benchmarks/suite_profile.py: the host's busy share and the time by module, on plain data."""

from tests.benchmarks.scripts import load_script

profile = load_script("suite_profile")


def test_busy_and_idle_jiffies_from_proc_stat():
    stat = "cpu  100 5 20 300 10 1 2 3 0 0\ncpu0 50 2 10 150 5 0 1 1 0 0\n"
    assert profile.cpu_jiffies(stat) == (100 + 5 + 20 + 1 + 2 + 3, 300 + 10)


def test_busy_share_over_the_samples_and_at_its_edges():
    assert profile.busy_share([(0.0, 100, 100), (2.0, 190, 110)]) == 0.9
    assert profile.busy_share([(0.0, 100, 100)]) is None  # one sample: no interval
    assert profile.busy_share([(0.0, 100, 100), (2.0, 100, 100)]) is None  # no jiffies passed
    assert profile.busy_share([(0.0, 0, 0), (2.0, 0, 50)]) == 0.0  # all idle


def test_module_seconds_sum_each_tests_start_to_end():
    records = [{"test": "tests/a.py::x", "start": 0.0}, {"test": "tests/a.py::x", "end": 3.0},
               {"event": "engine start", "t": 1.0, "test": "tests/a.py::x (call)", "engine": "vllm", "seconds": 1.0},
               {"test": "tests/a.py::y", "start": 3.0}, {"test": "tests/a.py::y", "end": 4.5},
               {"test": "tests/b.py::z", "start": 0.0}, {"test": "tests/b.py::z", "end": 2.0},
               {"test": "tests/c.py::cut", "start": 5.0}]  # a test still running when the log ends: not counted
    assert profile.module_seconds(records) == {"tests/a.py": 4.5, "tests/b.py": 2.0}
