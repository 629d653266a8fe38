"""Who used the CPU during a measurement: pure judgements on plain samples."""

import pytest

from llm_adapt.bench import hostload as h
from llm_adapt.bench.hardware import bounded_share
from llm_adapt.bench.load import split_concurrency, split_evenly


def snap(t, host, client, server=0.0):
    return h.CpuSnapshot(t, host, client, server)


def test_interval_takes_the_client_and_server_out_of_the_host():
    step = h.interval(snap(0, 10.0, 1.0, 2.0), snap(2, 13.0, 1.5, 3.0))
    assert step == {"seconds": 2, "host": 1.5, "client": 0.25, "server": 0.5, "other": 0.75}
    assert h.interval(snap(1, 0, 0), snap(1, 5, 0)) is None  # no time passed


def test_a_quiet_host_is_not_busy_and_a_loaded_one_is():
    quiet = [{"seconds": 1, "host": 1.0, "client": 0.2, "server": 0.75, "other": 0.05}] * 4
    busy = quiet[:2] + [{"seconds": 1, "host": 2.0, "client": 0.2, "server": 0.8, "other": 1.0}] * 2
    q, b = h.summarize(quiet, cores=2), h.summarize(busy, cores=2)
    assert q["busy"] is False and q["other_cores_mean"] == pytest.approx(0.05)
    assert b["busy"] is True and b["other_cores_mean"] == pytest.approx(0.525) and b["other_cores_max"] == 1.0
    # the threshold grows with the host: 0.5 core of others on 16 cores is quiet
    assert h.summarize([{"seconds": 1, "host": 3, "client": 1, "server": 1.5, "other": 0.5}], cores=16)["busy"] is False
    assert h.summarize([], cores=2) == {"samples": 0, "cores": 2, "busy": None, "client_bound": None,
                                        "client_processes": 1}


def test_client_bound_is_per_process():
    one = [{"seconds": 1, "host": 1.9, "client": 0.95, "server": 0.9, "other": 0.05}]
    assert h.summarize(one, cores=2)["client_bound"] is True
    assert h.summarize(one, cores=2, client_processes=2)["client_bound"] is False  # 0.475 each


def test_processes_for_spreads_past_half_a_core():
    assert h.processes_for(0.3, 1, 16) == 1
    assert h.processes_for(None, 2, 16) == 2
    assert h.processes_for(0.95, 1, 16) == 2
    assert h.processes_for(0.9, 2, 16) == 4
    assert h.processes_for(2.0, 2, 3) == 3  # never more than the cores


def test_streams_and_concurrency_are_shared_out():
    assert split_evenly(list(range(7)), 3) == [[0, 3, 6], [1, 4], [2, 5]]
    assert split_concurrency(5, 2) == [3, 2] and split_concurrency(None, 3) == [None] * 3
    assert split_concurrency(1, 2) == [1, 0]  # the runner drops a process with nothing to run


def test_a_share_above_the_limit_is_never_given():
    assert bounded_share(50.0, 100.0) == (0.5, None)
    share, why = bounded_share(258.0, 100.0)
    assert share is None and "258%" in why
    assert bounded_share(1.0, 0.0) == (None, "no limit measured")
